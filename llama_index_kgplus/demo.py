"""``kgplus demo``: the main job, end to end on the bundled sample and the embedded offline defaults.

1. Ingests eight pages of the Python tutorial into a persisted vector index under ``$KGPLUS_HOME/demo``, with
   a level of semantic-chunk summary nodes (extractive summaries, so ingestion needs no LLM call).
2. Answers a question with the hierarchical retriever (collapsed: chunks and summaries ranked together).
3. Answers a question with the glossary query engine (top-level ``glossary.json``) and shows the rewrite.
4. Imports the bundled UMLS semantic network into an embedded graph store and answers a question with the
   KG-augmented engine, showing the entities found and the relationship paths used (from the paths alone:
   the tutorial pages say nothing about that graph).

Each answer is printed with its sources (document id, summary level, score).
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.query_engine import RetrieverQueryEngine

from llama_index_kgplus import defaults
from llama_index_kgplus.corpus import load_corpus
from llama_index_kgplus.glossary import GlossaryQueryEngine
from llama_index_kgplus.hierarchy import (
    HierarchicalRetriever,
    SemanticChunkingSummaryNodeBuilder,
    read_manifest,
    write_manifest,
)
from llama_index_kgplus.indexing import build_index, load_index
from llama_index_kgplus.kg import KGAugmentedQueryEngine, KGPathRetriever, KnowledgeGraph, import_kg
from llama_index_kgplus.sample import SAMPLE_DOCS, SAMPLE_KG_NODES, SAMPLE_KG_RELATIONSHIPS, sample_glossary_path
from llama_index_kgplus.summarizers import ExtractiveSummarizer

HIERARCHY_QUESTION = "How do I create a virtual environment, and how do I activate it?"
GLOSSARY_QUESTION = "How can a function clean up resources whether or not an exception occurs?"
KG_QUESTION = "How is a virus related to a disease or syndrome?"


def _sources(response: Any, out: TextIO) -> None:
    for hit in response.source_nodes:
        meta = hit.node.metadata
        if meta.get("source") == "knowledge_graph":
            print(f"   - [knowledge graph] {len(meta.get('kg_path', []))} relationship paths", file=out)
            continue
        doc = meta.get("doc_id") or ",".join(meta.get("doc_ids", []))
        snippet = " ".join(hit.node.get_content().split())[:100]
        score = f"{hit.score:.2f}" if hit.score is not None else "-"
        print(f"   - [{doc}] level {meta.get('level', 0)}, score {score}: {snippet}...", file=out)


def _answer(label: str, question: str, engine: Any, out: TextIO) -> Any:
    started = time.perf_counter()
    response = engine.query(question)
    print(f"\n[{label}] Q: {question}", file=out)
    meta = response.metadata or {}
    if "glossary_terms" in meta:
        print(f"   glossary terms: {', '.join(meta['glossary_terms']) or '-'}", file=out)
        if meta.get("fallback_reason"):
            print(f"   proposed rewrite: {meta.get('proposed_query')}", file=out)
            print(f"   refused, the original query was used: {meta['fallback_reason']}", file=out)
        else:
            print(f"   rewritten query: {meta['rewritten_query']}", file=out)
    if "kg_entities" in meta:
        print(f"   entities: {', '.join(e['name'] for e in meta['kg_entities']) or '-'}", file=out)
        for path in meta.get("kg_paths", [])[:5]:
            print(f"   path: {path['text']}", file=out)
    print(f"A: {str(response).strip()}", file=out)
    print(f"   ({time.perf_counter() - started:.1f} s) sources:", file=out)
    _sources(response, out)
    return response


def _demo_index(embed_model: BaseEmbedding, out: TextIO) -> VectorStoreIndex:
    index_dir = defaults.kgplus_home() / "demo" / "index"
    if (index_dir / "docstore.json").is_file() and read_manifest(index_dir):
        print(f"[demo] loaded the vector index from {index_dir}", file=out)
        return load_index(index_dir, embed_model=embed_model)
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


def _demo_graph(out: TextIO) -> KnowledgeGraph:
    uri = f"ladybug://{defaults.kgplus_home() / 'demo' / 'kg.lbug'}"
    graph = KnowledgeGraph.open(uri)
    if not graph.exists():
        report = import_kg(graph, SAMPLE_KG_NODES, SAMPLE_KG_RELATIONSHIPS)
        print(f"[demo] {report.summary()}", file=out)
    return graph


def run_demo(
    *,
    llm: LLM | None = None,
    embed_model: BaseEmbedding | None = None,
    top_k: int = 3,
    out: TextIO = sys.stdout,
) -> dict[str, Any]:
    """Run the demo; return the LlamaIndex ``Response`` of each step (``hierarchy``, ``glossary``, ``kg``)."""
    embed_model = embed_model or defaults.default_embed_model()
    llm = llm or defaults.default_llm()
    print(f"[demo] embedding model: {embed_model.model_name}", file=out)
    print(f"[demo] LLM: {getattr(llm, 'model_path', llm.metadata.model_name)}", file=out)
    Settings.embed_model, Settings.llm = embed_model, llm

    index = _demo_index(embed_model, out)
    retriever = HierarchicalRetriever.from_index(index, mode="collapsed", similarity_top_k=top_k)
    hierarchy_engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
    responses = {"hierarchy": _answer("hierarchy", HIERARCHY_QUESTION, hierarchy_engine, out)}

    glossary_engine = GlossaryQueryEngine.from_defaults(
        sample_glossary_path(), index=index, similarity_top_k=top_k, llm=llm, embed_model=embed_model
    )
    responses["glossary"] = _answer("glossary", GLOSSARY_QUESTION, glossary_engine, out)

    # The tutorial pages say nothing about the UMLS semantic network, so this engine answers from the paths alone;
    # pass retriever=index.as_retriever() to combine both, as with a corpus that matches the graph.
    graph = _demo_graph(out)
    kg_engine = KGAugmentedQueryEngine.from_defaults(KGPathRetriever.from_defaults(graph, max_paths=5), llm=llm)
    responses["kg"] = _answer("kg", KG_QUESTION, kg_engine, out)
    return responses
