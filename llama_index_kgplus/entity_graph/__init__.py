"""Multi-hop retrieval over an entity graph.

At ingestion, :class:`EntityLinker` (a ``TransformComponent``) records on every node the entities it mentions,
from document titles, a knowledge graph, a glossary, spaCy's named entities or the GraphRAG LLM extractor.
:class:`EntityGraph` keeps passages, entities and their links beside the vector index (and can copy them into
any property graph store). :class:`EntityGraphRetriever` seeds a personalized PageRank with the question's
entities and the top dense hits, and returns the passages the walk reaches, with the path that led to each.

Example::

    linker = EntityLinker.from_defaults(sources=["titles"])
    index = build_index(load_corpus("docs.jsonl"), "./index", extra_transformations=[linker])
    graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_)
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=8)
    retriever.retrieve("When did Lothair II's mother die?")
"""

from llama_index_kgplus.entity_graph._dictionary import SAME_AS, Entity, EntityDictionary, EntityMatch
from llama_index_kgplus.entity_graph._graph import GRAPH_FILE, MENTIONS, EntityGraph
from llama_index_kgplus.entity_graph._linker import ENTITIES_KEY, RELATIONSHIPS_KEY, EntityLinker
from llama_index_kgplus.entity_graph._names import entity_key, is_linkable_name, strip_qualifier
from llama_index_kgplus.entity_graph._ner import SpacyEntityExtractor
from llama_index_kgplus.entity_graph._pagerank import personalized_pagerank, transition_matrix
from llama_index_kgplus.entity_graph._retriever import METADATA_KEY, EntityGraphRetriever, GraphRetrievalSettings
from llama_index_kgplus.entity_graph._sources import ENTITY_SOURCES, parse_sources

__all__ = [
    "ENTITIES_KEY",
    "ENTITY_SOURCES",
    "GRAPH_FILE",
    "MENTIONS",
    "METADATA_KEY",
    "RELATIONSHIPS_KEY",
    "SAME_AS",
    "Entity",
    "EntityDictionary",
    "EntityGraph",
    "EntityGraphRetriever",
    "EntityLinker",
    "EntityMatch",
    "GraphRetrievalSettings",
    "SpacyEntityExtractor",
    "entity_key",
    "is_linkable_name",
    "parse_sources",
    "personalized_pagerank",
    "strip_qualifier",
    "transition_matrix",
]
