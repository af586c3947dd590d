"""``kgplus graphrag index|update|query``: GraphRAG-style global questions over a corpus, kept in a store folder.

``--json`` of ``index`` and ``update`` prints exactly::

    {"documents", "chunks", "entities", "relationships", "communities", "reports_total", "reports_regenerated",
     "llm_calls", "prompt_tokens", "completion_tokens", "seconds"}

``--json`` of ``query`` prints ``{"answer", "question", "response_type", "level", "reports", "documents",
"sources": [{"doc_id", "chunk_id", "title", "score", "text"}], "key_points", "llm_calls", "prompt_tokens",
"completion_tokens", "seconds", "usage"}`` (``usage`` as in ``kgplus query``). ``--compress sentences`` reads
each community report through the context compressor (``--context-budget`` tokens per report). Progress bars and warnings go to stderr. The exit status is 1 when some
chunks or reports failed (they are retried by the next ``update``), 2 on an error.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from llama_index_kgplus._lock import writer_lock
from llama_index_kgplus._paths import user_path
from llama_index_kgplus.cli import _args, _compression
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.llm import llm_from_spec

LLM_HELP = (
    "model spec (qwen2.5-coder-1.5b, qwen2.5-coder-0.5b, a .gguf path, openai-like:MODEL@URL, ollama:MODEL[@URL], "
    "bedrock:MODEL_ID) or 'module:factory' (a function returning any LlamaIndex LLM); default $KGPLUS_LLM or the "
    "1.5B model"
)


def _err(*parts: Any) -> None:
    print(*parts, file=sys.stderr, flush=True)


def _executor(args: argparse.Namespace) -> Any:
    from llama_index_kgplus.graphrag import AsyncioExecutor, RayExecutor

    if args.executor == "ray":
        factory = partial(llm_from_spec, args.llm, context_window=args.context_window, n_threads=args.threads)
        return RayExecutor.from_defaults(llm_factory=factory, num_workers=args.workers, address=args.ray_address)
    return AsyncioExecutor(num_workers=args.workers)


@contextmanager
def _opened_index(args: argparse.Namespace, **settings: Any) -> Iterator[Any]:
    """The store's index with the LLM and executor of ``args``; closed (and Ray stopped) afterwards."""
    from llama_index_kgplus.graphrag import GraphRAGIndex

    llm = llm_from_spec(args.llm, context_window=args.context_window, n_threads=args.threads)
    executor = _executor(args)
    index = GraphRAGIndex.from_defaults(
        args.store, llm=llm, executor=executor, show_progress=not args.quiet, **settings
    )
    try:
        yield index
    finally:
        index.close()
        executor.shutdown()


def _usage_line(stats: dict[str, Any]) -> str:
    estimated = " (estimated)" if stats.get("tokens_estimated") else ""
    return (
        f"LLM: {stats['llm_calls']} calls, {stats['prompt_tokens']:,} prompt tokens, "
        f"{stats['completion_tokens']:,} completion tokens{estimated}; {stats['seconds']:.1f} s"
    )


def _report_stats(args: argparse.Namespace, stats: Any, verb: str) -> int:
    data = stats.as_dict()
    failed = []
    if stats.chunks_failed:
        failed.append(f"{stats.chunks_failed} chunk(s) failed extraction")
    if stats.reports_failed:
        failed.append(f"{stats.reports_failed} community report(s) failed")
    lines = [
        f"{verb} {stats.documents} documents ({stats.documents_added} added, {stats.documents_changed} changed, "
        f"{stats.documents_deleted} deleted{', resumed an interrupted run' if stats.resumed else ''}): "
        f"{stats.chunks} chunks, {stats.entities} entities, {stats.relationships} relationships, "
        f"{stats.communities} communities",
        f"community reports: regenerated {stats.reports_regenerated} of {stats.reports_total} "
        f"({stats.reports_new} for new communities; {stats.reports_reused} unchanged, reused)",
        _usage_line(data),
    ]
    if args.json:
        print(json.dumps(stats.contract()), flush=True)
        for line in lines:
            _err(line)
    else:
        print("\n".join(lines), flush=True)
    if failed:
        _err(
            f"kgplus: warning: {'; '.join(failed)}; the failures are recorded in {args.store}/state.sqlite and "
            f"retried by the next `kgplus graphrag update`."
        )
        return 1
    return 0


def _index(args: argparse.Namespace) -> int:
    from llama_index_kgplus import load_corpus
    from llama_index_kgplus.graphrag._index import STATE_FILE

    store = user_path(args.store)
    _args.check_chunking(args.chunk_size, args.chunk_overlap)
    _args.check_output_dir(store, "--store", STATE_FILE)
    docs = load_corpus(args.docs_path)
    with writer_lock(store, "kgplus graphrag index"):  # a second writer is refused before the model loads
        return _index_locked(args, store, docs)


def _index_locked(args: argparse.Namespace, store: Path, docs: list[Any]) -> int:
    from llama_index_kgplus.graphrag._index import GRAPH_FILE, STATE_FILE

    if args.rebuild:
        (store / STATE_FILE).unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            (store / f"{STATE_FILE}{suffix}").unlink(missing_ok=True)
        graph = store / GRAPH_FILE
        if graph.is_dir():
            shutil.rmtree(graph)
        else:
            graph.unlink(missing_ok=True)
            Path(f"{graph}.wal").unlink(missing_ok=True)
    settings = {
        "chunk_size": args.chunk_size,
        "chunk_overlap": args.chunk_overlap,
        "detector": {"max_cluster_size": args.max_cluster_size, "random_state": args.seed},
        "extractor": {"min_entities": args.min_entities},
    }
    with _opened_index(args, **settings) as index:
        if index.exists() and not index.state.interrupted_runs():
            n = index.state.count("documents")
            raise InputDataError(
                f"{store} already holds a GraphRAG index of {n} documents. Run `kgplus graphrag update "
                f"{args.docs_path} --store {store}` to apply changes, or add --rebuild to start over."
            )
        stats = index.build(docs)
    return _report_stats(args, stats, "indexed")


def _update(args: argparse.Namespace) -> int:
    from llama_index_kgplus import load_corpus
    from llama_index_kgplus.graphrag._index import require_store

    require_store(args.store)
    docs = load_corpus(args.docs_path)
    with writer_lock(args.store, "kgplus graphrag update"), _opened_index(args) as index:
        stats = index.update(docs)
    return _report_stats(args, stats, "updated")


def _query(args: argparse.Namespace) -> int:
    from llama_index_kgplus.graphrag._index import require_store

    require_store(args.store)
    with _opened_index(args) as index:
        if not index.exists():
            raise InputDataError(
                f"The index in {args.store} is not finished: rerun `kgplus graphrag index` to resume it."
            )
        engine = index.as_query_engine(
            response_type=args.response_type,
            level=args.level,
            max_reports=args.max_reports,
            show_progress=not args.quiet,
            map_postprocessors=_compression.postprocessors(args, index.llm),
        )
        response = engine.query(args.question)
    meta = response.metadata
    sources = [
        {
            "doc_id": hit.node.metadata.get("doc_id"),
            "chunk_id": hit.node.node_id,
            "title": hit.node.metadata.get("title"),
            "score": round(float(hit.score or 0.0), 4),
            "text": hit.node.get_content(),
        }
        for hit in response.source_nodes
    ]
    record = {
        "answer": str(response.response),
        "question": args.question,
        "response_type": args.response_type,
        "level": args.level,
        "reports": meta["reports"],
        "documents": meta["documents"],
        "sources": sources,
        "key_points": meta["key_points"],
        **{k: meta[k] for k in ("llm_calls", "prompt_tokens", "completion_tokens", "seconds", "usage")},
    }
    if args.json:
        print(json.dumps(record, ensure_ascii=False), flush=True)
        _err(_usage_line({**meta}))
        return 0
    print(record["answer"].strip())
    if meta["reports"]:
        print(f"\nreports used ({len(meta['reports'])} of {meta['reports_read']} read):")
        for r in meta["reports"]:
            print(f"- [{r['community_id']}] {r['title']} (rating {r['rating']:g}, importance {r['importance']})")
    if meta["documents"]:
        print(f"\ncited documents (match frequency >= median {meta['median_match_frequency']:g}):")
        for d in meta["documents"]:
            print(f"- [{d['doc_id']}] {d['title']} ({d['match_frequency']} matches)")
        print("\nsupporting passages:")
        for s in sources:
            print(f"- [{s['chunk_id']}] {s['score']:.2f}: {' '.join(s['text'].split())[:140]}")
    print("\n" + _usage_line(meta))
    return 0


def _common(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--store", required=True, type=user_path, help="folder of the GraphRAG store (graph.lbug + state.sqlite)"
    )
    cmd.add_argument("--llm", default=None, help=LLM_HELP)
    cmd.add_argument(
        "--context-window",
        type=_args.positive_int,
        default=None,
        help="LLM context window in tokens (default: the model's)",
    )
    cmd.add_argument(
        "--threads",
        type=_args.positive_int,
        default=None,
        help="llama.cpp threads (default: all cores, 1 per Ray worker; 1 is much faster when other jobs share the cores)",
    )
    cmd.add_argument("--workers", type=_args.positive_int, default=4, help="LLM tasks in flight at once (default 4)")
    cmd.add_argument(
        "--executor",
        choices=("asyncio", "ray"),
        default="asyncio",
        help="run LLM batches in this process (asyncio, default) or on Ray",
    )
    cmd.add_argument("--ray-address", default=None, help="Ray cluster address (default: start a local Ray instance)")
    cmd.add_argument("--json", action="store_true", help="print JSON on stdout (progress and notes go to stderr)")
    cmd.add_argument("--quiet", action="store_true", help="no progress bars")


def register(commands: _args.Commands) -> None:
    gsub = commands.group(
        "graphrag", dest="graphrag_command", help="GraphRAG: communities, reports and global questions over a corpus"
    )

    index = gsub.add("index", help="extract entities, detect communities and write their reports")
    index.add_argument(
        "docs_path", metavar="DOCS_PATH", help="a folder of text files or a JSONL corpus (id, title, text)"
    )
    _common(index)
    index.add_argument("--rebuild", action="store_true", help="delete the store's graph and state first")
    index.add_argument("--chunk-size", type=_args.positive_int, default=512, help="chunk size in tokens (default 512)")
    index.add_argument(
        "--chunk-overlap", type=_args.non_negative_int, default=32, help="chunk overlap in tokens (default 32)"
    )
    index.add_argument(
        "--max-cluster-size",
        type=_args.positive_int,
        default=10,
        help="communities larger than this are split (default 10)",
    )
    index.add_argument("--seed", type=int, default=42, help="Leiden seed (default 42)")
    index.add_argument(
        "--min-entities",
        type=_args.non_negative_int,
        default=0,
        help="fewest entities per chunk (default 0; 1 stops a 0.5B model from replying with empty lists)",
    )
    index.set_defaults(func=_index)

    update = gsub.add("update", help="apply added, changed and deleted documents; regenerate changed reports only")
    update.add_argument("docs_path", metavar="DOCS_PATH", help="the corpus as it is now (folder or JSONL)")
    _common(update)
    update.set_defaults(func=_update)

    query = gsub.add("query", help="answer a global question by map-reduce over the community reports")
    query.add_argument("question", metavar="QUESTION")
    _common(query)
    query.add_argument(
        "--response-type",
        default="multiple paragraphs",
        help='shape of the answer, e.g. "bulleted report", "matrix table"',
    )
    query.add_argument(
        "--level",
        type=_args.non_negative_int,
        default=1,
        help="community level of the reports read (default 1; 0 is the coarsest)",
    )
    query.add_argument(
        "--max-reports", type=_args.positive_int, default=None, help="read only the highest-rated reports"
    )
    _compression.add_options(query, synthesize=False, compress="none")
    query.set_defaults(func=_query)
