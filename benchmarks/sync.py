"""One corpus sync against a full ingest: how long does `kgplus sync` take when 1% of the documents changed?

Target (issue 40 item 3): a sync of 1% changed documents on a big corpus takes under 5% of a full ingest's time.

Corpus: the 120 passages of the bundled multi-hop sample (``SAMPLE_MULTIHOP_DOCS``), repeated to ``--docs``
documents, each copy with its own id and a numbered sentence (so no two texts embed alike and no embedding is
shared). The baseline is ``kgplus ingest`` of the changed corpus into a new folder (the only other way to bring an
index up to date), run in the same process with the same settings; the sync is ``kgplus sync`` of the changed
corpus into a copy of the index of the original one. ``--changed`` documents (default 1%) are changed: a third
of them deleted, a third edited, a third added. No embedding cache (``$KGPLUS_EMBED_CACHE`` is ignored).

    .venv/bin/python benchmarks/sync.py [--docs 1200] [--changed 0.01] [--vector-store simple|lancedb] [--full]

``--full`` ingests with ``--entities titles --hierarchy semantic --summarizer extractive`` (no LLM), so the sync
also relinks the entity graph and rebuilds the summaries.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from llama_index_kgplus.cli import main
from llama_index_kgplus.sample import SAMPLE_MULTIHOP_DOCS


def corpus(n: int) -> list[dict]:
    base = [json.loads(line) for line in SAMPLE_MULTIHOP_DOCS.read_text(encoding="utf-8").splitlines()]
    return [
        {
            "id": f"{base[i % len(base)]['id']} #{i}",
            "title": base[i % len(base)]["title"],
            "text": f"{base[i % len(base)]['text']} This is copy number {i} of the passage.",
        }
        for i in range(n)
    ]


def changed(rows: list[dict], share: float) -> list[dict]:
    k = max(3, round(len(rows) * share))
    step = len(rows) // k
    picked = [rows[i * step]["id"] for i in range(k)]
    gone, edited = set(picked[: k // 3]), set(picked[k // 3 : 2 * k // 3])
    out = [dict(r, text=r["text"] + " Edited since.") if r["id"] in edited else r for r in rows if r["id"] not in gone]
    extra = corpus(len(rows) + (k - 2 * (k // 3)))[len(rows) :]
    return out + extra


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def timed(args: list[str]) -> tuple[float, str]:
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        status = main(args)
    if status:
        raise SystemExit(f"kgplus {' '.join(args)} failed ({status})")
    return time.perf_counter() - started, out.getvalue()


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1200)
    parser.add_argument("--changed", type=float, default=0.01)
    parser.add_argument("--vector-store", choices=("simple", "lancedb"), default="simple")
    parser.add_argument("--full", action="store_true", help="entity graph and semantic summaries too")
    args = parser.parse_args()
    os.environ.pop("KGPLUS_EMBED_CACHE", None)
    settings = ["--vector-store", args.vector_store]
    if args.full:
        settings += ["--entities", "titles", "--hierarchy", "semantic", "--summarizer", "extractive"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        v1 = write(folder / "v1.jsonl", corpus(args.docs))
        v2 = write(folder / "v2.jsonl", changed(corpus(args.docs), args.changed))
        timed(["ingest", str(v1), "--index", str(folder / "warm"), *settings])  # loads the model once, untimed
        shutil.rmtree(folder / "warm")
        ingest_v1, _ = timed(["ingest", str(v1), "--index", str(folder / "synced"), *settings])
        full, _ = timed(["ingest", str(v2), "--index", str(folder / "fresh"), *settings])
        sync, out = timed(["sync", str(v2), "--index", str(folder / "synced"), "--json", "--quiet"])
        report = json.loads(out.strip().splitlines()[-1])
    print(f"corpus: {args.docs} documents; changed: {len(report['added'])} added, {len(report['updated'])} updated, "
          f"{len(report['deleted'])} deleted; store {args.vector_store}{', entities + semantic summaries' if args.full else ''}")  # fmt: skip
    print(f"full ingest of the changed corpus (baseline): {full:8.1f} s   (of the original: {ingest_v1:.1f} s)")
    print(f"kgplus sync:                                  {sync:8.1f} s   = {100 * sync / full:.1f}% of the ingest")
    print(f"sync wrote {report['nodes_written']} nodes, deleted {report['nodes_deleted']}, embedded "
          f"{report['texts_embedded']} texts, summaries written {report['summaries_written']} / reused "
          f"{report['summaries_reused']}")  # fmt: skip


if __name__ == "__main__":
    run()
