"""The hierarchy options of ``kgplus ingest`` / ``retrieve`` / ``query`` (used by ``_index``; no commands).

``kgplus ingest DOCS --index DIR --hierarchy none|semantic|raptor`` adds summary nodes (and writes
``hierarchy.json`` beside the index); ``kgplus retrieve|query ... --retrieval evidence|collapsed|tree`` lets summaries
lead to their chunks (the default on an index with summaries), searches all levels at once, or walks top-down.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from llama_index_kgplus._redact import recordable
from llama_index_kgplus.cli import _args


def add_ingest_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("hierarchical summaries")
    group.add_argument(
        "--hierarchy",
        choices=("none", "semantic", "raptor"),
        default="none",
        help="add summary nodes: semantic (runs of similar consecutive chunks) or raptor (cluster tree); default none",
    )
    group.add_argument(
        "--summarizer",
        choices=("two-stage", "extractive", "abstractive"),
        default="two-stage",
        help="how summaries are written: extractive sentences then the LLM (default), sentences only (no LLM), LLM only",
    )
    group.add_argument("--llm", default=None, help="model spec for summaries; default $KGPLUS_LLM")
    group.add_argument(
        "--cluster-size", type=_args.positive_int, default=5, help="semantic: desired chunks per summary (default 5)"
    )
    group.add_argument(
        "--max-levels",
        type=_args.positive_int,
        default=None,
        help="levels of summaries (default: semantic 1, raptor 3)",
    )
    group.add_argument("--seed", type=int, default=0, help="random seed of the clustering (default 0)")
    group.add_argument(
        "--workers",
        type=_args.positive_int,
        default=None,
        help="summaries written at once (default: the builder's; more pays off with a served --llm)",
    )


def add_retrieval_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--retrieval",
        choices=("collapsed", "tree", "evidence", "graph"),
        default=None,
        help="evidence (default on an index with summaries): summaries lead to their chunks, each question of a "
        "text that asks several searched on its own; collapsed (default otherwise): top-k over chunks and summaries at once; "
        "tree: top-down from the summaries; "
        "graph: personalized PageRank over the entity graph (an index built with --entities)",
    )
    parser.add_argument("--expand-children", action="store_true", help="follow each summary hit by its children")


def settings(args: argparse.Namespace) -> dict[str, Any] | None:
    """The hierarchy settings of ``kgplus ingest`` (None for ``--hierarchy none``), as ``ingest.json`` records them
    so that ``kgplus sync`` writes new summaries the same way."""
    if args.hierarchy == "none":
        return None
    return {
        "kind": args.hierarchy,
        "summarizer": args.summarizer,
        "llm": recordable(args.llm),
        "cluster_size": args.cluster_size,
        "max_levels": args.max_levels,
        "seed": args.seed,
        "workers": args.workers,
    }


def make_builders(args: argparse.Namespace, embed_model: Any) -> list[Any]:
    """The summary node builder that ``--hierarchy`` asks for (an empty list for ``none``)."""
    from llama_index_kgplus._syncing import summary_builders

    return summary_builders(settings(args), embed_model, args.llm)


def manifest(index: Any, builders: list[Any]) -> dict[str, Any] | None:
    """The ``hierarchy.json`` of a new index (None without ``--hierarchy``)."""
    if not builders:
        return None
    from llama_index_kgplus.hierarchy._retriever import hierarchy_manifest

    return hierarchy_manifest(list(index.docstore.docs.values()), builders[0])


def files(manifest: dict[str, Any] | None) -> dict[str, Any]:
    """``hierarchy.json`` and its writer, to be persisted with the index."""
    from llama_index_kgplus._files import json_writer
    from llama_index_kgplus.hierarchy._retriever import MANIFEST_FILE

    return {} if manifest is None else {MANIFEST_FILE: json_writer(manifest, indent=1, default=str)}


def after_ingest(args: argparse.Namespace, manifest: dict[str, Any] | None) -> None:
    """Say how many summaries were made (and which clusters failed)."""
    if manifest is None:
        return
    levels = ", ".join(f"level {k}: {v}" for k, v in manifest["nodes_per_level"].items())
    print(f"hierarchy ({args.hierarchy}): {levels}")
    for failed in manifest["failed_clusters"]:
        print(
            f"kgplus: warning: a level-{failed['level']} summary of {len(failed['child_ids'])} nodes failed "
            f"({failed['error']}); its children are indexed without it",
            file=sys.stderr,
        )
