"""Issue 40's goal figures as a user meets them: `kgplus ingest` of N passages and `kgplus retrieve` of one question
(start-up included) on the JSON default and on `--vector-store lancedb`.

Baseline: the JSON default (`SimpleVectorStore` + `SimpleDocumentStore`), the pack's store until issue 40. The
embedding is a stand-in (hashed words projected to 384 dimensions, unit length; `stand_in_embedding`), so that the
pack's own cost shows apart from the model's (the real model embeds 100-155 passages/s here). Passages are the
~100-word windows of `scale_stores.py` over the shared SQuAD and 2Wiki texts, one document each. Every command runs
in a fresh process, as a user runs it; the page cache is left warm (the files were just written or read), so the
open times are warm-cache times.

Usage::

    PYTHONPATH=. nice -n 19 python benchmarks/scale.py run --n 10000 --store simple lancedb
    python benchmarks/scale.py table          # the rows recorded so far, as markdown
    PYTHONPATH=. nice -n 19 python benchmarks/scale.py structure --n 100000   # entity graph + hierarchy at N chunks
    PYTHONPATH=. python benchmarks/scale.py dense --index WORK/index-lancedb-100000 --corpus corpus-100000.jsonl
                                              # top-8 latency and recall@8 against exact search through the pack

Rows go to `--work`/scale-results.jsonl; indexes to `--work`/index-STORE-N (removed with `--clean`).

`structure` measures the multi-hop and hierarchy goal: `kgplus ingest --vector-store lancedb --entities titles
--hierarchy semantic --summarizer extractive` (no LLM call) of documents made of four consecutive passages of the
shared 2Wiki and MuSiQue corpora (2,670 passages with their titles, repeated until the chunks reach N; a document is
titled by its first passage, so the title dictionary holds the 2,670 real names and the links are the corpora's own
mentions), then, in one fresh process, the entity-graph walk (`EntityGraphRetriever.from_persist_dir`) and the
hierarchy's evidence retrieval (`HierarchicalRetriever`, mode evidence), top-8, over 100 questions (the first
sentence of random passages), after one warm-up question each. Rows go to `--work`/structure-results.jsonl.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DIM = 384
QUESTIONS = [
    "Who was the father of Lothair II?",
    "When was the university founded and by whom?",
    "What is the capital city of the region?",
]


def stand_in_embedding():  # noqa: ANN201 - a `module:factory` model spec
    """The benchmark's embedding model: hashed words, a fixed random projection, unit length."""
    from llama_index.core.embeddings import BaseEmbedding

    rng = np.random.default_rng(0)
    table = rng.standard_normal((1 << 14, DIM)).astype(np.float32)

    class HashProjection(BaseEmbedding):
        """Stand-in for a sentence embedding: texts sharing words are close."""

        def _vector(self, text: str) -> list[float]:
            rows = [int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "little") & 0x3FFF
                    for w in text.lower().split()]  # fmt: skip
            v = table[rows].sum(axis=0) if rows else table[0]
            return (v / (np.linalg.norm(v) or 1.0)).tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._vector(text)

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return [self._vector(t) for t in texts]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._vector(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._vector(query)

    return HashProjection(model_name="hash-projection-384", embed_batch_size=256)


def write_corpus(path: Path, n: int) -> Path:
    from scale_stores import passages

    if path.is_file() and sum(1 for _ in path.open()) == n:
        return path
    with path.open("w", encoding="utf-8") as out:
        for start in range(0, n, 10_000):
            for i, text in enumerate(passages(start, min(10_000, n - start)), start):
                out.write(json.dumps({"id": f"p{i}", "title": f"p{i}", "text": text}) + "\n")
    return path


def child_env() -> dict[str, str]:
    """The environment of the benchmark's child processes: the stand-in embedding and this folder importable."""
    return {
        **os.environ,
        "KGPLUS_EMBED_MODEL": "scale:stand_in_embedding",
        "PYTHONPATH": f"{HERE}:{os.environ.get('PYTHONPATH', '')}",
        # as after a pip install, which compiles every package: where the machine sets PYTHONDONTWRITEBYTECODE
        # and the venv holds no bytecode (uv's install), every start-up compiled its imports (+3 s per command)
        "PYTHONDONTWRITEBYTECODE": "",
    }


def kgplus(*args: str) -> tuple[float, float, str]:
    """Wall seconds, peak RSS MB of the child and stdout of one `kgplus` command in a fresh process."""
    env = child_env()
    cmd = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "llama_index_kgplus.cli", *args]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"kgplus {' '.join(args)} failed: {done.stderr[-2000:]}")
    rss_mb = int(done.stderr.strip().splitlines()[-1]) / 1024
    return wall, rss_mb, done.stdout


def du_mb(path: Path) -> float:
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file()) / 2**20


def docstore_mb(index: Path) -> float:
    """The docstore's size: LlamaIndex's docstore.json, or the SQLite files of a LanceDB folder (`docstore/`)."""
    if (index / "docstore.json").is_file():
        return (index / "docstore.json").stat().st_size / 2**20
    return du_mb(index / "docstore")


def embedding_alone_s(corpus: Path) -> float:
    """Seconds of the ingest's embedding step alone: the stand-in embedding of every chunk's text, as the ingest
    embeds it (the pack's default splitter; reading and splitting not timed)."""
    from llama_index.core.schema import MetadataMode

    from llama_index_kgplus import load_corpus
    from llama_index_kgplus._indexing import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
    from llama_index_kgplus._text import sentence_splitter

    splitter, model, seconds = sentence_splitter(DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP), stand_in_embedding(), 0.0
    docs = iter(load_corpus(corpus, stream=True))
    while batch := list(itertools.islice(docs, 10_000)):  # in slices: 10^6 chunks' vectors as lists fill ~15 GB
        texts = [node.get_content(metadata_mode=MetadataMode.EMBED) for node in splitter(batch)]
        start = time.perf_counter()
        model.get_text_embedding_batch(texts)
        seconds += time.perf_counter() - start
    return seconds


def run(a: argparse.Namespace) -> None:
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    for n in a.n:
        corpus = write_corpus(work / f"corpus-{n}.jsonl", n)
        embed_s = embedding_alone_s(corpus)
        for store in a.store:
            index = work / f"index-{store}-{n}"
            shutil.rmtree(index, ignore_errors=True)
            ingest_s, ingest_rss, _ = kgplus("ingest", str(corpus), "--index", str(index), "--vector-store", store)
            times, rss = [], []
            for question in QUESTIONS[: a.repeats]:
                wall, peak, out = kgplus("retrieve", question, "--index", str(index), "--json", "--top-k", "8")
                assert len(json.loads(out)["sources"]) == 8
                times.append(wall)
                rss.append(peak)
            row = {
                "n": n, "store": store, "ingest_s": round(ingest_s, 1), "ingest_rss_mb": round(ingest_rss),
                "embed_s": round(embed_s, 1),
                "disk_mb": round(du_mb(index), 1),
                "docstore_mb": round(docstore_mb(index), 1),
                "retrieve_s": [round(t, 2) for t in times], "retrieve_median_s": round(statistics.median(times), 2),
                "retrieve_rss_mb": round(max(rss)), "date": time.strftime("%Y-%m-%d"),
            }  # fmt: skip
            print(json.dumps(row), flush=True)
            with (work / "scale-results.jsonl").open("a", encoding="utf-8") as out:
                out.write(json.dumps(row) + "\n")
            if a.clean:
                shutil.rmtree(index, ignore_errors=True)


def write_structured_corpus(path: Path, n_chunks: int) -> Path:
    """Documents of four consecutive real passages (2Wiki, then MuSiQue), titled by the first, until about
    ``n_chunks`` chunks."""
    if path.is_file():
        return path
    from scale_stores import BENCH_DATA

    passages = [json.loads(line) for name in ("multihop-2wiki/corpus.jsonl", "multihop-musique/corpus.jsonl")
                for line in (BENCH_DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]  # fmt: skip
    with path.open("w", encoding="utf-8") as out:
        for j in range(round(n_chunks / 1.55)):  # 1.55 chunks per document at the default chunk size
            group = [passages[(4 * j + k) % len(passages)] for k in range(4)]
            text = "\n\n".join(p["text"] for p in group)
            out.write(json.dumps({"id": f"d{j}", "title": group[0]["title"], "text": text}) + "\n")
    return path


_QUERY_TIMES = """
import json, random, statistics, sys, time
from llama_index_kgplus import EntityGraphRetriever, HierarchicalRetriever, load_index
from scale import stand_in_embedding

folder, corpus = sys.argv[1], sys.argv[2]
texts = [json.loads(line)["text"] for line in open(corpus, encoding="utf-8")]
questions = [t.split(". ")[0] for t in random.Random(0).sample(texts, 101)]
embed_model = stand_in_embedding()
start = time.perf_counter()
graph = EntityGraphRetriever.from_persist_dir(folder, embed_model=embed_model, similarity_top_k=8)
hierarchy = HierarchicalRetriever.from_index(load_index(folder, embed_model=embed_model), mode="evidence", similarity_top_k=8)
row = {"open_s": round(time.perf_counter() - start, 2)}
for name, retriever in (("graph", graph), ("evidence", hierarchy)):
    retriever.retrieve(questions[0])
    times = []
    for q in questions[1:]:
        t = time.perf_counter()
        assert retriever.retrieve(q)
        times.append(1000 * (time.perf_counter() - t))
    times.sort()
    row[name] = {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(times[94], 1)}
print(json.dumps(row))
"""


def structure(a: argparse.Namespace) -> None:
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    script = work / "query_times.py"
    script.write_text(_QUERY_TIMES, encoding="utf-8")
    for n in a.n:
        corpus = write_structured_corpus(work / f"corpus-structured-{n}.jsonl", n)
        index = work / f"index-structured-{n}"
        shutil.rmtree(index, ignore_errors=True)
        ingest_s, ingest_rss, out = kgplus(
            "ingest", str(corpus), "--index", str(index), "--vector-store", "lancedb", "--entities", "titles",
            "--hierarchy", "semantic", "--summarizer", "extractive",
        )  # fmt: skip
        done = subprocess.run([sys.executable, str(script), str(index), str(corpus)], capture_output=True, text=True,
                              env=child_env())  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"query timing failed: {done.stderr[-2000:]}")
        row = {
            "n": n, "ingest_s": round(ingest_s, 1), "ingest_rss_mb": round(ingest_rss), "disk_mb": round(du_mb(index), 1),
            "ingest_out": out.strip().splitlines()[-3:], **json.loads(done.stdout.strip().splitlines()[-1]),
            "date": time.strftime("%Y-%m-%d"),
        }  # fmt: skip
        print(json.dumps(row), flush=True)
        with (work / "structure-results.jsonl").open("a", encoding="utf-8") as results:
            results.write(json.dumps(row) + "\n")


def dense(a: argparse.Namespace) -> None:
    """Top-8 dense retrieval through the pack's store of built indexes, in this process: p50 / p95 over 100
    questions (10 words of a random passage each, after one warm-up), and recall@8 against exact search over every
    stored vector (the ANN index with the store's ``nprobes``, ``refine_factor`` and ``ef``, or each value given,
    against brute force). A hit counts when its exact score reaches the exact 8th best, so that passages repeated
    in a corpus count once as found."""
    import random

    from llama_index_kgplus import load_index

    if a.model == "default":
        from llama_index_kgplus.llm import embed_model_from_spec

        model = embed_model_from_spec()
    else:
        model = stand_in_embedding()
    for folder in a.index:
        corpus = [json.loads(line)["text"] for line in (Path(folder) / ".." / a.corpus).resolve().open()]
        rng = random.Random(0)
        questions = [" ".join(t.split()[1:11]) for t in rng.sample(corpus, 101)]
        start = time.perf_counter()
        index = load_index(folder, embed_model=model)
        retriever = index.as_retriever(similarity_top_k=8)
        retriever.retrieve(questions[0])
        open_s = time.perf_counter() - start
        store = index.vector_store
        for nprobes, refine_factor, ef in itertools.product(
            a.nprobes or [store.nprobes], a.refine_factor or [store.refine_factor], a.ef or [store.ef]
        ):
            store.nprobes, store.refine_factor, store.ef = nprobes, refine_factor, ef
            _dense_row(a, folder, index, retriever, model, questions, open_s)


def _dense_row(
    a: argparse.Namespace, folder: str, index: Any, retriever: Any, model: Any, questions: list[str], open_s: float
) -> None:
    times, found = [], []
    for q in questions[1:]:
        t = time.perf_counter()
        hits = retriever.retrieve(q)
        times.append(1000 * (time.perf_counter() - t))
        found.append([h.node.node_id for h in hits])
    times.sort()
    table = index.vector_store.table.to_lance()
    queries = np.array([model.get_query_embedding(q) for q in questions[1:]], dtype=np.float32)
    best = np.full((len(queries), 8), -np.inf, dtype=np.float32)
    hit_scores = np.full((len(queries), 8), -np.inf, dtype=np.float32)  # the exact scores of the hits
    where: dict[str, list[tuple[int, int]]] = {}
    for i, hits in enumerate(found):
        for j, node_id in enumerate(hits):
            where.setdefault(node_id, []).append((i, j))
    for batch in table.to_batches(columns=["id", "vector"], batch_size=65_536):
        vectors = batch.column("vector").flatten().to_numpy().reshape(len(batch), DIM)
        scores = queries @ vectors.T
        best = -np.sort(-np.concatenate([best, scores], axis=1), axis=1)[:, :8]
        for row, node_id in enumerate(batch.column("id").to_pylist()):
            if node_id in where:
                for i, j in where[node_id]:
                    hit_scores[i, j] = scores[i, row]
    recall = float(np.mean(hit_scores >= best[:, 7:] - 1e-5))
    row = {
        "index": str(folder), "rows": table.count_rows(), "ann_index": index.vector_store.has_ann_index(),
        "refine_factor": index.vector_store.refine_factor, "ef": index.vector_store.ef,
        "nprobes": index.vector_store.nprobes, "model": a.model, "open_and_first_s": round(open_s, 2),
        "p50_ms": round(statistics.median(times), 1), "p95_ms": round(times[94], 1),
        "recall_at_8": round(recall, 3), "date": time.strftime("%Y-%m-%d"),
    }  # fmt: skip
    print(json.dumps(row), flush=True)
    with (Path(a.work) / "dense-results.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def table(a: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in (Path(a.work) / "scale-results.jsonl").read_text().splitlines()]
    print("| N | store | ingest s (embedding alone s, ratio) | ingest peak RSS MB | disk MB (docstore) | `kgplus retrieve` s, median (each run) | retrieve peak RSS MB |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        each = " / ".join(f"{t:.2f}" for t in r["retrieve_s"])
        embed = f" ({r['embed_s']:,}, {r['ingest_s'] / r['embed_s']:.2f}x)" if r.get("embed_s") else ""
        print(f"| {r['n']:,} | {r['store']} | {r['ingest_s']:,}{embed} | {r['ingest_rss_mb']:,} | {r['disk_mb']:,} ({r['docstore_mb']:,}) | {r['retrieve_median_s']} ({each}) | {r['retrieve_rss_mb']:,} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--n", type=int, nargs="+", default=[10_000])
    r.add_argument("--store", nargs="+", default=["simple", "lancedb"], choices=["simple", "lancedb"])
    r.add_argument("--clean", action="store_true")
    r.add_argument("--repeats", type=int, default=3, choices=[1, 2, 3], help="questions asked, one process each")
    st = sub.add_parser("structure")
    st.add_argument("--n", type=int, nargs="+", default=[100_000], help="chunks")
    de = sub.add_parser("dense")
    de.add_argument("--index", nargs="+", required=True, help="index folders of `run`")
    de.add_argument("--corpus", required=True, help="the corpus file, relative to each index's parent folder")
    de.add_argument(
        "--ef", type=int, nargs="*", help="the store's ef values to measure (1: the candidates it re-ranks, 80)"
    )
    de.add_argument("--nprobes", type=int, nargs="*", help="the store's nprobes values to measure (IVF partitions)")
    de.add_argument("--refine-factor", type=int, nargs="*", help="the store's refine_factor values to measure")
    de.add_argument("--model", default="stand-in", choices=["stand-in", "default"], help="the index's embedding")
    for p in (r, st, de, sub.add_parser("table")):
        p.add_argument("--work", default=os.environ.get("KGPLUS_SCALE_WORK", "/work/wt40-cache/pack"))
    a = ap.parse_args()
    {"run": run, "structure": structure, "dense": dense, "table": table}[a.cmd](a)


if __name__ == "__main__":
    main()
