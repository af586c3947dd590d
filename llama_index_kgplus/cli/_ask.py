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
import json
import re
import sys
from pathlib import Path
from typing import Any

from llama_index_kgplus._paths import user_path
from llama_index_kgplus.cli import _args
from llama_index_kgplus.cli._index import _questions, source_record
from llama_index_kgplus.errors import InputDataError


def _table_arg(value: str) -> tuple[str, Path]:
    name, sep, path = value.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or not path:
        raise argparse.ArgumentTypeError(f"{value!r}: give NAME=PATH, NAME made of letters, digits and _")
    return name, user_path(path)


def sources(args: argparse.Namespace, **settings: Any) -> Any:
    """The :class:`~llama_index_kgplus.KGPlusSources` of the command's ``--index``, ``--kg-store``,
    ``--graphrag`` and ``--table`` options and models (opened by the caller, before any model loads)."""
    from llama_index_kgplus import KGPlusSources
    from llama_index_kgplus.llm import resolve_model_spec

    if not (args.index or args.kg_store or args.graphrag or args.table):
        raise InputDataError("Give at least one source: --index, --kg-store, --graphrag or --table NAME=PATH.")
    return KGPlusSources(
        index=args.index,
        kg_store=args.kg_store,
        graphrag=args.graphrag,
        tables=list(args.table or []) or None,
        llm=resolve_model_spec(getattr(args, "llm", None), "llm"),
        embed_model=resolve_model_spec(None, "embed_model"),
        **settings,
    )


def _route_record(decision: Any, routes: list[str]) -> dict[str, Any]:
    from llama_index_kgplus._assembly import ENGINE_NAMES
    from llama_index_kgplus.router._engine import choose_engine

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
    questions = _questions(args)
    with sources(args) as opened:
        for decision in opened.router().route_many(questions):
            _print_route(args, _route_record(decision, opened.routes))
    sys.stdout.flush()
    return 0


def _ask(args: argparse.Namespace) -> int:
    from llama_index_kgplus._assembly import ENGINE_NAMES
    from llama_index_kgplus.llm._usage import format_usage

    questions = _questions(args)
    with sources(args, similarity_top_k=args.top_k, context_budget=args.context_budget) as opened:
        engine = opened.routed_query_engine()
        for question in questions:
            response = engine.query(question)
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
    cmd.add_argument("--questions", type=user_path, help='JSONL file with a "question" field per line')
    cmd.add_argument("--index", type=user_path, help="persisted index (kgplus ingest): local and multi-hop questions")
    cmd.add_argument("--kg-store", metavar="URI", help="knowledge graph store (kgplus kg import): path questions")
    cmd.add_argument("--graphrag", type=user_path, metavar="DIR", help="GraphRAG store (kgplus graphrag index): global")
    cmd.add_argument(
        "--table",
        action="append",
        type=_table_arg,
        metavar="NAME=PATH",
        help="a CSV, Parquet, SQLite or DuckDB file as table NAME (repeatable): table questions",
    )
    cmd.add_argument("--json", action="store_true", help="print JSON (always on with --questions)")


def register(commands: _args.Commands) -> None:
    route = commands.add("route", help="say which kind of question each one is and which engine would answer")
    _add_common(route)
    route.set_defaults(func=_route)

    ask = commands.add("ask", help="answer any question with the engine its route picks")
    _add_common(ask)
    ask.add_argument(
        "--llm", default=None, help="model spec (name, .gguf, openai-like:M@URL, ...); default $KGPLUS_LLM"
    )
    ask.add_argument("--top-k", type=_args.positive_int, default=5, help="passages to retrieve (default 5)")
    from llama_index_kgplus.compression._compressor import DEFAULT_CONTEXT_BUDGET

    ask.add_argument(
        "--context-budget",
        type=_args.positive_int,
        default=DEFAULT_CONTEXT_BUDGET,
        metavar="TOKENS",
        help=f"tokens of passage text the LLM reads (default {DEFAULT_CONTEXT_BUDGET})",
    )
    ask.set_defaults(func=_ask)
