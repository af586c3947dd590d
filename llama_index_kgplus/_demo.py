"""``kgplus demo``: the main job, end to end on the bundled sample and the embedded offline defaults.

1. Ingests eight pages of the Python tutorial into a persisted vector index under ``$KGPLUS_HOME/demo``, with
   a level of semantic-chunk summary nodes (extractive summaries, so ingestion needs no LLM call).
2. Answers a question with the hierarchical retriever (collapsed: chunks and summaries ranked together).
3. Answers a question with the glossary query engine (top-level ``glossary.json``) and shows the rewrite.
4. Imports the bundled UMLS semantic network into an embedded graph store and answers a question with the
   KG-augmented engine, showing the entities found and the relationship paths used (from the paths alone:
   the tutorial pages say nothing about that graph).
5. Ingests 120 short Wikipedia passages of 2WikiMultihopQA with their titles as entities (no LLM call) and
   answers a bridge question with the entity-graph retriever, showing the path that reached each passage and
   the passages plain vector search returns instead.
6. Routes one question of each kind the demo's data supports (local, multi-hop, KG, table) with the zero-LLM
   :class:`~llama_index_kgplus.router.QuestionRouter`, showing each route's score and why, and answers the table
   question (bundled Seattle weather CSV) through the routed engine with text-to-SQL, showing the SQL.

Each answer streams as it is generated, from passages compressed to the sentences the question needs
(:class:`~llama_index_kgplus.compression.ContextCompressor`, ``context_budget`` tokens), and is followed by its
sources (document id, summary level, score, sentences kept) and its usage (LLM calls, tokens, seconds, time to
the first token).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine

from llama_index_kgplus import _defaults
from llama_index_kgplus._assembly import KGPlusSources
from llama_index_kgplus._corpus import load_corpus
from llama_index_kgplus._indexing import build_index, load_index
from llama_index_kgplus.compression import ContextCompressor
from llama_index_kgplus.compression._compressor import DEFAULT_CONTEXT_BUDGET
from llama_index_kgplus.entity_graph import EntityGraph, EntityGraphRetriever, EntityLinker
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.glossary import GlossaryQueryEngine
from llama_index_kgplus.graph_stores import ladybug_uri
from llama_index_kgplus.hierarchy import HierarchicalRetriever, SemanticChunkingSummaryNodeBuilder
from llama_index_kgplus.hierarchy._retriever import read_manifest, write_manifest
from llama_index_kgplus.kg import KGAugmentedQueryEngine, KGPathRetriever, KnowledgeGraph, import_kg
from llama_index_kgplus.llm import AnswerUsage, attach_usage, embed_model_from_spec, llm_from_spec, metered
from llama_index_kgplus.llm._usage import format_usage
from llama_index_kgplus.sample import (
    SAMPLE_DOCS,
    SAMPLE_KG_NODES,
    SAMPLE_KG_RELATIONSHIPS,
    SAMPLE_MULTIHOP_DOCS,
    SAMPLE_WEATHER_TABLE,
    sample_glossary_path,
)
from llama_index_kgplus.summarizers import ExtractiveSummarizer
from llama_index_kgplus.tables import SQLTables

__all__ = [
    "run_demo",
    "workbench_command",
]

HIERARCHY_QUESTION = "How do I create a virtual environment, and how do I activate it?"
GLOSSARY_QUESTION = "How can a function clean up resources whether or not an exception occurs?"
KG_QUESTION = "How is a virus related to a disease or syndrome?"
MULTIHOP_QUESTION = "When did Lothair II's mother die?"
TABLE_QUESTION = "What was the total precipitation in Seattle in 2014?"
WEATHER_TABLE_DESCRIPTION = "Seattle's daily weather 2012-2015: precipitation in mm, temperatures in °C, wind in m/s"


def _sources(response: Any, out: TextIO) -> None:
    for hit in response.source_nodes:
        meta = hit.node.metadata
        if meta.get("source") == "knowledge_graph":
            print(f"   - [knowledge graph] {len(meta.get('kg_path', []))} relationship paths", file=out)
            continue
        doc = meta.get("doc_id") or ",".join(meta.get("doc_ids", []))
        snippet = " ".join(hit.node.get_content().split())[:100]
        score = f"{hit.score:.2f}" if hit.score is not None else "-"
        kept = meta.get("compression")
        kept = f", kept {kept['kept_units']}/{kept['units']} sentences" if kept else ""
        print(f"   - [{doc}] level {meta.get('level', 0)}, score {score}{kept}: {snippet}...", file=out)
        steps = [step for step in meta.get("entity_graph", {}).get("path", []) if "to" in step]
        if steps:
            walk = " ".join(f"-{step['edge']}-> {_label(step['to'])}" for step in steps)
            print(f"     reached by: {_label(steps[0]['from'])} {walk}", file=out)


def _label(node: dict[str, str]) -> str:
    return node["entity"] if "entity" in node else f"[{node['doc_id']}]"


def _answer(label: str, question: str, engine: Any, out: TextIO, llm: LLM) -> Any:
    print(f"\n[{label}] Q: {question}", file=out, flush=True)
    usage = AnswerUsage(llm)
    response = engine.query(question)
    if "usage" not in (response.metadata or {}):  # this pack's GlossaryQueryEngine and KG engine measure themselves
        response = attach_usage(response, usage)
    meta = response.metadata or {}
    if "glossary_terms" in meta:
        print(f"   glossary terms: {', '.join(meta['glossary_terms']) or '-'}", file=out)
        if meta.get("fallback_reason"):
            print(f"   proposed rewrite: {meta.get('proposed_query')}", file=out)
            print(f"   refused, the original query was used: {meta['fallback_reason']}", file=out)
        else:
            print(f"   rewritten query: {meta['rewritten_query']}", file=out)
    if response.source_nodes and "entity_graph" in response.source_nodes[0].node.metadata:
        why = response.source_nodes[0].node.metadata["entity_graph"]
        print(f"   question entities: {', '.join(why['question_entities']) or '-'}", file=out)
    if "kg_entities" in meta:
        print(f"   entities: {', '.join(e['name'] for e in meta['kg_entities']) or '-'}", file=out)
        for path in meta.get("kg_paths", [])[:5]:
            print(f"   path: {path['text']}", file=out)
    if "sql" in meta:
        print(f"   SQL: {meta['sql']}", file=out)
    print("A: ", end="", file=out, flush=True)
    if hasattr(response, "response_gen"):
        parts = []
        for token in response.response_gen:
            parts.append(token)
            print(token, end="", file=out, flush=True)
        response.response_txt = "".join(parts).strip()
    else:
        print(response.response, end="", file=out, flush=True)
    print(f"\n   {format_usage(response.metadata['usage'])}\n   sources:", file=out)
    _sources(response, out)
    return response


def _demo_index(embed_model: BaseEmbedding, out: TextIO) -> VectorStoreIndex:
    index_dir = _defaults.kgplus_home() / "demo" / "index"
    if (index_dir / "docstore.json").is_file() and read_manifest(index_dir):
        loaded = _reusable(index_dir, embed_model, out)
        if loaded is not None:
            print(f"[demo] loaded the vector index from {index_dir}", file=out)
            return loaded
    docs = load_corpus(SAMPLE_DOCS)
    builder = SemanticChunkingSummaryNodeBuilder(
        embed_model=embed_model, summarizer=ExtractiveSummarizer(embed_model=embed_model), cluster_size=5
    )
    started = time.perf_counter()
    index = build_index(docs, index_dir, embed_model=embed_model, extra_transformations=[builder])
    manifest = write_manifest(index_dir, list(index.docstore.docs.values()), builder)
    levels = ", ".join(f"level {k}: {v}" for k, v in manifest["nodes_per_level"].items())
    print(f"[demo] indexed {len(docs)} documents ({levels}) in {time.perf_counter() - started:.1f} s", file=out)
    return index


def _reusable(index_dir: Path, embed_model: BaseEmbedding, out: TextIO) -> VectorStoreIndex | None:
    """The index an earlier demo run left, or None (and why) when it cannot serve this run (e.g. it was built
    with another embedding model)."""
    try:
        return load_index(index_dir, embed_model=embed_model)
    except InputDataError as exc:
        print(f"[demo] building the index again: {exc}", file=out)
        return None


def _demo_graph(out: TextIO) -> KnowledgeGraph:
    uri = ladybug_uri(_defaults.kgplus_home() / "demo" / "kg.lbug")
    graph = KnowledgeGraph.open(uri, create=True)
    if not graph.exists():
        report = import_kg(graph, SAMPLE_KG_NODES, SAMPLE_KG_RELATIONSHIPS)
        print(f"[demo] {report.summary()}", file=out)
    return graph


def _demo_multihop(embed_model: BaseEmbedding, out: TextIO) -> tuple[VectorStoreIndex, EntityGraph]:
    index_dir = _defaults.kgplus_home() / "demo" / "multihop"
    if EntityGraph.exists(index_dir) and (index_dir / "docstore.json").is_file():
        index = _reusable(index_dir, embed_model, out)
        if index is not None:
            return index, EntityGraph.load(index_dir, index_id=index.index_id)
    linker = EntityLinker.from_defaults(["titles"])
    started = time.perf_counter()
    index = build_index(
        load_corpus(SAMPLE_MULTIHOP_DOCS), index_dir, embed_model=embed_model, extra_transformations=[linker]
    )
    graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id)
    graph.persist(index_dir)
    print(
        f"[demo] indexed {graph.n_passages} 2WikiMultihopQA passages with {graph.n_entities} title entities and "
        f"{graph.n_mentions} links in {time.perf_counter() - started:.1f} s (no LLM call)",
        file=out,
    )
    return index, graph


def run_demo(
    *,
    llm: LLM | None = None,
    embed_model: BaseEmbedding | None = None,
    top_k: int = 3,
    context_budget: int | None = DEFAULT_CONTEXT_BUDGET,
    out: TextIO = sys.stdout,
) -> dict[str, Any]:
    """Run the demo; return the LlamaIndex response of each step (``hierarchy``, ``glossary``, ``kg``, ``multihop``,
    ``table``), streamed ones already read (``str(response)`` is the answer), and the routing decisions
    (``routes``). ``context_budget=None``: no compression."""
    embed_model = embed_model or embed_model_from_spec()
    llm = metered(llm or llm_from_spec())
    post: list[BaseNodePostprocessor] = (
        [ContextCompressor.from_defaults(context_budget, embed_model=embed_model, llm=llm)] if context_budget else []
    )
    print(f"[demo] embedding model: {embed_model.model_name}", file=out)
    print(f"[demo] LLM: {getattr(llm, 'model_path', llm.metadata.model_name)}", file=out)
    Settings.embed_model, Settings.llm = embed_model, llm

    index = _demo_index(embed_model, out)
    retriever = HierarchicalRetriever.from_index(index, mode="collapsed", similarity_top_k=top_k)
    hierarchy_engine = RetrieverQueryEngine.from_args(retriever, llm=llm, node_postprocessors=post, streaming=True)
    responses = {"hierarchy": _answer("hierarchy", HIERARCHY_QUESTION, hierarchy_engine, out, llm)}

    glossary_engine = GlossaryQueryEngine.from_defaults(
        sample_glossary_path(), index=index, similarity_top_k=top_k, llm=llm, embed_model=embed_model,
        node_postprocessors=post, streaming=True,
    )  # fmt: skip
    responses["glossary"] = _answer("glossary", GLOSSARY_QUESTION, glossary_engine, out, llm)

    # The tutorial pages say nothing about the UMLS semantic network, so this engine answers from the paths alone;
    # pass retriever=index.as_retriever() to combine both, as with a corpus that matches the graph.
    graph = _demo_graph(out)
    kg_retriever = KGPathRetriever.from_defaults(graph, max_paths=5)
    kg_engine = KGAugmentedQueryEngine.from_defaults(kg_retriever, llm=llm, streaming=True)
    responses["kg"] = _answer("kg", KG_QUESTION, kg_engine, out, llm)

    multihop_index, entity_graph = _demo_multihop(embed_model, out)
    graph_retriever = EntityGraphRetriever.from_index(multihop_index, entity_graph, similarity_top_k=4)
    multihop_engine = RetrieverQueryEngine.from_args(graph_retriever, llm=llm, node_postprocessors=post, streaming=True)
    responses["multihop"] = _answer("multi-hop", MULTIHOP_QUESTION, multihop_engine, out, llm)
    vector_hits = multihop_index.as_retriever(similarity_top_k=4).retrieve(MULTIHOP_QUESTION)
    print(f"   plain vector search, top 4: {', '.join(h.node.metadata['doc_id'] for h in vector_hits)}", file=out)

    tables = SQLTables()
    tables.add("weather", SAMPLE_WEATHER_TABLE, description=WEATHER_TABLE_DESCRIPTION)
    sources = KGPlusSources(
        index=index, kg_store=graph, tables=tables, llm=llm, embed_model=embed_model, similarity_top_k=top_k,
        context_budget=context_budget, retrieval_mode="collapsed", streaming=True,
    )  # fmt: skip
    router, routed = sources.router(), sources.routed_query_engine()
    print("\n[routing] one question of each kind the demo's data supports (no LLM call):", file=out)
    questions = [HIERARCHY_QUESTION, MULTIHOP_QUESTION, KG_QUESTION, TABLE_QUESTION]
    responses["routes"] = router.route_many(questions)
    for decision in responses["routes"]:
        print(f"   {decision.route:>8} <- {decision.question}\n            {decision.reason}", file=out)
    responses["table"] = _answer("table, routed", TABLE_QUESTION, routed, out, llm)
    print(f"\n[demo] see why, source by source, in the browser: {workbench_command()}", file=out)
    return responses


def workbench_command() -> str:
    """The ``kgplus ui`` command line that opens the browser workbench on the demo's data."""
    import shlex

    home = _defaults.kgplus_home() / "demo"
    parts = ["kgplus", "ui", "--index", str(home / "index"), "--kg-store", ladybug_uri(home / "kg.lbug"),
             "--glossary", str(sample_glossary_path()), "--table", f"weather={SAMPLE_WEATHER_TABLE}"]  # fmt: skip
    return " ".join(shlex.quote(p) for p in parts)
