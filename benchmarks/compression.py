"""Query-aware context compression on long Wikipedia articles (bench-data/longdocs-squad): prompt tokens, time to
the first token, answer time, and answer quality, without compression and with ``ContextCompressor`` at several
budgets, for each local model; then the demo's questions before and after.

Setting: 3 articles split as ``kgplus ingest`` splits them (384-token chunks), top 5 chunks per question (the
CLI default), LlamaIndex's default synthesis prompt, streamed. Questions: every ``N``-th SQuAD question of each
article (``--per-article``). Quality, judge-free: exact match, token F1 (SQuAD normalisation), ``answer_contains``
(a gold answer inside the answer) and *evidence kept* (a gold answer inside the context the LLM read). Each
configuration runs all its questions in a row, so llama.cpp's automatic reuse of the previous prompt's prefix
helps every configuration alike (only the template's first tokens are shared between questions).

    .venv/bin/python benchmarks/compression.py                         # both models, budgets 256/512/1024, ~1.5 h
    .venv/bin/python benchmarks/compression.py --models qwen2.5-coder-0.5b --per-article 4 --no-demo   # a quick look
    .venv/bin/python benchmarks/compression.py --demo-only             # the demo's questions, whole vs compressed
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from kg_common import BENCH  # noqa: E402

DATA = BENCH / "longdocs-squad"
ARTICLES = ("Black_Death", "Packet_switching", "Super_Bowl_50")
TOP_K = 5


def load(per_article: int):
    from llama_index.core import Document

    docs = [json.loads(line) for line in (DATA / "docs.jsonl").read_text(encoding="utf-8").splitlines() if line]
    docs = [Document(text=d["text"], id_=d["id"], metadata={"doc_id": d["id"], "title": d["title"]})
            for d in docs if d["id"] in ARTICLES]  # fmt: skip
    questions = [json.loads(line) for line in (DATA / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    chosen = []
    for article in ARTICLES:
        mine = [q for q in questions if q["doc_id"] == article]
        step = max(1, len(mine) // per_article)
        chosen += mine[::step][:per_article]
    return docs, chosen


def run_config(index, llm, questions, budget, embed_model):
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import MetadataMode

    from llama_index_kgplus.compression import ContextCompressor
    from llama_index_kgplus.evaluation._short_answer import answer_contains, exact_match, token_f1
    from llama_index_kgplus.llm import AnswerUsage, attach_usage

    post = [] if budget is None else [ContextCompressor.from_defaults(budget, embed_model=embed_model, llm=llm)]
    engine = RetrieverQueryEngine.from_args(
        index.as_retriever(similarity_top_k=TOP_K), llm=llm, node_postprocessors=post, streaming=True
    )
    rows = []
    for q in questions:
        usage = AnswerUsage(llm)
        response = attach_usage(engine.query(q["question"]), usage)
        answer = "".join(response.response_gen).strip()
        figures = response.metadata["usage"]
        context = " ".join(h.node.get_content(MetadataMode.LLM) for h in response.source_nodes)
        rows.append({
            "prompt_tokens": figures["prompt_tokens"], "first": figures["first_token_seconds"],
            "seconds": figures["seconds"], "em": exact_match(answer, q["answers"]), "f1": token_f1(answer, q["answers"]),
            "contains": answer_contains(answer, q["answers"]),
            "evidence": answer_contains(context, q["answers"]), "answer": answer,
        })  # fmt: skip
    return rows


def summary(rows, base=None):
    mean = {k: statistics.fmean(r[k] for r in rows) for k in ("prompt_tokens", "first", "seconds", "em", "f1",
                                                               "contains", "evidence")}  # fmt: skip
    if base is not None:
        mean["tokens_ratio"] = mean["prompt_tokens"] / base["prompt_tokens"]
        mean["time_ratio"] = mean["seconds"] / base["seconds"]
    return mean


def print_table(model, results):
    print(f"\n### {model}\n")
    print("| context | prompt tokens | x uncompressed | first token s | answer s | x uncompressed | exact match | "
          "token F1 | answer_contains | evidence kept |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, m in results:
        ratio = lambda key: f"{m[key]:.2f}" if key in m else "1.00"  # noqa: E731
        print(
            f"| {label} | {m['prompt_tokens']:.0f} | {ratio('tokens_ratio')} | {m['first']:.1f} | {m['seconds']:.1f} | "
            f"{ratio('time_ratio')} | {m['em']:.3f} | {m['f1']:.3f} | {m['contains']:.3f} | {m['evidence']:.3f} |"
        )


def demo_questions(model, budget):
    """The demo's answers with and without compression (its own indexes under a temporary KGPLUS_HOME, built by the
    first run; the usage figures start at each question, so they do not include the indexing)."""
    import io

    from llama_index_kgplus._demo import run_demo
    from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec, metered

    llm = metered(llm_from_spec(model))
    embed_model = embed_model_from_spec()
    print(f"\n### The demo's questions ({model})\n")
    print("| question | context | prompt tokens | first token s | answer s |")
    print("|---|---|---|---|---|")
    for label, value in (("whole passages", None), (f"sentences, {budget}", budget)):
        responses = run_demo(llm=llm, embed_model=embed_model, context_budget=value, out=io.StringIO())
        for step, response in responses.items():
            u = response.metadata["usage"]
            print(f"| {step} | {label} | {u['prompt_tokens']} | {u['first_token_seconds']:.1f} | {u['seconds']:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="qwen2.5-coder-0.5b,qwen2.5-coder-1.5b")
    parser.add_argument("--budgets", default="256,512,1024")
    parser.add_argument("--per-article", type=int, default=14, help="questions per article (3 articles)")
    parser.add_argument("--no-demo", action="store_true", help="skip the demo's questions")
    parser.add_argument("--demo-only", action="store_true", help="only the demo's questions")
    parser.add_argument("--answers", type=Path, help="write every answer to this JSONL file")
    args = parser.parse_args()

    from llama_index_kgplus import _defaults, build_index
    from llama_index_kgplus.compression._compressor import DEFAULT_CONTEXT_BUDGET
    from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec, metered

    os.environ.setdefault(_defaults.MODELS_DIR_ENV, str(_defaults.models_dir()))
    os.environ[_defaults.HOME_ENV] = tempfile.mkdtemp(prefix="kgplus-compression-")
    budgets = [int(b) for b in args.budgets.split(",") if b]
    demo_budget = DEFAULT_CONTEXT_BUDGET if DEFAULT_CONTEXT_BUDGET in budgets else budgets[0]
    if args.demo_only:
        demo_questions(_defaults.DEFAULT_LLM, demo_budget)
        return
    docs, questions = load(args.per_article)
    embed_model = embed_model_from_spec()
    index = build_index(docs, Path(os.environ[_defaults.HOME_ENV]) / "index", embed_model=embed_model, chunk_size=384,
                        chunk_overlap=32, show_progress=False)  # fmt: skip
    print(f"## Context compression: {len(questions)} SQuAD questions over {', '.join(ARTICLES)} "
          f"({len(index.docstore.docs)} chunks of 384 tokens), top {TOP_K}")  # fmt: skip
    for model in [m for m in args.models.split(",") if m]:
        llm = metered(llm_from_spec(model, max_new_tokens=128))
        results, base = [], None
        for budget in [None, *budgets]:
            started = time.perf_counter()
            rows = run_config(index, llm, questions, budget, embed_model)
            label = "whole passages" if budget is None else f"sentences, {budget}"
            results.append((label, summary(rows, base)))
            base = base or results[0][1]
            print(f"[{model}] {label}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
            if args.answers:
                with args.answers.open("a", encoding="utf-8") as fh:
                    for q, row in zip(questions, rows):
                        fh.write(json.dumps({"model": model, "context": label, "id": q["id"], **row}) + "\n")
        print_table(model, results)
        del llm
    if not args.no_demo:
        demo_questions(_defaults.DEFAULT_LLM, demo_budget)


if __name__ == "__main__":
    main()
