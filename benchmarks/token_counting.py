"""The pack's own usage figures against LlamaIndex's ``TokenCountingHandler``, engine by engine, on small data.

Each engine answers its questions with the local model wrapped by ``metered`` (what ``kgplus ask`` and every
``from_defaults`` do) while a ``TokenCountingHandler`` sits where a LlamaIndex user puts it
(``Settings.callback_manager`` and the LLM's own callback manager). Per engine it prints the LLM calls the pack
counted and the LLM events the handler saw, the prompt tokens of each and their difference. Data: the bundled
samples (the venv and modules pages of the Python tutorial, the UMLS semantic network, the weather table, 20
passages of the multi-hop sample with its first question, a GraphRAG index of two one-paragraph documents built
by the rule-based test LLM so that only the global search uses the real model).

    .venv/bin/python benchmarks/token_counting.py [--llm qwen2.5-coder-0.5b] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from llama_index.core import Document, Settings  # noqa: E402
from llama_index.core.callbacks import CallbackManager, TokenCountingHandler  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402

from llama_index_kgplus import _defaults  # noqa: E402
from llama_index_kgplus._sample import SAMPLE_DIR
from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec, metered
from llama_index_kgplus.llm._usage import usage_meter  # noqa: E402
from llama_index_kgplus.sample import (
    SAMPLE_DOCS,
    SAMPLE_KG_NODES,
    SAMPLE_KG_RELATIONSHIPS,
    SAMPLE_MULTIHOP_DOCS,
    SAMPLE_MULTIHOP_QUESTIONS,
    SAMPLE_WEATHER_TABLE,
    sample_glossary_path,
)

SAMPLE_LONGDOC = SAMPLE_DIR / "longdoc.jsonl"
LOCAL = "How do I create a virtual environment?"
SQL = "What was the total precipitation in 2014?"


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class Sources:
    """The small data every engine reads, built once."""

    def __init__(self, llm: Any, embed_model: Any, workdir: Path) -> None:
        from llama_index_kgplus import build_index
        from llama_index_kgplus.tables import SQLTables

        self.llm, self.embed_model, self.workdir = llm, embed_model, workdir
        docs = [Document(id_=r["id"], text=r["text"], metadata={"title": r["title"]}) for r in records(SAMPLE_DOCS)]
        picked = [d for d in docs if d.id_ in ("tutorial/venv", "tutorial/modules")]
        self.index = build_index(picked, None, embed_model=embed_model, show_progress=False)
        self.tables = SQLTables()
        self.tables.add("weather", SAMPLE_WEATHER_TABLE)
        self._graphrag = self.graphrag_index()  # by the rule-based test LLM, before any figure is taken

    def compressor(self) -> list[Any]:
        from llama_index_kgplus.compression._apply import postprocessors_for

        return postprocessors_for(None, 512, embed_model=self.embed_model, llm=self.llm)

    def vector(self, streaming: bool = False) -> Any:
        return RetrieverQueryEngine.from_args(
            self.index.as_retriever(similarity_top_k=3), llm=self.llm, node_postprocessors=self.compressor(),
            streaming=streaming,
        )  # fmt: skip

    def hierarchy(self) -> Any:
        from llama_index_kgplus.hierarchy import HierarchicalRetriever

        retriever = HierarchicalRetriever.from_index(self.built_hierarchy(), mode="collapsed", similarity_top_k=3)
        return RetrieverQueryEngine.from_args(retriever, llm=self.llm, node_postprocessors=self.compressor())

    def built_hierarchy(self) -> Any:
        if not hasattr(self, "_hierarchy"):
            self._hierarchy = self.summary_index("semantic")
        return self._hierarchy

    def summary_index(self, kind: str) -> Any:
        """The first 5000 characters of the long sample document in 128-token chunks, with summaries."""
        from llama_index_kgplus import build_index
        from llama_index_kgplus.hierarchy import RaptorSummaryNodeBuilder, SemanticChunkingSummaryNodeBuilder

        [doc] = [Document(id_=r["id"], text=r["text"][:5000]) for r in records(SAMPLE_LONGDOC)]
        builder_cls = SemanticChunkingSummaryNodeBuilder if kind == "semantic" else RaptorSummaryNodeBuilder
        builder = builder_cls.from_defaults(llm=self.llm, embed_model=self.embed_model, show_progress=False)
        return build_index([doc], None, embed_model=self.embed_model, chunk_size=128, chunk_overlap=0,
                           extra_transformations=[builder], show_progress=False)  # fmt: skip

    def glossary(self) -> Any:
        from llama_index_kgplus.glossary import GlossaryQueryEngine

        return GlossaryQueryEngine.from_defaults(
            sample_glossary_path(), index=self.index, similarity_top_k=3, llm=self.llm,
            embed_model=self.embed_model, context_budget=512,
        )  # fmt: skip

    def kg_store(self) -> str:
        from llama_index_kgplus.cli import main

        uri = f"ladybug://{self.workdir / 'kg.lbug'}"
        if not (self.workdir / "kg.lbug").exists():
            args = ["kg", "import", "--store", uri, "--nodes", str(SAMPLE_KG_NODES)]
            assert main([*args, "--relationships", str(SAMPLE_KG_RELATIONSHIPS), "--quiet"]) == 0
        return uri

    def kg(self) -> Any:
        from llama_index_kgplus.kg import KGAugmentedQueryEngine, KGPathRetriever

        paths = KGPathRetriever.from_defaults(self.kg_store(), max_paths=10)
        return KGAugmentedQueryEngine.from_defaults(paths, self.index.as_retriever(similarity_top_k=2), llm=self.llm)

    def multihop(self) -> Any:
        from llama_index_kgplus import build_index
        from llama_index_kgplus.entity_graph import EntityGraph, EntityGraphRetriever, EntityLinker

        rows = records(SAMPLE_MULTIHOP_DOCS)
        docs = [Document(id_=r["id"], text=r["text"], metadata={"doc_id": r["id"], "title": r["title"]})
                for r in rows]  # fmt: skip
        linker = EntityLinker.from_defaults(["titles"])
        index = build_index(docs, None, embed_model=self.embed_model, extra_transformations=[linker],
                            show_progress=False)  # fmt: skip
        graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id)
        retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=4)
        return RetrieverQueryEngine.from_args(retriever, llm=self.llm, node_postprocessors=self.compressor())

    def graphrag_index(self) -> Any:
        from llama_index_kgplus.graphrag import GraphRAGIndex
        from llama_index_kgplus.graphrag._testing import RuleBasedGraphRAGLLM

        texts = {
            "curie": "Marie Curie was born in Warsaw. Marie Curie worked in Paris with Pierre Curie.",
            "chopin": "Frederic Chopin was born near Warsaw. Frederic Chopin lived in Paris.",
        }
        docs = [Document(id_=k, text=v, metadata={"doc_id": k, "title": k.title()}) for k, v in texts.items()]
        index = GraphRAGIndex.from_defaults(self.workdir / "graphrag", llm=RuleBasedGraphRAGLLM(),
                                            min_community_size=1, show_progress=False)  # fmt: skip
        index.build(docs)
        return index

    def global_search(self) -> Any:
        from llama_index_kgplus.graphrag import GlobalSearchEngine

        return GlobalSearchEngine.from_index(
            self._graphrag, llm=self.llm, level=0, max_reports=2, map_max_tokens=200, reduce_max_tokens=120
        )

    def sql(self) -> Any:
        from llama_index_kgplus.tables import TableQueryEngine

        return TableQueryEngine.from_defaults(self.tables, llm=self.llm)

    def routed(self) -> Any:
        from llama_index_kgplus.router import QuestionRouter, RoutedQueryEngine
        from llama_index_kgplus.router._features import table_feature

        router = QuestionRouter.from_defaults(self.embed_model, features=[table_feature(self.tables)])
        return RoutedQueryEngine.from_defaults({"local": self.vector(), "sql": self.sql()}, router=router)

    def selector(self) -> Any:
        from llama_index_kgplus.router._selector import ROUTE_DESCRIPTIONS, JSONSingleSelector

        selector = JSONSingleSelector(llm=self.llm)
        return lambda: selector.select(list(ROUTE_DESCRIPTIONS.values()), "How is a virus related to a disease?")

    def cypher(self) -> Any:
        from llama_index_kgplus.kg import CypherQueryEngine

        return CypherQueryEngine.from_defaults(self.kg_store(), llm=self.llm)

    def graphrag_build(self) -> Any:
        from llama_index_kgplus.graphrag import CommunityReportGenerator, GraphExtractor, GraphRAGIndex

        def build() -> Any:
            index = GraphRAGIndex.from_defaults(
                self.workdir / f"graphrag-llm-{time.time_ns()}", llm=self.llm, chunk_size=128, min_community_size=1,
                extractor=GraphExtractor(min_entities=1, max_entities=3, max_relationships=3,
                                         max_description_chars=100, max_tokens=400),
                reporter=CommunityReportGenerator(min_findings=5, max_findings=5, max_chars=120, max_tokens=700),
                show_progress=False,
            )  # fmt: skip
            with index:
                return index.build([Document(id_="curie", text="Marie Curie was born in Warsaw and worked in Paris.",
                                             metadata={"doc_id": "curie", "title": "Curie"})])  # fmt: skip

        return build


def query_run(engine: Callable[[], Any], *questions: str, mode: str = "query") -> Callable[[], Any]:
    def run() -> Any:
        built = engine()
        if mode == "aquery":
            return asyncio.run(_aquery_all(built, questions))
        if mode == "stream":
            return ["".join(built.query(q).response_gen) for q in questions]
        return [built.query(q) for q in questions]

    return run


async def _aquery_all(engine: Any, questions: tuple[str, ...]) -> list[Any]:
    return [await engine.aquery(q) for q in questions]


def measure(name: str, run: Callable[[], Any], llm: Any, handler: TokenCountingHandler) -> dict[str, Any]:
    meter = usage_meter(llm)
    handler.reset_counts()
    before, started = meter.snapshot(), time.perf_counter()
    run()
    used = meter.snapshot() - before
    seen = sum(e.prompt_token_count for e in handler.llm_token_counts)
    return {
        "engine": name,
        "pack_calls": used.llm_calls,
        "handler_events": len(handler.llm_token_counts),
        "pack_prompt_tokens": used.prompt_tokens,
        "handler_prompt_tokens": seen,
        "difference_pct": round(100 * (seen - used.prompt_tokens) / used.prompt_tokens, 2)
        if used.prompt_tokens
        else None,
        "pack_completion_tokens": used.completion_tokens,
        "handler_completion_tokens": handler.completion_llm_token_count,
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llm", default=_defaults.FAST_LLM)
    parser.add_argument("--only", help="comma-separated engine names")
    parser.add_argument("--json", action="store_true", help="one JSON line per engine")
    args = parser.parse_args()

    inner = llm_from_spec(args.llm, max_new_tokens=256, context_window=4096)
    handler = TokenCountingHandler()
    manager = CallbackManager([handler])
    Settings.callback_manager, inner.callback_manager = manager, manager
    llm = metered(inner)
    embed_model = embed_model_from_spec("local")
    multihop_question = records(SAMPLE_MULTIHOP_QUESTIONS)[0]["question"]
    with tempfile.TemporaryDirectory() as tmp:
        s = Sources(llm, embed_model, Path(tmp))
        runs: dict[str, Callable[[], Any]] = {
            "vector query": query_run(s.vector, LOCAL),
            "vector aquery": query_run(s.vector, LOCAL, mode="aquery"),
            "vector query (streamed)": query_run(lambda: s.vector(streaming=True), LOCAL, mode="stream"),
            "semantic summary build": lambda: s.built_hierarchy(),
            "RAPTOR summary build": lambda: s.summary_index("raptor"),
            "hierarchy query": query_run(s.hierarchy, "What share of the Amazon rainforest is in Brazil?"),
            "glossary engine": query_run(s.glossary, "How do I make an isolated environment for a project?"),
            "glossary engine aquery": query_run(
                s.glossary, "How do I make an isolated environment for a project?", mode="aquery"
            ),  # fmt: skip
            "KG-augmented engine": query_run(s.kg, "How is a virus related to a disease or syndrome?"),
            "entity-graph (multi-hop) query": query_run(s.multihop, multihop_question),
            "GraphRAG global search": query_run(s.global_search, "Who was born in Warsaw?"),
            "GraphRAG extraction + reports": s.graphrag_build(),
            "TableQueryEngine (text-to-SQL)": query_run(s.sql, SQL),
            "TableQueryEngine aquery": query_run(s.sql, SQL, mode="aquery"),
            "router LLM selector": s.selector(),
            "text-to-Cypher": query_run(s.cypher, "How many semantic types are there?"),
            "routed engine (local + sql)": query_run(s.routed, LOCAL, SQL),
            "routed engine aquery": query_run(s.routed, LOCAL, SQL, mode="aquery"),
        }
        only = set(args.only.split(",")) if args.only else None
        rows = []
        for name, run in runs.items():
            if only is None or name in only:
                try:
                    rows.append(measure(name, run, llm, handler))
                except Exception as exc:  # one engine's failure is reported in its row, the others still run
                    rows.append({"engine": name, "error": f"{type(exc).__name__}: {exc}"})
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return
    print("| engine | LLM calls (pack / handler events) | pack prompt tokens | TokenCountingHandler prompt tokens "
          "| difference |")  # fmt: skip
    print("|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['engine']} | failed: {r['error'][:120]} | | | |")
            continue
        diff = "n/a" if r["difference_pct"] is None else f"{r['difference_pct']:+.2f}%"
        print(f"| {r['engine']} | {r['pack_calls']} / {r['handler_events']} | {r['pack_prompt_tokens']} "
              f"| {r['handler_prompt_tokens']} | {diff} |")  # fmt: skip


if __name__ == "__main__":
    main()
