"""The two local embedding backends side by side, in one process: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime
(``all-MiniLM-L6-v2-onnx-int8``, the default) and on sentence-transformers (``all-MiniLM-L6-v2-sbert``, torch).

Printed, for each backend:

1. **Speed**: embeddings per second over the 780 2WikiMultihopQA passages (``get_text_embedding_batch`` in the
   model's batches of 10, as ``build_index`` calls it), wall and per CPU-second, in alternating rounds (the machine
   is shared, so the rounds show how much the load moved), after one warm-up batch;
2. **Agreement** of the ONNX vectors with sentence-transformers' on the same passages (cosine, min / mean) and the
   overlap of their top-8 passages for the 51 questions;
3. **Retrieval figures that need no LLM**, each built from scratch with that backend: multi-hop
   all-evidence@8 / recall@8 on the 51 2WikiMultihopQA questions (vector search, the entity graph with the
   ``titles`` and ``ner`` sources; ``multihop_2wiki.py``), hit@8 on single-hop SQuAD questions
   (``multihop_2wiki.single_hop``), and the zero-LLM router's accuracy on the 105 routing questions
   (``routing.py``).

    .venv/bin/python benchmarks/embedding_backends.py [--rounds 3] [--tables speed,multihop,squad,routing]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from multihop_2wiki import DATA, TOP_K, build, evaluate, load_data, single_hop  # noqa: E402

BACKENDS = ("all-MiniLM-L6-v2-onnx-int8", "all-MiniLM-L6-v2-sbert")


def passages() -> list[str]:
    records = [json.loads(line) for line in (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return [f"title: {r['title']}\n\n{r['text']}" for r in records]  # as build_index embeds them (title metadata)


def speed(models: dict, texts: list[str], rounds: int) -> dict:
    for model in models.values():
        model.get_text_embedding_batch(texts[:32])  # warm-up: the first call allocates
    results = {name: {"wall": [], "cpu": []} for name in models}
    for _ in range(rounds):
        for name, model in models.items():
            cpu, wall = time.process_time(), time.perf_counter()
            model.get_text_embedding_batch(texts)
            results[name]["wall"].append(len(texts) / (time.perf_counter() - wall))
            results[name]["cpu"].append(len(texts) / (time.process_time() - cpu))
    batches = "/".join(sorted({str(m.embed_batch_size) for m in models.values()}))
    print(f"\n## Speed: {len(texts)} passages, batches of {batches}, {rounds} alternating rounds\n")
    print("| backend | embeddings/s, wall (each round) | median | per CPU-second (median) |")
    print("|---|---|---|---|")
    for name, r in results.items():
        rounds_text = ", ".join(f"{x:.1f}" for x in r["wall"])
        print(f"| {name} | {rounds_text} | {statistics.median(r['wall']):.1f} | {statistics.median(r['cpu']):.1f} |")
    return results


def agreement(models: dict, texts: list[str]) -> None:
    onnx, sbert = (np.asarray(models[name].get_text_embedding_batch(texts)) for name in BACKENDS)
    cosines = (onnx * sbert).sum(axis=1) / np.linalg.norm(onnx, axis=1) / np.linalg.norm(sbert, axis=1)
    _, questions = load_data(False)
    q_onnx, q_sbert = (
        np.asarray([models[name].get_query_embedding(q["question"]) for q in questions]) for name in BACKENDS
    )
    top_onnx = np.argsort(-(q_onnx @ onnx.T), axis=1)[:, :TOP_K]
    top_sbert = np.argsort(-(q_sbert @ sbert.T), axis=1)[:, :TOP_K]
    overlap = np.mean([len(set(a) & set(b)) / TOP_K for a, b in zip(top_onnx, top_sbert)])
    print(
        f"\n## Agreement: cosine of the int8 ONNX vectors to sentence-transformers' over {len(texts)} passages: "
        f"min {cosines.min():.4f}, mean {cosines.mean():.4f}; top-{TOP_K} passages shared for the "
        f"{len(questions)} questions: {overlap:.3f}"
    )


def multihop(models: dict) -> None:
    from llama_index_kgplus.entity_graph import EntityGraphRetriever

    docs, questions = load_data(False)
    print(f"\n## Multi-hop: 2WikiMultihopQA, {len(questions)} questions, {len(docs)} passages (with titles)\n")
    print("| retrieval | " + " | ".join(f"{name}: all-evidence@8 / recall@8" for name in models) + " |")
    print("|---|" + "---|" * len(models))
    for label, sources in [("vector", None), ("graph: titles", ["titles"]), ("graph: ner", ["ner"])]:
        cells = []
        for model in models.values():
            index, graph, _, _ = build(docs, model, sources)
            dense = index.as_retriever(similarity_top_k=TOP_K)
            if graph is None:
                result = evaluate(dense, questions)
            else:
                retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=TOP_K)
                result = evaluate(retriever, questions)
            cells.append(f"{result['all_evidence']:.2f} / {result['recall']:.3f}")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


def squad(models: dict) -> None:
    for name, model in models.items():
        print(f"\n### {name}")
        single_hop(model, [None, ["titles"]])


def routing(models: dict) -> None:
    import routing as bench

    from llama_index_kgplus._sample import SAMPLE_STOCKS_TABLE
    from llama_index_kgplus.kg import EntityMatcher
    from llama_index_kgplus.router import QuestionRouter
    from llama_index_kgplus.router._features import kg_entity_feature, table_feature
    from llama_index_kgplus.sample import SAMPLE_KG_NODES, SAMPLE_WEATHER_TABLE
    from llama_index_kgplus.tables import SQLTables

    tables = SQLTables()
    tables.add("weather", SAMPLE_WEATHER_TABLE)
    tables.add("stocks", SAMPLE_STOCKS_TABLE)
    features = [kg_entity_feature(EntityMatcher.from_csv(SAMPLE_KG_NODES)), table_feature(tables)]
    questions = bench.load()
    print(f"\n## Routing: {len(questions)} questions, the zero-LLM router\n")
    print("| backend | accuracy | median ms |")
    print("|---|---|---|")
    for name, model in models.items():
        router = QuestionRouter.from_defaults(model, features=features).fit()
        with contextlib.redirect_stdout(io.StringIO()):
            result = bench.run_router(name, router, questions)
        print(f"| {name} | {result['accuracy']:.3f} | {result['median_ms']:.1f} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating speed rounds per backend")
    parser.add_argument("--tables", default="speed,agreement,multihop,squad,routing")
    args = parser.parse_args()
    from llama_index_kgplus.llm import embed_model_from_spec

    models = {name: embed_model_from_spec(name) for name in BACKENDS}
    tables = args.tables.split(",")
    texts = passages()
    if "speed" in tables:
        speed(models, texts, args.rounds)
    if "agreement" in tables:
        agreement(models, texts)
    if "multihop" in tables:
        multihop(models)
    if "squad" in tables:
        squad(models)
    if "routing" in tables:
        routing(models)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
