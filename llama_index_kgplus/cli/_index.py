"""``kgplus ingest``, ``kgplus query`` and ``kgplus retrieve`` over a persisted vector index.

``--json`` output of ``query``::

    {"answer", "original_query", "rewritten_query", "glossary_terms", "sources": [{"id", "score", "text", "level", "doc_ids"}]}

``retrieve`` prints the same without ``answer``. ``id`` is the source document's corpus id (null for a summary
that spans documents; ``doc_ids`` lists them all); ``level`` is 0 for a chunk and 1 or more for a summary node.
Hierarchy options (``--hierarchy``, ``--retrieval``): see ``_hierarchy``; glossary options (``--glossary``,
``--mode``): see ``_glossary``. With ``--questions FILE.jsonl`` (a ``question`` field per line) each
question gives one JSON line, and the models and index are loaded once.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llama_index_kgplus.cli import _entities, _glossary, _hierarchy
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.jsonl import iter_jsonl


def _read_questions(path: Path, field: str = "question") -> Iterator[str]:
    for where, record in iter_jsonl(path, "Questions file"):
        if not str(record.get(field) or "").strip():
            raise InputDataError(f'{where}: each line needs a non-empty "{field}" field.')
        yield str(record[field])


def _questions(args: argparse.Namespace) -> list[str]:
    if bool(args.question) == bool(args.questions):
        raise InputDataError("Give either a QUESTION or --questions FILE.jsonl (not both).")
    return [args.question] if args.question else list(_read_questions(Path(args.questions)))


def source_record(hit: Any) -> dict[str, Any]:
    """The JSON form of one retrieved ``NodeWithScore``."""
    node = hit.node
    record = {
        "id": node.metadata.get("doc_id") or node.ref_doc_id,
        "score": None if hit.score is None else round(float(hit.score), 6),
        "text": node.get_content(),
        "level": int(node.metadata.get("level", 0)),
        "doc_ids": node.metadata.get("doc_ids") or [d for d in [node.metadata.get("doc_id") or node.ref_doc_id] if d],
    }
    if "entity_graph" in node.metadata:  # --retrieval graph: why the walk chose it
        record["why"] = node.metadata["entity_graph"]
    return record


def _print_result(args: argparse.Namespace, record: dict[str, Any]) -> None:
    if args.json or args.questions:
        print(json.dumps(record, ensure_ascii=False), flush=True)
        return
    if "answer" in record:
        print(record["answer"].strip())
    if record.get("rewritten_query") and record["rewritten_query"] != record["original_query"]:
        print(f"\nrewritten query: {record['rewritten_query']}")
    elif record.get("fallback_reason"):
        print(f"\n(query not rewritten: {record['fallback_reason']})")
    print("\nsources:")
    for src in record["sources"]:
        snippet = " ".join(src["text"].split())[:120]
        print(f"- [{src['id']}] level {src['level']} score {src['score']:.3f}: {snippet}")
        if "why" in src:
            print(f"    why: {_walk_text(src['why'])}")


def _walk_text(why: dict[str, Any]) -> str:
    """``--retrieval graph``: the path that reached a source, as one line."""
    steps = why.get("path") or []
    if not steps:
        return "dense hit"

    def name(label: dict[str, str]) -> str:
        return label["entity"] if "entity" in label else f"[{label['doc_id']}]"

    start = steps[0]
    words = [f"{'question entity' if start['by'] == 'question' else 'dense hit'} {name(start['seed'])}"] \
        if "seed" in start else [name(start["from"])]
    words += [f"-{step['edge']}- {name(step['to'])}" for step in steps if "to" in step]
    return " ".join(words)


def _ingest(args: argparse.Namespace) -> int:
    from llama_index_kgplus import defaults
    from llama_index_kgplus.corpus import load_corpus
    from llama_index_kgplus.indexing import build_index

    docs = load_corpus(args.docs_path)
    linker = _entities.make_linker(args)
    embed_model = defaults.default_embed_model()
    builders = _hierarchy.make_builders(args, embed_model)
    index = build_index(
        docs,
        args.index,
        embed_model=embed_model,
        chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap,
        extra_transformations=[*([linker] if linker else []), *builders],
    )
    print(f"indexed {len(docs)} documents as {len(index.docstore.docs)} nodes -> {args.index}")
    _entities.after_ingest(args, index, linker)
    _hierarchy.after_ingest(args, index, builders)
    return 0


def _retrieve_or_query(args: argparse.Namespace, synthesize: bool) -> int:
    from llama_index.core.query_engine import RetrieverQueryEngine

    from llama_index_kgplus import defaults
    from llama_index_kgplus.indexing import load_index

    questions = _questions(args)
    index = load_index(args.index, embed_model=defaults.default_embed_model())
    if args.retrieval == "graph":
        retriever = _entities.make_retriever(index, args)
    else:
        retriever = _hierarchy.make_retriever(index, args)
    glossary_engine = _glossary.make_engine(args, retriever, index, synthesize)
    engine = None
    if synthesize and glossary_engine is None:
        engine = RetrieverQueryEngine.from_args(retriever, llm=defaults.default_llm(args.llm))
    for question in questions:
        record: dict[str, Any] = {"original_query": question, "rewritten_query": None, "glossary_terms": []}
        if glossary_engine is not None:
            record = _glossary.run(glossary_engine, question, synthesize, source_record)
        elif engine is not None:
            response = engine.query(question)
            record = {"answer": str(response), **record, "sources": [source_record(h) for h in response.source_nodes]}
        else:
            record["sources"] = [source_record(h) for h in retriever.retrieve(question)]
        _print_result(args, record)
    sys.stdout.flush()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    ingest = sub.add_parser("ingest", help="split, embed and index a corpus into a persisted vector index")
    ingest.add_argument("docs_path", metavar="DOCS_PATH", help="a folder of text files or a JSONL corpus (id, title, text)")
    ingest.add_argument("--index", required=True, type=Path, help="folder of the persisted index")
    ingest.add_argument("--chunk-size", type=int, default=384, help="chunk size in tokens (default 384)")
    ingest.add_argument("--chunk-overlap", type=int, default=32, help="chunk overlap in tokens (default 32)")
    _hierarchy.add_ingest_options(ingest)
    _entities.add_ingest_options(ingest)
    ingest.set_defaults(func=_ingest)

    for name, synthesize, help_text in (
        ("query", True, "answer a question from the index with the LLM"),
        ("retrieve", False, "retrieve the sources for a question, without synthesis"),
    ):
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("question", nargs="?", metavar="QUESTION")
        cmd.add_argument("--questions", type=Path, help='JSONL file with a "question" field per line')
        cmd.add_argument("--index", required=True, type=Path, help="folder of the persisted index")
        cmd.add_argument("--top-k", type=int, default=5, help="how many nodes to retrieve (default 5)")
        cmd.add_argument("--json", action="store_true", help="print JSON (always on with --questions)")
        if synthesize:
            cmd.add_argument("--llm", default=None, help="local model name or .gguf path; default $KGPLUS_LLM")
        _hierarchy.add_retrieval_options(cmd)
        _entities.add_retrieval_options(cmd)
        _glossary.add_options(cmd)
        cmd.set_defaults(func=lambda args, s=synthesize: _retrieve_or_query(args, s))
