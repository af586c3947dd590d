"""The distributed path against the in-process ingest, on one machine: LlamaIndex's ``RayIngestionPipeline`` (a
local Ray instance with ``--cpus`` CPUs) and LlamaIndex's ``IngestionPipeline`` in this process, both splitting,
embedding (the pack's default model) and reading entities (``ner``) over the same documents, in that order.

Each Ray batch links the names its own passages read; as in ``docs/scale.md``, the driver then matches the corpus'
dictionary over every chunk (``EntityLinker.relink``, nothing read again), which the Ray time includes. The
dictionary takes the first spelling of a name it meets, so the chunks are put back in corpus order first.

Corpus: the passages of the shared multi-hop sets (2Wiki, then MuSiQue), ``--docs`` of them. Reported per path:
wall time, passages per second, the driver's peak RSS while it ran (sampled every 50 ms; Ray's workers are other
processes and are not counted) and whether both give the same chunks and links.

    .venv/bin/python benchmarks/ray_ingest.py [--docs 2670] [--cpus 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kg_common import BENCH  # noqa: E402

CHUNKS = {"chunk_size": 384, "chunk_overlap": 32}


class PeakRSS:
    """The process's peak resident memory while the ``with`` block runs (sampled)."""

    def __enter__(self) -> PeakRSS:
        import psutil

        self._process, self.peak_mb, self._stop = psutil.Process(), 0.0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak_mb = max(self.peak_mb, self._process.memory_info().rss / 2**20)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def documents(n: int):
    from llama_index.core import Document

    records = [json.loads(line) for name in ("multihop-2wiki", "multihop-musique")
               for line in (BENCH / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]  # fmt: skip
    return [Document(id_=f"p{i}", text=r["text"], metadata={"title": r["title"]}) for i, r in enumerate(records[:n])]


def links(nodes, field: str = "id") -> dict[tuple[str | None, str], list[str]]:
    """Each chunk's linked entities, by key (``id``) or by display name (``name``: the first spelling seen, which
    depends on the order the chunks come in)."""
    return {(n.ref_doc_id, n.get_content()): sorted(e[field] for e in n.metadata.get("entities") or []) for n in nodes}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2670)
    parser.add_argument("--cpus", type=int, default=2)
    args = parser.parse_args()

    import ray
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.ingestion.ray import RayIngestionPipeline, RayTransformComponent

    from llama_index_kgplus import EntityLinker
    from llama_index_kgplus.llm import embed_model_from_spec

    docs = documents(args.docs)
    embed_model = embed_model_from_spec()
    rows = {}

    with PeakRSS() as rss:
        start = time.perf_counter()
        local = IngestionPipeline(
            transformations=[SentenceSplitter(**CHUNKS), embed_model, EntityLinker.from_defaults(["ner"])]
        ).run(documents=docs)
        rows["in process (IngestionPipeline)"] = (time.perf_counter() - start, rss)

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        with PeakRSS() as rss:
            start = time.perf_counter()
            nodes = RayIngestionPipeline(
                transformations=[
                    RayTransformComponent(SentenceSplitter, **CHUNKS),
                    RayTransformComponent(
                        type(embed_model), map_batches_kwargs={"batch_size": 64, "concurrency": args.cpus}
                    ),
                    RayTransformComponent(EntityLinker, sources=["ner"], map_batches_kwargs={"batch_size": 64}),
                ]
            ).run(documents=docs)
            position = {doc.doc_id: i for i, doc in enumerate(docs)}  # Ray returns batches as they finish
            nodes.sort(key=lambda n: (position[n.ref_doc_id], n.start_char_idx or 0))
            EntityLinker.from_defaults(["ner"]).relink(nodes, unread=())  # the corpus' dictionary, on the driver
            rows[f"Ray Data, local instance of {args.cpus} CPUs (RayIngestionPipeline, then relink)"] = (
                time.perf_counter() - start,
                rss,
            )
    finally:
        ray.shutdown()

    same = links(nodes) == links(local)
    names = sum(a != b for a, b in zip(*(sorted(links(n, "name").items()) for n in (nodes, local))))
    print(f"\n{len(docs):,} passages, {len(local):,} chunks; {os.cpu_count()} cores; same chunks and links: {same} "
          f"(chunks whose entities' display names differ: {names})\n")  # fmt: skip
    print("| path | s | passages / s | driver peak RSS MB |")
    print("|---|---|---|---|")
    for name, (seconds, peak) in rows.items():
        print(f"| {name} | {seconds:.1f} | {len(docs) / seconds:.1f} | {peak.peak_mb:,.0f} |")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
