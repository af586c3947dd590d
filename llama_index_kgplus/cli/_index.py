"""``kgplus ingest``, ``kgplus sync``, ``kgplus delete``, ``kgplus query`` and ``kgplus retrieve`` over a persisted
vector index.

``kgplus sync DOCS --index DIR`` compares the corpus with the index (content hashes) and adds, updates and deletes
documents through every index of the folder (see ``llama_index_kgplus._syncing``); ``--json`` prints its
``SyncReport`` (``added``, ``updated``, ``deleted``, ``unchanged``, ``nodes_written``, ``nodes_deleted``,
``texts_embedded``, ``summaries_written``, ``summaries_reused``, ``entity_passages``, ``entity_passages_relinked``,
``graphrag``, ``llm_calls``, ``ingest_id``, ``seconds``).

``kgplus delete DOC_ID ... --index DIR`` deletes documents through every index of the folder, one after the other,
with ``load_index`` and ``delete_ref_doc`` (each deletion switched in whole); unknown ids are refused before any is
deleted. It prints one report per document (``--json``: one ``SyncReport`` per line).

``--json`` output of ``query``::

    {"answer", "original_query", "rewritten_query", "glossary_terms",
     "sources": [{"id", "score", "text", "level", "doc_ids"}],
     "usage": {"prompt_tokens", "completion_tokens", "llm_calls", "seconds", "first_token_seconds", "estimated"}}

``retrieve`` prints the same without ``answer`` and ``usage``. ``usage`` counts every LLM call of the answer
(the glossary rewrite too) in the model's own tokens; ``seconds`` runs from the question to the last token.
``id`` is the source document's corpus id (null for a summary that spans documents; ``doc_ids`` lists them
all); ``level`` is 0 for a chunk and 1 or more for a summary node. Hierarchy options (``--hierarchy``,
``--retrieval``): see ``_hierarchy``; glossary options (``--glossary``, ``--mode``): see ``_glossary``;
``--compress``, ``--context-budget`` and ``--stream``: see ``_compression``. With ``--questions FILE.jsonl`` (a
``question`` field per line) each question gives one JSON line, and the models and index are loaded once.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from llama_index_kgplus._indexing import AUTO_LANCEDB_DOCUMENTS
from llama_index_kgplus._jsonl import iter_jsonl, text_field
from llama_index_kgplus._paths import user_path
from llama_index_kgplus.cli import _args, _compression, _entities, _glossary, _hierarchy
from llama_index_kgplus.errors import InputDataError


def _read_questions(path: Path, field: str = "question") -> list[str]:
    """The ``field`` of every line of a JSONL file; a file with none is an error (nothing would run)."""
    texts = []
    for where, record in iter_jsonl(path, "Questions file"):
        text = text_field(record, field, where, required=False) or ""
        if not text.strip():
            raise InputDataError(f'{where}: each line needs a non-empty "{field}" field.')
        texts.append(text)
    if not texts:
        raise InputDataError(f'Questions file {path} is empty: give one JSON object with a "{field}" per line.')
    return texts


def _questions(args: argparse.Namespace) -> list[str]:
    if bool(args.question) == bool(args.questions):
        raise InputDataError("Give either a QUESTION or --questions FILE.jsonl (not both).")
    return [args.question] if args.question else _read_questions(Path(args.questions))


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
    if "compression" in node.metadata:
        record["compression"] = node.metadata["compression"]
    return record


def _print_result(args: argparse.Namespace, record: dict[str, Any]) -> None:
    if args.json or args.questions:
        print(json.dumps(record, ensure_ascii=False), flush=True)
        return
    if "answer" in record and not getattr(args, "stream", False):
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
        if src.get("compression", {}).get("dropped"):
            print("    (no sentence of it within the context budget: not shown to the LLM)")
    if record.get("usage"):
        from llama_index_kgplus.llm._usage import format_usage

        print(f"\n{format_usage(record['usage'])}")


def _read_answer(response: Any, stream: bool) -> dict[str, Any]:
    """The answer text of a (streaming) response, printed token by token with ``stream``, and its usage."""
    tokens = getattr(response, "response_gen", None)
    if tokens is None:
        text = str(response)
    else:
        parts = []
        for token in tokens:
            parts.append(token)
            if stream:
                print(token, end="", flush=True)
        text = "".join(parts)
        if stream:
            print(flush=True)
    return {"answer": text, "usage": (response.metadata or {}).get("usage")}


def _walk_text(why: dict[str, Any]) -> str:
    """``--retrieval graph``: the path that reached a source, as one line."""
    steps = why.get("path") or []
    if not steps:
        return "dense hit"

    def name(label: dict[str, str]) -> str:
        return label["entity"] if "entity" in label else f"[{label['doc_id']}]"

    start = steps[0]
    kinds = {"question": "question entity", "sentence": "sentence entity", "dense": "dense hit"}
    words = [f"{kinds[start['by']]} {name(start['seed'])}"] if "seed" in start else [name(start["from"])]
    words += [f"-{step['edge']}- {name(step['to'])}" for step in steps if "to" in step]
    return " ".join(words)


def _upgrade(args: argparse.Namespace) -> int:
    from llama_index_kgplus.indexing import upgrade_index

    if args.docs_path:
        raise InputDataError(
            f"--upgrade moves the index in {args.index} as it is: give no DOCS_PATH (then `kgplus sync DOCS_PATH "
            f"--index {args.index}` brings it in step with the corpus)."
        )
    moved = upgrade_index(args.index)
    if moved:
        print(f"moved {moved} nodes of {args.index} into LanceDB and SQLite (nothing embedded again)")
    else:
        print(f"{args.index} is in LanceDB already: nothing to do")
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from llama_index_kgplus import build_index, load_corpus
    from llama_index_kgplus._indexing import (
        INGEST_FILE,
        default_vector_store,
        index_size,
        persist_index,
        vector_store_for,
    )
    from llama_index_kgplus._ingesting import stream_structured_index
    from llama_index_kgplus._lock import writer_lock
    from llama_index_kgplus.llm import embed_model_from_spec

    if args.upgrade:
        return _upgrade(args)
    if not args.docs_path:
        raise InputDataError("Give the corpus to index: kgplus ingest DOCS_PATH --index DIR (or --upgrade).")
    _args.check_chunking(args.chunk_size, args.chunk_overlap)
    # an index of an earlier run: LlamaIndex's docstore.json, or the stamp of one that keeps it in SQLite
    _args.check_output_dir(args.index, "--index", "docstore.json", INGEST_FILE)
    docs = load_corpus(args.docs_path, stream=True)  # read as it is used; it knows how many documents it holds
    store = default_vector_store(docs) if args.vector_store == "auto" else args.vector_store
    # into LanceDB the corpus streams: read, embedded (linked, summarised) and written in batches, resumed after a
    # crash; RAPTOR's clusters need every chunk at once
    stream = store == "lancedb" and args.hierarchy != "raptor"
    if not stream:
        docs = load_corpus(args.docs_path)  # read, and refused if bad, before any model loads
    with writer_lock(args.index, "kgplus ingest"):  # a second writer is refused before any model loads
        linker = _entities.make_linker(args)
        embed_model = embed_model_from_spec()
        builders = _hierarchy.make_builders(args, embed_model)
        graph = manifest = None
        settings = {
            "entities": _entities.ingest_settings(args),
            "hierarchy": _hierarchy.settings(args),
        }  # recorded in ingest.json: `kgplus sync` splits, links and summarises new documents the same way
        if stream and linker is None and not builders:
            index = build_index(
                docs, args.index, vector_store="lancedb", embed_model=embed_model, chunk_size=args.chunk_size,
                chunk_overlap=args.chunk_overlap, batch_size=args.batch_size,
            )  # fmt: skip
        elif stream:
            index, graph, manifest = stream_structured_index(
                docs, args.index, embed_model=embed_model, linker=linker, builders=builders,
                chunk_size=args.chunk_size, chunk_overlap=args.chunk_overlap, similar_entities=args.similar_entities,
                settings=settings, batch_size=args.batch_size,
            )  # fmt: skip
        else:
            index = build_index(
                docs,
                None,
                vector_store=vector_store_for(store, args.index),  # lancedb: a new table in the folder
                embed_model=embed_model,
                chunk_size=args.chunk_size,
                chunk_overlap=args.chunk_overlap,
                extra_transformations=[*([linker] if linker else []), *builders],
            )
            graph = _entities.entity_graph(index, linker, embed_model, args.similar_entities)
            manifest = _hierarchy.manifest(index, builders)
            # the index, its entity graph and its hierarchy are switched in together: old all three, or new
            persist_index(
                index,
                args.index,
                embed_model=embed_model,
                files={**_entities.files(graph), **_hierarchy.files(manifest)},
                settings={"chunk_size": args.chunk_size, "chunk_overlap": args.chunk_overlap, **settings},
            )
        documents, nodes = index_size(index)
        print(f"indexed {documents} documents as {nodes} nodes -> {args.index}")
        _entities.after_ingest(args, index, linker, graph)
        _hierarchy.after_ingest(args, manifest)
    return 0


def _sync(args: argparse.Namespace) -> int:
    from llama_index_kgplus._indexing import AUTO_LANCEDB_DOCUMENTS, keeps_json_vectors, require_index
    from llama_index_kgplus._lancedb import installed
    from llama_index_kgplus._lock import writer_lock
    from llama_index_kgplus.indexing import sync_index
    from llama_index_kgplus.llm import embed_model_from_spec

    require_index(args.index)
    with writer_lock(args.index, "kgplus sync"):  # a second writer is refused before any model loads
        report = sync_index(
            args.docs_path,  # read as records: only changed documents are built
            args.index,
            embed_model=embed_model_from_spec(),
            llm=args.llm,
            graphrag_store=args.graphrag_store,
            show_progress=not args.quiet,
        )
    _print_report(args, report)
    documents = len(report.added) + len(report.updated) + len(report.unchanged)
    if keeps_json_vectors(args.index) and documents >= AUTO_LANCEDB_DOCUMENTS and installed():
        print(
            f"hint: {documents:,} documents kept in JSON are read whole on every open; `kgplus ingest --upgrade "
            f"--index {args.index}` moves them into LanceDB, which opens at once",
            file=sys.stderr,
        )
    return 0


def _print_report(args: argparse.Namespace, report: Any) -> None:
    """A ``SyncReport``: its line, or its JSON with ``--json``."""
    if args.json:
        print(json.dumps(report.as_dict(), ensure_ascii=False), flush=True)
    else:
        print(f"{report.summary()} -> {args.index}", flush=True)


def _delete(args: argparse.Namespace) -> int:
    from llama_index_kgplus import load_index
    from llama_index_kgplus.llm import embed_model_from_spec

    index = load_index(args.index, embed_model=embed_model_from_spec())
    if index.folder is None:
        raise InputDataError(
            f"{args.index} has no ingest.json (an index of plain LlamaIndex): delete needs an index built by "
            f"`kgplus ingest DOCS --index {args.index}`."
        )
    doc_ids = list(dict.fromkeys(args.doc_ids))
    unknown = [d for d in doc_ids if index.docstore.get_ref_doc_info(d) is None]
    if unknown:
        raise InputDataError(f"{args.index} holds no document {unknown[0]!r}: nothing was deleted.")
    for doc_id in doc_ids:  # each one switched in whole: old or new
        index.delete_ref_doc(doc_id, llm=args.llm, show_progress=not args.quiet)
        _print_report(args, index.delete_report_)
    return 0


def _retrieve_or_query(args: argparse.Namespace, synthesize: bool) -> int:
    from pydantic import ValidationError

    from llama_index_kgplus import KGPlusSources
    from llama_index_kgplus.compression._apply import query_with_hints, run_postprocessors
    from llama_index_kgplus.llm import AnswerUsage, attach_usage, resolve_model_spec

    _compression.check(args)
    questions = _questions(args)
    graph = args.retrieval == "graph"
    route = "multihop" if graph else "local"
    sources = KGPlusSources(
        index=args.index,
        llm=resolve_model_spec(getattr(args, "llm", None), "llm"),
        embed_model=resolve_model_spec(None, "embed_model"),
        similarity_top_k=args.top_k,
        context_budget=None if args.compress == "none" else args.context_budget,
        retrieval_mode=None if graph else args.retrieval,
        retriever_kwargs={"local": {"expand_children": args.expand_children}, "multihop": _entities.settings(args)},
        streaming=True,
    )
    with sources:
        try:
            retriever = sources.retriever(route)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise InputDataError(f"Invalid graph retrieval setting: {error['msg']} ({error['loc'][0]}).") from exc
        llm = sources.get_llm() if synthesize else None
        postprocessors = sources.node_postprocessors(llm)
        glossary_engine = _glossary.make_engine(args, sources, retriever, llm, postprocessors)
        engine = sources.query_engine(route) if synthesize and glossary_engine is None else None
        stream = bool(getattr(args, "stream", False))
        answer = (lambda response: _read_answer(response, stream)) if synthesize else None
        for question in questions:
            record: dict[str, Any] = {"original_query": question, "rewritten_query": None, "glossary_terms": []}
            if stream:
                print(f"Q: {question}\n", flush=True)
            if glossary_engine is not None:
                record = _glossary.run(glossary_engine, question, answer, source_record)
            elif engine is not None:
                assert answer is not None  # an engine is made only to synthesize
                usage = AnswerUsage(llm)
                response = attach_usage(engine.query(question), usage)
                record = {**answer(response), **record, "sources": [source_record(h) for h in response.source_nodes]}
            else:
                nodes = run_postprocessors(postprocessors, retriever.retrieve(question), query_with_hints(question))
                record["sources"] = [source_record(h) for h in nodes]
            _print_result(args, record)
    sys.stdout.flush()
    return 0


def register(commands: _args.Commands) -> None:
    ingest = commands.add("ingest", help="split, embed and index a corpus into a persisted vector index")
    ingest.add_argument(
        "docs_path",
        metavar="DOCS_PATH",
        nargs="?",
        help="a folder of text files or a JSONL corpus (id, title, text); none with --upgrade",
    )
    ingest.add_argument("--index", required=True, type=user_path, help="folder of the persisted index")
    ingest.add_argument("--chunk-size", type=_args.positive_int, default=384, help="chunk size in tokens (default 384)")
    ingest.add_argument(
        "--chunk-overlap", type=_args.non_negative_int, default=32, help="chunk overlap in tokens (default 32)"
    )
    ingest.add_argument(
        "--vector-store",
        choices=("auto", "simple", "lancedb"),
        default="auto",
        help="where the vectors live: simple (JSON, read whole on open), lancedb (a LanceDB table in the folder: "
        "opens at once, ANN search; pip install 'llama-index-kgplus[lancedb]'), or auto (the default: lancedb from "
        f"{AUTO_LANCEDB_DOCUMENTS:,} documents when installed, else simple)",
    )
    ingest.add_argument(
        "--batch-size",
        type=_args.positive_int,
        default=1000,
        help="lancedb: documents read, embedded (linked to the titles, kg and glossary entity sources, summarised by "
        "--hierarchy semantic) and written at a time (memory flat in the corpus size; a re-run after a crash resumes "
        "after the last batch written; default 1000)",
    )
    ingest.add_argument(
        "--upgrade",
        action="store_true",
        help="move the index in --index from JSON into LanceDB and SQLite (which open at once), keeping its nodes, "
        "vectors, entity graph and hierarchy: nothing is embedded again",
    )
    _hierarchy.add_ingest_options(ingest)
    _entities.add_ingest_options(ingest)
    ingest.set_defaults(func=_ingest)

    sync = commands.add(
        "sync",
        help="bring an index in step with its corpus: add, update and delete documents through every index of the "
        "folder",
    )
    sync.add_argument("docs_path", metavar="DOCS_PATH", help="the corpus as it is now (a folder or JSONL)")
    sync.add_argument("--index", required=True, type=user_path, help="folder of the persisted index")
    sync.add_argument(
        "--llm",
        default=None,
        help="model spec of new summaries, the llm entity source and the GraphRAG update (default: the ingest's, "
        "else $KGPLUS_LLM); loaded only when needed",
    )
    sync.add_argument(
        "--graphrag-store",
        type=user_path,
        default=None,
        metavar="DIR",
        help="also update this GraphRAG store (the index folder's graphrag/ is updated when present)",
    )
    sync.add_argument("--json", action="store_true", help="print the report as JSON")
    sync.add_argument("--quiet", action="store_true", help="no progress bars")
    sync.set_defaults(func=_sync)

    delete = commands.add(
        "delete",
        help="delete documents through every index of the folder (vector store, docstore, entity graph, summaries, "
        "GraphRAG store)",
    )
    delete.add_argument("doc_ids", nargs="+", metavar="DOC_ID", help="the id of a document to delete")
    delete.add_argument("--index", required=True, type=user_path, help="folder of the persisted index")
    delete.add_argument(
        "--llm",
        default=None,
        help="model spec of rewritten summaries and of the GraphRAG store's reports (default: the ingest's, else "
        "$KGPLUS_LLM); loaded only when needed",
    )
    delete.add_argument("--json", action="store_true", help="print each document's report as one JSON line")
    delete.add_argument("--quiet", action="store_true", help="no progress bars")
    delete.set_defaults(func=_delete)

    for name, synthesize, help_text in (
        ("query", True, "answer a question from the index with the LLM"),
        ("retrieve", False, "retrieve the sources for a question, without synthesis"),
    ):
        cmd = commands.add(name, help=help_text)
        cmd.add_argument("question", nargs="?", metavar="QUESTION")
        cmd.add_argument("--questions", type=user_path, help='JSONL file with a "question" field per line')
        cmd.add_argument("--index", required=True, type=user_path, help="folder of the persisted index")
        cmd.add_argument("--top-k", type=_args.positive_int, default=5, help="how many nodes to retrieve (default 5)")
        cmd.add_argument("--json", action="store_true", help="print JSON (always on with --questions)")
        if synthesize:
            cmd.add_argument(
                "--llm",
                default=None,
                help="model spec (name, .gguf, openai-like:M@URL, ollama:M, bedrock:ID); default $KGPLUS_LLM",
            )
        _hierarchy.add_retrieval_options(cmd)
        _entities.add_retrieval_options(cmd)
        _compression.add_options(cmd, synthesize, compress=_compression.DEFAULT_COMPRESS if synthesize else "none")
        _glossary.add_options(cmd, with_llm=not synthesize)
        cmd.set_defaults(func=lambda args, s=synthesize: _retrieve_or_query(args, s))
