"""Glossary query rewriting on the Python docs: does retrieval find the FAQ answers' pages more often?

Data: ``/work/shared/bench-data/glossary-pydocs`` (488 doc pages, the 128-term Python glossary, 44 FAQ questions
with the ids of the pages their answers link to). Baseline: retrieval with the original question.

For every question the :class:`GlossaryQueryRewriter` (default local LLM, default embedding model, default
selection and drift guard) rewrites it once; then the same vector index is searched with

- ``original``  the question as asked (the baseline),
- ``rewritten`` the guarded rewrite (the original where the guard refused it),
- ``fused``     both lists merged by reciprocal rank fusion (what ``GlossaryQueryEngine`` does by default),
- ``proposed``  the LLM's rewrite with no guard (to show what the guard changes),
- ``terms``     the question followed by the selected glossary terms' names (no LLM; a cheap reference).

Chunks are mapped to their page; metrics are page-level over the first distinct pages: recall@5, recall@10
(share of the gold pages found) and MRR (first gold page). The paired bootstrap gives a 95% interval for each
mode's recall@10 difference to the original. It also counts the synthesis prompt tokens (the LLM's tokenizer)
with the selected entries vs. the whole glossary.

LLM outputs are cached by prompt in ``benchmarks/glossary_rewrites.json`` (committed), so a rerun needs no LLM
unless the prompt, the selection or the model changes. Usage::

    .venv/bin/python benchmarks/glossary_retrieval.py                 # index built once under $KGPLUS_HOME/bench
    .venv/bin/python benchmarks/glossary_retrieval.py --limit 5 --llm qwen2.5-coder-0.5b   # a quick look
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import LLM, CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.prompts.default_prompts import DEFAULT_TEXT_QA_PROMPT
from llama_index.core.schema import QueryBundle

from llama_index_kgplus import _defaults, build_index, load_corpus, load_index
from llama_index_kgplus.glossary import Glossary, GlossaryQueryEngine, GlossaryTermSelector
from llama_index_kgplus.glossary._rewrite import NO_TERMS
from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec
from llama_index_kgplus.llm._local import local_model_path

HERE = Path(__file__).resolve().parent
DATA = Path("/work/shared/bench-data/glossary-pydocs")
CACHE = HERE / "glossary_rewrites.json"
MODES = ("original", "rewritten", "fused", "proposed", "terms")


class CachingLLM(CustomLLM):
    """Replays completions cached by (model, prompt); asks the real LLM (loaded on first miss) otherwise."""

    model: str
    cache_path: str
    _inner: LLM | None = PrivateAttr(default=None)
    _cache: dict[str, Any] = PrivateAttr(default_factory=dict)
    misses: int = 0
    hits: int = 0

    def model_post_init(self, __context: Any) -> None:
        path = Path(self.cache_path)
        self._cache = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=8192, num_output=512, model_name=self.model)

    def key(self, prompt: str) -> str:
        return hashlib.sha256(f"{self.model}\n{prompt}".encode()).hexdigest()

    def _save(self, key: str, prompt: str, text: str, seconds: float) -> None:
        self._cache[key] = {
            "model": self.model,
            "prompt_tail": prompt[-300:],
            "text": text,
            "seconds": round(seconds, 1),
        }
        Path(self.cache_path).write_text(json.dumps(self._cache, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    def inner(self) -> LLM:
        if self._inner is None:
            self._inner = llm_from_spec(self.model, max_new_tokens=256)
        return self._inner

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        key = self.key(prompt)
        if key in self._cache:
            self.hits += 1
        else:
            self.misses += 1
            start = time.perf_counter()
            text = self.inner().complete(prompt).text
            self._save(key, prompt, text, time.perf_counter() - start)
        return CompletionResponse(text=self._cache[key]["text"])

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        key = self.key(prompt)
        if key in self._cache:
            self.hits += 1
            text = self._cache[key]["text"]

            def replay() -> Iterator[CompletionResponse]:
                yield CompletionResponse(text=text, delta=text)

            return replay()
        self.misses += 1

        def live() -> Iterator[CompletionResponse]:
            start, text = time.perf_counter(), ""
            try:
                for chunk in self.inner().stream_complete(prompt):
                    text = chunk.text
                    yield chunk
            finally:  # the rewriter may stop reading early: cache what it read
                self._save(key, prompt, text, time.perf_counter() - start)

        return live()

    def seconds(self) -> list[float]:
        return [v["seconds"] for v in self._cache.values() if v["model"] == self.model]


def page_ranking(nodes: list[Any]) -> list[str]:
    pages: list[str] = []
    for hit in nodes:
        page = hit.node.metadata.get("doc_id") or hit.node.ref_doc_id
        if page not in pages:
            pages.append(page)
    return pages


def metrics(pages: list[str], gold: list[str]) -> dict[str, float]:
    gold_set = set(gold)
    first = next((i for i, p in enumerate(pages, 1) if p in gold_set), None)
    return {
        "recall@5": len(gold_set & set(pages[:5])) / len(gold_set),
        "recall@10": len(gold_set & set(pages[:10])) / len(gold_set),
        "mrr": 1.0 / first if first else 0.0,
    }


def bootstrap_ci(deltas: list[float], n: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(deltas) for _ in deltas) / len(deltas) for _ in range(n))
    return means[int(0.025 * n)], means[int(0.975 * n) - 1]


def load_or_build_index(index_dir: Path, data: Path, embed_model: Any) -> Any:
    if not (index_dir / "docstore.json").is_file():
        print(f"building the index of {data / 'corpus.jsonl'} in {index_dir} (once; ~10-40 min on 2 busy cores)")
        build_index(load_corpus(data / "corpus.jsonl"), index_dir, embed_model=embed_model)
    return load_index(index_dir, embed_model=embed_model)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--index-dir", type=Path, default=None, help="default $KGPLUS_HOME/bench/glossary-pydocs-index")
    parser.add_argument("--llm", default=_defaults.DEFAULT_LLM, help="local model name (default: the 1.5B model)")
    parser.add_argument("--cache", type=Path, default=CACHE, help="JSON cache of the LLM's rewrites")
    parser.add_argument("--depth", type=int, default=50, help="chunks retrieved per query (default 50)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--min-similarity", type=float, default=0.5, help="drift guard threshold (default 0.5)")
    parser.add_argument("--examples", type=int, default=3, help="helpful/harmful rewrites to print (default 3)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "glossary_retrieval.json")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    embed_model = embed_model_from_spec()
    index_dir = args.index_dir or _defaults.kgplus_home() / "bench" / "glossary-pydocs-index"
    index = load_or_build_index(index_dir, args.data, embed_model)
    glossary = Glossary.load(args.data / "glossary.json")
    questions = [json.loads(line) for line in (args.data / "questions.jsonl").read_text().splitlines() if line.strip()]
    questions = questions[: args.limit] if args.limit else questions
    llm = CachingLLM(model=args.llm, cache_path=str(args.cache))
    engine = GlossaryQueryEngine.from_defaults(
        glossary,
        index=index,
        llm=llm,
        embed_model=embed_model,
        similarity_top_k=args.depth,
        min_similarity=args.min_similarity,
    )
    whole = GlossaryTermSelector.from_defaults(glossary, embed_model=embed_model, whole_glossary=True)
    retriever = engine.retriever
    tokenizer = _llm_tokenizer(args.llm)
    print(f"setup (models, index of {len(index.docstore.docs)} chunks): {time.perf_counter() - t0:.0f} s", flush=True)

    rows, t_rewrite = [], time.perf_counter()
    for n, q in enumerate(questions, 1):
        rewrite = engine.rewriter.rewrite(q["question"])
        by_original = retriever.retrieve(QueryBundle(q["question"]))
        by_rewrite = retriever.retrieve(QueryBundle(rewrite.rewritten_query)) if rewrite.changed else by_original
        proposed = rewrite.proposed_query or q["question"]
        by_proposed = retriever.retrieve(QueryBundle(proposed)) if proposed != rewrite.rewritten_query else by_rewrite
        terms_query = q["question"] + (" " + ", ".join(rewrite.glossary_terms) if rewrite.glossary_terms else "")
        ranked = {
            "original": by_original,
            "rewritten": by_rewrite,
            "fused": engine.fuse(by_original, by_rewrite) if rewrite.changed else by_original,
            "proposed": by_proposed,
            "terms": retriever.retrieve(QueryBundle(terms_query)),
        }
        pages = {mode: page_ranking(nodes) for mode, nodes in ranked.items()}
        context = "\n\n".join(h.node.get_content() for h in ranked["fused"][:5])
        selected_q = engine.synthesis_query(rewrite)
        whole_q = engine.glossary_context_prompt.format(
            query_str=q["question"], glossary_str=whole.select(q["question"]).text
        )
        rows.append(
            {
                "id": q["id"],
                "question": q["question"],
                "gold": q["gold_ids"],
                "rewritten_query": rewrite.rewritten_query,
                "proposed_query": rewrite.proposed_query,
                "fallback_reason": rewrite.fallback_reason,
                "similarity": rewrite.similarity,
                "glossary_terms": rewrite.glossary_terms,
                "metrics": {mode: metrics(p, q["gold_ids"]) for mode, p in pages.items()},
                "top_pages": {mode: p[:10] for mode, p in pages.items()},
                "tokens": {
                    "no_glossary": tokenizer(
                        DEFAULT_TEXT_QA_PROMPT.format(context_str=context, query_str=q["question"])
                    ),
                    "selected": tokenizer(DEFAULT_TEXT_QA_PROMPT.format(context_str=context, query_str=selected_q)),
                    "whole": tokenizer(DEFAULT_TEXT_QA_PROMPT.format(context_str=context, query_str=whole_q)),
                    "rewrite_prompt": tokenizer(engine.rewriter.format_prompt(q["question"], rewrite.selection)),
                },
            }
        )
        print(
            f"[{n}/{len(questions)}] {rewrite.fallback_reason or 'rewritten'}: {rewrite.rewritten_query[:90]}",
            flush=True,
        )
    t_rewrite = time.perf_counter() - t_rewrite

    report(rows, args.examples)
    llm_seconds = llm.seconds()
    print(
        f"\nquestions: {len(rows)}; rewrites generated by the LLM this run: {llm.misses}, replayed from the cache: "
        f"{llm.hits}, not needed (no glossary entry selected): {sum(r['fallback_reason'] == NO_TERMS for r in rows)}; "
        f"loop time {t_rewrite:.0f} s; total {time.perf_counter() - t0:.0f} s"
    )
    if llm_seconds:
        print(
            f"{args.llm} rewrite time when generated: median {sorted(llm_seconds)[len(llm_seconds) // 2]:.0f} s, "
            f"max {max(llm_seconds):.0f} s (shared, busy 2-core machine)"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"per-question details: {args.out}")
    return 0


def _llm_tokenizer(model: str) -> Any:
    """Token counter of the local LLM (vocabulary only, no weights); LlamaIndex's tokenizer as a fallback."""
    try:
        from llama_cpp import Llama

        vocab = Llama(model_path=str(local_model_path(model)), vocab_only=True, verbose=False)
        return lambda text: len(vocab.tokenize(text.encode("utf-8"), add_bos=False))
    except Exception as exc:  # noqa: BLE001 - only the unit of the token counts changes
        print(f"(using tiktoken cl100k for token counts: {exc})", file=sys.stderr)
        from llama_index.core.utils import get_tokenizer

        tok = get_tokenizer()
        return lambda text: len(tok(text))


def report(rows: list[dict[str, Any]], n_examples: int) -> None:
    n = len(rows)
    mean = {m: {k: sum(r["metrics"][m][k] for r in rows) / n for k in ("recall@5", "recall@10", "mrr")} for m in MODES}
    base = mean["original"]
    print(f"\nPage-level retrieval, {n} questions (baseline: original question)\n")
    print(
        "| mode | recall@5 | recall@10 | MRR | recall@10 vs original | 95% CI of the difference | better / worse questions |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for m in MODES:
        deltas = [r["metrics"][m]["recall@10"] - r["metrics"]["original"]["recall@10"] for r in rows]
        rel = (mean[m]["recall@10"] / base["recall@10"] - 1) * 100 if base["recall@10"] else float("nan")
        lo, hi = bootstrap_ci(deltas)
        better, worse = sum(d > 0 for d in deltas), sum(d < 0 for d in deltas)
        print(
            f"| {m} | {mean[m]['recall@5']:.3f} | {mean[m]['recall@10']:.3f} | {mean[m]['mrr']:.3f} | "
            f"{rel:+.1f}% | [{lo:+.3f}, {hi:+.3f}] | {better} / {worse} |"
        )
    reasons: dict[str, int] = {}
    for r in rows:
        key = (r["fallback_reason"] or "rewrite used").split(":")[0]
        reasons[key] = reasons.get(key, 0) + 1
    print(f"\nguard outcomes: {reasons}")
    sims = sorted(r["similarity"] for r in rows if r["similarity"] is not None)
    if sims:
        print(f"rewrite/original similarity: min {sims[0]:.2f}, median {sims[len(sims) // 2]:.2f}, max {sims[-1]:.2f}")
    tok = {k: sorted(r["tokens"][k] for r in rows) for k in ("no_glossary", "selected", "whole", "rewrite_prompt")}
    print("\nSynthesis prompt tokens (LLM tokenizer; top-5 fused chunks as context), median [max]:")
    print("| prompt | median | max | glossary part (median) |")
    print("| --- | --- | --- | --- |")
    for k, label in (
        ("no_glossary", "question only"),
        ("selected", "question + selected entries"),
        ("whole", "question + whole glossary"),
    ):
        extra = [r["tokens"][k] - r["tokens"]["no_glossary"] for r in rows]
        print(f"| {label} | {tok[k][n // 2]} | {tok[k][-1]} | {sorted(extra)[n // 2]} |")
    print(f"| rewrite prompt (selected entries) | {tok['rewrite_prompt'][n // 2]} | {tok['rewrite_prompt'][-1]} | |")

    def delta(r: dict[str, Any]) -> tuple[float, float]:
        o, w = r["metrics"]["original"], r["metrics"]["rewritten"]
        return w["recall@10"] - o["recall@10"], w["mrr"] - o["mrr"]

    helpful = sorted((r for r in rows if delta(r) > (0, 0)), key=delta, reverse=True)
    harmful = sorted((r for r in rows if delta(r) < (0, 0)), key=delta)
    print(
        f"\nrewritten vs original per question (recall@10, then MRR): {len(helpful)} better, {len(harmful)} worse, "
        f"{n - len(helpful) - len(harmful)} equal"
    )
    for title, chosen in (("helpful", helpful[:n_examples]), ("harmful", harmful[:n_examples])):
        print(f"\nMost {title} rewrites (recall@10 / MRR original -> rewritten):")
        for r in chosen:
            o, w = r["metrics"]["original"], r["metrics"]["rewritten"]
            print(
                f"- {r['question']}\n  -> {r['rewritten_query']}\n  gold {r['gold']}; "
                f"{o['recall@10']:.2f}/{o['mrr']:.2f} -> {w['recall@10']:.2f}/{w['mrr']:.2f}; terms {r['glossary_terms']}"
            )


if __name__ == "__main__":
    raise SystemExit(main())
