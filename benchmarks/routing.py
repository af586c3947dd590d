"""Question routing and table answers on a labelled set written from the shared data (``routing_questions.jsonl``,
105 questions; its figures: docs/benchmarks/index.md, "Routing and table questions").

Routers compared (same sources: the bundled UMLS knowledge graph's entity dictionary and the bundled tables
``weather`` and ``stocks``):

- ``examples``: the zero-LLM router (shipped examples + source features), every question decided without an LLM;
- ``examples+llm``: the same, with close calls (top scores within 0.03) put to the LLM selector;
- ``llm``: the LLM selector alone (``JSONSingleSelector`` over the five route descriptions), the baseline.

Then the SQL route's answers: for each table question, the SQL each local model writes through
``TableRetriever`` and whether its result holds the gold value (numbers within 0.1%, text exact).

    .venv/bin/python benchmarks/routing.py [--models qwen2.5-coder-0.5b,qwen2.5-coder-1.5b] [--skip-sql]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path

from llama_index_kgplus._sample import SAMPLE_STOCKS_TABLE
from llama_index_kgplus.kg import EntityMatcher
from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec
from llama_index_kgplus.router import QuestionRouter
from llama_index_kgplus.router._features import kg_entity_feature, table_feature
from llama_index_kgplus.router._router import ROUTES
from llama_index_kgplus.router._selector import ROUTE_DESCRIPTIONS, JSONSingleSelector
from llama_index_kgplus.sample import SAMPLE_KG_NODES, SAMPLE_WEATHER_TABLE
from llama_index_kgplus.tables import SQLTables, TableRetriever

QUESTIONS = Path(__file__).with_name("routing_questions.jsonl")


def load() -> list[dict]:
    return [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]


def matches(value: object, gold: object) -> bool:
    if isinstance(gold, (int, float)) and not isinstance(gold, bool):
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False
        return abs(number - gold) <= max(1e-3 * abs(gold), 0.01)
    return str(value).strip().lower() == str(gold).strip().lower()


def confusion(rows: list[tuple[str, str]]) -> str:
    counts = Counter(rows)
    lines = ["gold \\ routed " + " ".join(f"{r:>8}" for r in ROUTES)]
    for gold in ROUTES:
        lines.append(f"{gold:<14} " + " ".join(f"{counts[(gold, r)]:>8}" for r in ROUTES))
    return "\n".join(lines)


def run_router(name: str, router: QuestionRouter, questions: list[dict]) -> dict:
    times, pairs, llm_calls = [], [], 0
    for q in questions:
        start = time.perf_counter()
        decision = router.route(q["question"])
        times.append((time.perf_counter() - start) * 1000)
        pairs.append((q["route"], decision.route))
        llm_calls += decision.decided_by == "llm"
    accuracy = sum(g == r for g, r in pairs) / len(pairs)
    print(
        f"\n## router: {name}\naccuracy {accuracy:.3f} ({sum(g == r for g, r in pairs)}/{len(pairs)}), "
        f"LLM calls {llm_calls}, ms per question median {statistics.median(times):.1f} "
        f"p95 {sorted(times)[int(0.95 * len(times)) - 1]:.1f}"
    )
    print(confusion(pairs))
    for q, (gold, routed) in zip(questions, pairs):
        if gold != routed:
            print(f"  miss: {gold} -> {routed}: {q['question']}")
    return {"accuracy": accuracy, "median_ms": statistics.median(times), "llm_calls": llm_calls}


def run_llm_only(llm: object, questions: list[dict]) -> dict:
    selector = JSONSingleSelector(llm=llm)
    choices = [ROUTE_DESCRIPTIONS[r] for r in ROUTES]
    times, pairs = [], []
    for q in questions:
        start = time.perf_counter()
        routed = ROUTES[selector.select(choices, q["question"]).ind]
        times.append((time.perf_counter() - start) * 1000)
        pairs.append((q["route"], routed))
    accuracy = sum(g == r for g, r in pairs) / len(pairs)
    print(
        f"\n## router: llm selector only\naccuracy {accuracy:.3f}, ms per question median {statistics.median(times):.0f}"
    )
    print(confusion(pairs))
    return {"accuracy": accuracy, "median_ms": statistics.median(times)}


def run_sql(model: str, tables: SQLTables, questions: list[dict]) -> None:
    llm = llm_from_spec(model, max_new_tokens=256, context_window=4096)
    retriever = TableRetriever(tables, llm=llm)
    right = refused = repaired = 0
    times = []
    print(f"\n## SQL answers: {model}")
    for q in questions:
        start = time.perf_counter()
        [hit] = retriever.retrieve(q["question"])
        times.append(time.perf_counter() - start)
        answer = hit.node.metadata["sql_answer"]
        refused += answer["refused"] is not None
        repaired += answer["repaired"]
        ok = bool(answer["rows"]) and any(matches(v, q["answer"]) for v in answer["rows"][0])
        right += ok
        print(
            f"  {'ok ' if ok else 'BAD'} {q['question']}\n      {answer['sql'] or answer['refused']}"
            f" -> {answer['rows'][:2]} (gold {q['answer']})"
        )
    print(
        f"exact {right}/{len(questions)} = {right / len(questions):.3f}; refused {refused}, repaired {repaired}, "
        f"s per question median {statistics.median(times):.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="qwen2.5-coder-0.5b,qwen2.5-coder-1.5b")
    parser.add_argument("--skip-sql", action="store_true")
    parser.add_argument("--skip-llm-router", action="store_true")
    args = parser.parse_args()
    questions = load()
    print(f"{len(questions)} questions: {dict(Counter(q['route'] for q in questions))}")

    tables = SQLTables()
    tables.add("weather", SAMPLE_WEATHER_TABLE)
    tables.add("stocks", SAMPLE_STOCKS_TABLE)
    embed_model = embed_model_from_spec()
    features = [kg_entity_feature(EntityMatcher.from_csv(SAMPLE_KG_NODES)), table_feature(tables)]
    start = time.perf_counter()
    router = QuestionRouter.from_defaults(embed_model, features=features).fit()
    print(f"start-up (embed the shipped examples): {time.perf_counter() - start:.2f} s")
    run_router("examples (zero LLM)", router, questions)

    if not args.skip_llm_router:
        llm = llm_from_spec(args.models.split(",")[-1], max_new_tokens=64, context_window=4096)
        hybrid = QuestionRouter.from_defaults(embed_model, features=features, selector=JSONSingleSelector(llm=llm))
        hybrid.example_vectors_ = router.example_vectors_
        run_router("examples + LLM selector on close calls", hybrid, questions)
        run_llm_only(llm, questions)
    if not args.skip_sql:
        for model in args.models.split(","):
            run_sql(model, tables, [q for q in questions if q["route"] == "sql"])


if __name__ == "__main__":
    main()
