"""The entity-graph options of ``kgplus ingest`` / ``retrieve`` / ``query`` (used by ``_index``; no commands).

``kgplus ingest DOCS --index DIR --entities titles,kg,glossary,ner,llm [--kg-store URI] [--glossary FILE]
[--entity-store URI]`` links every chunk to the entities it mentions and writes ``entity_graph.npz`` with the
index (switched in with it: see ``_indexing``), then copies the graph into a graph store;
``kgplus retrieve|query ... --retrieval graph`` ranks passages by personalized PageRank from the question's
entities and the top dense hits. Each source of the JSON output then also carries ``why``: the walk's
score, the question's entities and the path that reached the passage.
"""

from __future__ import annotations

import argparse
from typing import Any

from llama_index_kgplus._redact import recordable, redact_url
from llama_index_kgplus.cli import _args


def add_ingest_options(parser: argparse.ArgumentParser) -> None:
    from llama_index_kgplus.entity_graph._sources import ENTITY_SOURCES

    group = parser.add_argument_group("entity graph (multi-hop retrieval)")
    group.add_argument(
        "--entities",
        default=None,
        metavar="SOURCES",
        type=_sources,
        help=f"link chunks to entities from a comma list of sources ({', '.join(ENTITY_SOURCES)}) and build the "
        "entity graph for --retrieval graph",
    )
    group.add_argument("--kg-store", default=None, metavar="URI", help="knowledge graph of the kg source")
    group.add_argument("--glossary", default=None, metavar="FILE", help="glossary .json or .csv of the glossary source")
    group.add_argument(
        "--similar-entities",
        type=_cosine,
        default=None,
        metavar="COSINE",
        help="also link entities whose names embed at least this close (SIMILAR_TO edges, e.g. 0.8; one embedding "
        "per entity)",
    )
    group.add_argument(
        "--entity-store",
        default=None,
        metavar="URI",
        help="also copy the entity graph into this graph store (ladybug://, falkordb://, neo4j://)",
    )


def add_retrieval_options(parser: argparse.ArgumentParser) -> None:
    from llama_index_kgplus.entity_graph import GraphRetrievalSettings

    damping = GraphRetrievalSettings().damping
    group = parser.add_argument_group("entity graph retrieval (--retrieval graph)")
    group.add_argument(
        "--damping", type=_args.fraction, default=None, help=f"probability that the walk goes on (default {damping})"
    )
    group.add_argument(
        "--max-hops", type=_args.positive_int, default=None, help="longest walk from a seed, in edges (default none)"
    )
    group.add_argument("--with-parents", action="store_true", help="follow each hit by its summary parent")
    group.add_argument(
        "--first-stage",
        choices=["dense", "hybrid"],
        default=None,
        help="hits that seed the walk: dense (default) or BM25 + dense (the bm25 extra)",
    )
    group.add_argument(
        "--entity-embedding-top-k",
        type=_args.positive_int,
        default=None,
        metavar="N",
        help="also seed the N entities whose names embed nearest the question (default 0: the dictionary only)",
    )
    group.add_argument(
        "--sentence-seeds",
        type=_args.non_negative_int,
        default=None,
        metavar="N",
        help="seed the entities of the N sentences of the top dense hits nearest the question "
        f"(default {GraphRetrievalSettings().sentence_seeds}; 0: none, and no sentence embedded per question)",
    )


def _cosine(value: str) -> float:
    try:
        cosine = float(value)
    except ValueError:
        cosine = float("nan")
    if not -1.0 <= cosine <= 1.0:
        raise argparse.ArgumentTypeError(f"takes a cosine from -1 to 1, not {value}")
    return cosine


def _sources(value: str) -> list[str]:
    from llama_index_kgplus.entity_graph._sources import parse_sources
    from llama_index_kgplus.errors import InputDataError

    try:
        return parse_sources(value)
    except InputDataError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def ingest_settings(args: argparse.Namespace) -> dict[str, Any] | None:
    """The entity settings of ``kgplus ingest`` (None without ``--entities``), as ``ingest.json`` records them so
    that ``kgplus sync`` links new chunks the same way (a URI with a password is not recorded: give it again)."""
    if not args.entities:
        return None
    from pathlib import Path

    return {
        "sources": list(args.entities),
        "kg_store": recordable(args.kg_store),
        "glossary": str(Path(args.glossary).resolve()) if args.glossary else None,
        "llm": recordable(getattr(args, "llm", None)),
        "similar_entities": args.similar_entities,
    }


def make_linker(args: argparse.Namespace) -> Any | None:
    """The EntityLinker that ``--entities`` asks for (None without it); sources are checked before any
    model loads."""
    if not args.entities:
        return None
    from llama_index_kgplus._syncing import entity_linker

    settings = {**(ingest_settings(args) or {}), "kg_store": args.kg_store}
    return entity_linker(settings, args.llm if "llm" in args.entities else None)


def entity_graph(index: Any, linker: Any | None, embed_model: Any = None, similar: float | None = None) -> Any | None:
    """The entity graph of a new index (None without ``--entities``), with ``SIMILAR_TO`` edges at the cosine
    ``similar`` (``--similar-entities``)."""
    if linker is None:
        return None
    from llama_index_kgplus.entity_graph import EntityGraph

    graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id)
    if similar is not None:
        graph.link_similar_entities(embed_model, threshold=similar)
    return graph


def files(graph: Any | None) -> dict[str, Any]:
    """``entity_graph.npz`` and its writer, to be persisted with the index."""
    from llama_index_kgplus.entity_graph import GRAPH_FILE

    return {} if graph is None else {GRAPH_FILE: graph.write_file}


def after_ingest(args: argparse.Namespace, index: Any, linker: Any | None, graph: Any | None) -> None:
    """Copy the entity graph of the new index into ``--entity-store`` (if given) and say what it holds."""
    if linker is None or graph is None:
        return
    if args.entity_store:
        from llama_index_kgplus.graph_stores import open_graph_store

        counts = graph.write_to_store(open_graph_store(args.entity_store), docstore=index.docstore)
        print(
            f"entity graph copied to {redact_url(args.entity_store)}: {counts['entities']} entities, {counts['passages']} "
            f"passages, {counts['relationships']} relationships"
        )
    print(
        f"entity graph ({','.join(linker.sources)}): {graph.n_entities} entities, {graph.n_mentions} links in "
        f"{graph.n_linked_passages} of {graph.n_passages} passages, {len(graph.entity_edges())} entity-entity "
        f"edges; LLM calls: {linker.llm_calls_}"
    )


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """The EntityGraphRetriever settings of the ``--retrieval graph`` options (the retriever's defaults for the
    options not given)."""
    given = {
        "include_parents": args.with_parents,
        "damping": args.damping,
        "max_hops": args.max_hops,
        "first_stage": args.first_stage,
        "entity_embedding_top_k": args.entity_embedding_top_k,
        "sentence_seeds": args.sentence_seeds,
    }
    return {key: value for key, value in given.items() if value is not None}
