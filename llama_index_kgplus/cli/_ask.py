"""``kgplus route`` and ``kgplus ask``: one entry point over every source the user names.

Sources: ``--index DIR`` (local questions; multi-hop too when the index has an entity graph), ``--kg-store URI``
(knowledge-graph path questions), ``--graphrag DIR`` (global questions), ``--table NAME=PATH`` (repeatable; a
CSV, Parquet, SQLite or DuckDB file: table questions). ``route --json`` prints one line per question::

    {"question", "route", "engine", "scores": {route: score}, "reason", "features", "fallback"}

``route`` is the kind of question (local, multihop, global, kg, sql) whatever is configured; ``engine`` is what
would answer it with the given sources (``vector_index``, ``entity_graph``, ``graphrag_global``, ``kg_paths``,
``text_to_sql``; null with none), ``fallback`` says why it differs from the route's own. ``ask --json``::

    {"answer", "question", "route", "engine", "sources": [...], "sql" (text_to_sql), "rows" (text_to_sql),
     "refused" (text_to_sql), "routing": {...}, "usage": {...}}

with ``sources`` in the form of ``kgplus query``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from llama_index_kgplus.cli import _args
from llama_index_kgplus.cli._index import _questions, source_record
from llama_index_kgplus.errors import InputDataError

#: The engine that answers each route's questions
ENGINE_NAMES = {
    "local": "vector_index",
    "multihop": "entity_graph",
    "global": "graphrag_global",
    "kg": "kg_paths",
    "sql": "text_to_sql",
}


def _table_arg(value: str) -> tuple[str, Path]:
    name, sep, path = value.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or not path:
        raise argparse.ArgumentTypeError(f"{value!r}: give NAME=PATH, NAME made of letters, digits and _")
    return name, Path(path)


class _Sources:
    """The sources of one command, checked before any model loads, opened once, closed at the end."""

    def __init__(self, args: argparse.Namespace, stack: contextlib.ExitStack) -> None:
        from llama_index_kgplus.entity_graph import GRAPH_FILE
        from llama_index_kgplus.graphrag import STATE_FILE
        from llama_index_kgplus.indexing import require_index

        self.args, self.stack = args, stack
        if not (args.index or args.kg_store or args.graphrag or args.table):
            raise InputDataError("Give at least one source: --index, --kg-store, --graphrag or --table NAME=PATH.")
        self.routes: list[str] = []
        if args.index:
            require_index(args.index)
            self.routes.append("local")
            if (Path(args.index) / GRAPH_FILE).is_file():
                self.routes.append("multihop")
        if args.graphrag:
            if not (Path(args.graphrag) / STATE_FILE).is_file():
                raise InputDataError(
                    f"--graphrag {args.graphrag} holds no GraphRAG index: run `kgplus graphrag index DOCS "
                    f"--store {args.graphrag}` first."
                )
            self.routes.append("global")
        self.kg: Any = None
        if args.kg_store:
            from llama_index_kgplus.kg import KnowledgeGraph

            self.kg = stack.enter_context(KnowledgeGraph.open(args.kg_store))
            self.routes.append("kg")
        self.tables: Any = None
        if args.table:
            from llama_index_kgplus.tables import SQLTables

            self.tables = SQLTables()
            for name, path in args.table:
                self.tables.add(name, path)
            self.routes.append("sql")

    def router(self, embed_model: Any) -> Any:
        from llama_index_kgplus.router import QuestionRouter, kg_entity_feature, table_feature

        features = []
        if self.kg is not None:
            features.append(kg_entity_feature(self.kg.entity_matcher()))
        if self.tables is not None:
            features.append(table_feature(self.tables))
        return QuestionRouter.from_defaults(embed_model, features=features).fit()

    def engines(self, llm: Any, embed_model: Any, *, streaming: bool = False, glossary: Any = None) -> dict[str, Any]:
        """A factory per configured route: each engine is built when its first question comes. ``streaming``: the
        engines that can stream do (passages, KG paths); ``glossary``: local questions are rewritten with it
        (the workbench, ``kgplus ui --glossary``)."""
        from llama_index.core.query_engine import RetrieverQueryEngine

        args = self.args
        index_box: dict[str, Any] = {}

        def index() -> Any:
            from llama_index_kgplus.indexing import load_index

            if "index" not in index_box:
                index_box["index"] = load_index(args.index, embed_model=embed_model, check=False)
            return index_box["index"]

        def local_retriever() -> Any:
            from llama_index_kgplus.hierarchy import HierarchicalRetriever, default_mode, manifest_root_ids

            root_ids = manifest_root_ids(Path(args.index), index().docstore)
            mode = default_mode(root_ids)
            return HierarchicalRetriever.from_index(index(), mode=mode, similarity_top_k=args.top_k, root_ids=root_ids)

        def postprocessors() -> list[Any]:
            from llama_index_kgplus.compression import postprocessors_for

            return postprocessors_for(None, args.context_budget, embed_model=embed_model, llm=llm)

        def passages(retriever: Any) -> Any:
            return RetrieverQueryEngine.from_args(
                retriever, llm=llm, node_postprocessors=postprocessors(), streaming=streaming
            )

        def multihop() -> Any:
            from llama_index_kgplus.entity_graph import EntityGraphRetriever

            retriever = EntityGraphRetriever.from_index(
                index(), persist_dir=Path(args.index), similarity_top_k=args.top_k
            )
            retriever.warm_up()
            return passages(retriever)

        def kg() -> Any:
            from llama_index_kgplus.kg import KGAugmentedQueryEngine, KGPathRetriever

            vector = local_retriever() if args.index else None
            return KGAugmentedQueryEngine.from_defaults(
                KGPathRetriever.from_defaults(self.kg), vector, llm=llm, streaming=streaming
            )

        def global_() -> Any:
            from llama_index_kgplus.graphrag import GraphRAGIndex

            graphrag = GraphRAGIndex.from_defaults(args.graphrag, llm=llm, show_progress=False)
            self.stack.callback(graphrag.close)
            return graphrag.as_query_engine(show_progress=False)

        def sql() -> Any:
            from llama_index_kgplus.tables import TableQueryEngine

            return TableQueryEngine.from_defaults(self.tables, llm=llm)

        def local() -> Any:
            if glossary is None:
                return passages(local_retriever())
            from llama_index_kgplus.glossary import GlossaryQueryEngine

            return GlossaryQueryEngine.from_defaults(
                glossary, retriever=local_retriever(), llm=llm, embed_model=embed_model,
                node_postprocessors=postprocessors(), streaming=streaming,
            )  # fmt: skip

        factories = {
            "local": local,
            "multihop": multihop,
            "global": global_,
            "kg": kg,
            "sql": sql,
        }
        return {route: factories[route] for route in self.routes}


def _route_record(decision: Any, routes: list[str]) -> dict[str, Any]:
    from llama_index_kgplus.router import choose_engine

    chosen, note = choose_engine(decision, dict.fromkeys(routes))
    return {
        "question": decision.question,
        "route": decision.route,
        "engine": ENGINE_NAMES[chosen] if chosen else None,
        "scores": decision.scores,
        "reason": decision.reason,
        "features": decision.features,
        "fallback": note or None,
    }


def _print_route(args: argparse.Namespace, record: dict[str, Any]) -> None:
    if args.json or args.questions:
        print(json.dumps(record, ensure_ascii=False), flush=True)
        return
    print(f"{record['route']} -> {record['engine'] or '(no engine configured)'}: {record['question']}")
    print("  scores: " + ", ".join(f"{r} {s:.3f}" for r, s in record["scores"].items()))
    print(f"  why: {record['reason']}")
    if record["fallback"]:
        print(f"  note: {record['fallback']}")


def _route(args: argparse.Namespace) -> int:
    from llama_index_kgplus.llm import embed_model_from_spec

    questions = _questions(args)
    with contextlib.ExitStack() as stack:
        sources = _Sources(args, stack)
        router = sources.router(embed_model_from_spec())
        for decision in router.route_many(questions):
            _print_route(args, _route_record(decision, sources.routes))
    sys.stdout.flush()
    return 0


def _ask(args: argparse.Namespace) -> int:
    from llama_index_kgplus.llm import (
        AnswerUsage,
        attach_usage,
        embed_model_from_spec,
        format_usage,
        llm_from_spec,
        metered,
    )
    from llama_index_kgplus.router import RoutedQueryEngine

    questions = _questions(args)
    with contextlib.ExitStack() as stack:
        sources = _Sources(args, stack)
        embed_model = embed_model_from_spec()
        llm = metered(llm_from_spec(args.llm))
        engine = RoutedQueryEngine.from_defaults(sources.engines(llm, embed_model), router=sources.router(embed_model))
        for question in questions:
            usage = AnswerUsage(llm)
            response = attach_usage(engine.query(question), usage)
            meta = response.metadata
            record: dict[str, Any] = {
                "answer": str(response.response).strip(),
                "question": question,
                "route": meta["route"],
                "engine": ENGINE_NAMES[meta["engine"]],
                "sources": [source_record(hit) for hit in response.source_nodes],
                "routing": meta["routing"],
                "usage": meta.get("usage"),
            }
            if meta["engine"] == "sql":
                record.update(sql=meta["sql"], rows=meta["rows"], refused=meta["refused"])
            if args.json or args.questions:
                print(json.dumps(record, ensure_ascii=False, default=str), flush=True)
                continue
            print(record["answer"])
            print(f"\nroute: {record['route']} -> {record['engine']} ({meta['routing']['reason']})")
            if meta["routing"]["fallback"]:
                print(f"note: {meta['routing']['fallback']}")
            if "sql" in record:
                print(f"sql: {record['sql']}")
            for src in record["sources"][:5]:
                print(f"- [{src['id']}] {' '.join(src['text'].split())[:120]}")
            if record["usage"]:
                print(format_usage(record["usage"]))
    sys.stdout.flush()
    return 0


def _add_common(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("question", nargs="?", metavar="QUESTION")
    cmd.add_argument("--questions", type=Path, help='JSONL file with a "question" field per line')
    cmd.add_argument("--index", type=Path, help="persisted index (kgplus ingest): local and multi-hop questions")
    cmd.add_argument("--kg-store", metavar="URI", help="knowledge graph store (kgplus kg import): path questions")
    cmd.add_argument("--graphrag", type=Path, metavar="DIR", help="GraphRAG store (kgplus graphrag index): global")
    cmd.add_argument(
        "--table",
        action="append",
        type=_table_arg,
        metavar="NAME=PATH",
        help="a CSV, Parquet, SQLite or DuckDB file as table NAME (repeatable): table questions",
    )
    cmd.add_argument("--json", action="store_true", help="print JSON (always on with --questions)")


def register(sub: argparse._SubParsersAction) -> None:
    route = sub.add_parser("route", help="say which kind of question each one is and which engine would answer")
    _add_common(route)
    route.set_defaults(func=_route)

    ask = sub.add_parser("ask", help="answer any question with the engine its route picks")
    _add_common(ask)
    ask.add_argument(
        "--llm", default=None, help="model spec (name, .gguf, openai-like:M@URL, ...); default $KGPLUS_LLM"
    )
    ask.add_argument("--top-k", type=_args.positive_int, default=5, help="passages to retrieve (default 5)")
    from llama_index_kgplus.compression import DEFAULT_CONTEXT_BUDGET

    ask.add_argument(
        "--context-budget",
        type=_args.positive_int,
        default=DEFAULT_CONTEXT_BUDGET,
        metavar="TOKENS",
        help=f"tokens of passage text the LLM reads (default {DEFAULT_CONTEXT_BUDGET})",
    )
    ask.set_defaults(func=_ask)
