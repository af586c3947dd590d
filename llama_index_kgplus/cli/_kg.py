"""``kgplus kg import``, ``kgplus kg paths`` and ``kgplus kg ask``: knowledge-graph import, path retrieval and
read-only text-to-Cypher.

``kg ask --json`` prints ``{"answer", "cypher", "rows", "refused": null | "reason", "question", "repaired",
"arrows_reversed", "chain_written", "entities_returned", "complaint": null | why the first query was sent back}``.

``kg paths --json`` prints exactly::

    {"entities": [{"cid", "name", "start", "end"}],
     "paths": [{"nodes": [{"cid", "name"}], "relationships": [{"type", "direction"}], "length", "text"}]}

``type`` is the relationship's ``relname`` (else its :TYPE); ``direction`` is ``"->"`` or ``"<-"`` read left to
right. With ``--questions FILE.jsonl`` (a ``text`` field per line) each line gives one JSON line, and the store
and the entity dictionary are loaded once.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from llama_index_kgplus._paths import user_path
from llama_index_kgplus.cli import _args
from llama_index_kgplus.cli._index import _read_questions
from llama_index_kgplus.errors import InputDataError


def _import(args: argparse.Namespace) -> int:
    from llama_index_kgplus.graph_stores._uri import GraphStoreURI
    from llama_index_kgplus.kg import import_kg
    from llama_index_kgplus.kg._import import neo4j_admin_import_command

    if args.neo4j_admin_command:
        print(
            neo4j_admin_import_command(
                args.nodes, args.relationships, database=args.neo4j_database, node_label=args.label
            )
        )
        return 0
    report = import_kg(
        args.store, args.nodes, args.relationships, args.synonyms,
        node_label=args.label, name_column=args.name_column, default_type=args.default_type,
        on_unknown_id="skip" if args.skip_unknown_ids else "fail", replace=args.replace,
        metadata_only=args.metadata_only, batch_size=args.batch_size, show_progress=not args.quiet,
    )  # fmt: skip
    print(report.model_dump_json() if args.json else report.summary())
    engine = GraphStoreURI.parse(args.store).engine if args.store else "ladybug"
    if engine == "neo4j" and not args.metadata_only and not args.json:
        command = neo4j_admin_import_command(
            args.nodes, args.relationships, database=args.neo4j_database, node_label=args.label
        )
        print(
            "\nFor large graphs the offline Neo4j importer is much faster (stop the DBMS; the database must not "
            f"exist yet):\n  {command}\nthen register the dictionary and synonyms with the same `kgplus kg import "
            "...` command plus --metadata-only."
        )
    return 0


def _paths(args: argparse.Namespace) -> int:
    from llama_index_kgplus.kg import KGPathFinder, KnowledgeGraph

    if bool(args.text) == bool(args.questions):
        raise InputDataError('Give either a TEXT or --questions FILE.jsonl (a "text" field per line), not both.')
    texts = [args.text] if args.text else _read_questions(Path(args.questions), field="text")
    with KnowledgeGraph.open(args.store, node_label=args.label) as kg:
        finder = KGPathFinder.from_defaults(
            kg,
            max_hops=args.max_hops,
            max_paths=args.max_paths,
            single_entity="none" if args.no_neighbours else "neighbours",
            path_engine=args.path_engine,
        )
        finder.warm_up()
        for text in texts:
            result = finder.find(text)
            if args.json or args.questions:
                print(json.dumps(result.to_dict(), ensure_ascii=False), flush=True)
                continue
            found = ", ".join(f"{e.text} [{e.cid}]" for e in result.entities) or "(none)"
            print(f"entities: {found}")
            print(f"paths ({len(result.paths)}):")
            for path in result.paths:
                print(f"  {path.text}")
    sys.stdout.flush()
    return 0


def _ask(args: argparse.Namespace) -> int:
    from llama_index_kgplus.kg import CypherQueryEngine, KnowledgeGraph
    from llama_index_kgplus.llm import llm_from_spec

    if bool(args.question) == bool(args.questions):
        raise InputDataError(
            'Give either a QUESTION or --questions FILE.jsonl (a "question" field per line), not both.'
        )
    questions = [args.question] if args.question else _read_questions(Path(args.questions))
    with KnowledgeGraph.open(args.store, node_label=args.label) as kg:
        kg.manifest  # noqa: B018 - a store without a knowledge graph fails here, before the LLM loads
        llm = llm_from_spec(args.llm)
        engine = CypherQueryEngine.from_defaults(kg, llm=llm, max_rows=args.max_rows, timeout=args.timeout)
        for question in questions:
            response = engine.query(question)
            meta = response.metadata or {}
            record = {
                "answer": str(response),
                "cypher": meta["cypher"],
                "rows": meta["rows"],
                "refused": meta["refused"],
                "question": question,
                "repaired": meta["repaired"],
                "arrows_reversed": meta.get("arrows_reversed", False),
                "chain_written": meta.get("chain_written", False),
                "entities_returned": meta.get("entities_returned", False),
                "complaint": meta.get("complaint"),
            }
            if args.json or args.questions:
                print(json.dumps(record, ensure_ascii=False, default=str), flush=True)
                continue
            print(record["answer"])
            print(f"\ncypher: {record['cypher'] or '-'}")
            if record["arrows_reversed"]:
                print(
                    "note: the query as written found nothing; this is it with its arrows reversed"
                )  # also in the answer
            if record["chain_written"]:
                print("note: the query written followed too few relationships; this is the graph's one chain of them")
            if record["entities_returned"]:
                print("note: the query written returned the entities' groups; this returns the entities")
            if record["refused"]:
                print(f"refused: {record['refused']}")
    sys.stdout.flush()
    return 0


def _hops(value: str) -> int:
    from llama_index_kgplus.graph_stores._dialect_base import MAX_HOPS_LIMIT

    number = _args.positive_int(value)
    if number > MAX_HOPS_LIMIT:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_HOPS_LIMIT}, got {number}")
    return number


def register(commands: _args.Commands) -> None:
    kg_sub = commands.group(
        "kg", dest="kg_command", help="knowledge graph: import neo4j-admin CSVs, find paths between entities"
    )
    store_help = "graph store URI (default $KGPLUS_GRAPH_STORE or the embedded ladybug store)"

    imp = kg_sub.add("import", help="import nodes/relationships CSVs (neo4j-admin header format)")
    imp.add_argument(
        "--nodes", required=True, type=user_path, help="nodes CSV, e.g. header cid:ID,cfname,stygrp,:LABEL"
    )
    imp.add_argument(
        "--relationships",
        required=True,
        type=user_path,
        help="relationships CSV, e.g. header :START_ID,:END_ID,:TYPE,relname,rank:int",
    )
    imp.add_argument("--synonyms", type=user_path, help="optional CSV with columns cid,synonym")
    imp.add_argument("--store", help=store_help)
    imp.add_argument("--label", default="Ent", help="label given to every node (default Ent)")
    imp.add_argument("--name-column", help="node property holding the entity name (default: name, cfname, ...)")
    imp.add_argument("--default-type", help="relationship type when the file has no :TYPE column")
    imp.add_argument(
        "--skip-unknown-ids",
        action="store_true",
        help="skip (and count) relationships/synonyms naming unknown ids instead of failing",
    )
    imp.add_argument(
        "--replace",
        action="store_true",
        help="replace an existing graph with this label (the old one stays until the new one is whole)",
    )
    imp.add_argument(
        "--metadata-only",
        action="store_true",
        help="nodes are already in the store (e.g. neo4j-admin): write only synonyms and manifest",
    )
    imp.add_argument(
        "--batch-size", type=_args.positive_int, default=10_000, help="rows per write statement (default 10000)"
    )
    imp.add_argument(
        "--neo4j-admin-command",
        action="store_true",
        help="only print the neo4j-admin database import command for these files",
    )
    imp.add_argument("--neo4j-database", default="neo4j", help="database name for that command (default neo4j)")
    imp.add_argument("--json", action="store_true", help="print the import report as JSON")
    imp.add_argument("--quiet", action="store_true", help="no progress bars")
    imp.set_defaults(func=_import)

    paths = kg_sub.add("paths", help="entities of a text and the shortest paths between them")
    paths.add_argument("text", nargs="?", metavar="TEXT")
    paths.add_argument("--questions", type=user_path, help='JSONL file with a "text" field per line')
    paths.add_argument("--store", help=store_help)
    paths.add_argument("--label", default="Ent", help="label of the graph's nodes (default Ent)")
    paths.add_argument("--max-hops", type=_hops, default=2, help="longest path in relationships (default 2, max 6)")
    paths.add_argument(
        "--max-paths", type=_args.positive_int, default=1000, help="paths per text after ranking (default 1000)"
    )
    paths.add_argument(
        "--no-neighbours",
        action="store_true",
        help="with a single entity print no paths (default: its direct relationships)",
    )
    paths.add_argument(
        "--path-engine",
        choices=["auto", "snapshot", "store"],
        default="auto",
        help="where paths are searched: an in-process snapshot of the graph (auto: on an embedded store) or the "
        "store's query (default auto)",
    )
    paths.add_argument("--json", action="store_true", help="print JSON (always on with --questions)")
    paths.set_defaults(func=_paths)

    ask = kg_sub.add("ask", help="answer a question with generated read-only Cypher (text-to-Cypher)")
    ask.add_argument("question", nargs="?", metavar="QUESTION")
    ask.add_argument("--questions", type=user_path, help='JSONL file with a "question" field per line')
    ask.add_argument("--store", help=store_help)
    ask.add_argument("--label", default="Ent", help="label of the graph's nodes (default Ent)")
    from llama_index_kgplus.cli._graphrag import LLM_HELP

    ask.add_argument("--llm", default=None, help=LLM_HELP)
    ask.add_argument("--max-rows", type=_args.positive_int, default=100, help="row limit of a query (default 100)")
    ask.add_argument("--timeout", type=float, default=10.0, help="seconds a query may run (default 10)")
    ask.add_argument("--json", action="store_true", help="print JSON (always on with --questions)")
    ask.set_defaults(func=_ask)
