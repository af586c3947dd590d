"""Multi-hop retrieval over an entity graph.

At ingestion, :class:`EntityLinker` (a ``TransformComponent``) records on every node the entities it mentions,
from document titles, a knowledge graph, a glossary, spaCy's named entities or the GraphRAG LLM extractor.
:class:`EntityGraph` keeps passages, entities and their links beside the vector index (and can copy them into
any property graph store). :class:`EntityGraphRetriever` seeds a personalized PageRank with the question's
entities and the top dense hits, and returns the passages the walk reaches, with the path that led to each.
Options: a BM25 + dense first stage (``first_stage="hybrid"``), ``SIMILAR_TO`` edges between entities whose
names embed close together (:meth:`EntityGraph.link_similar_entities`), question entities matched by embedding
(``entity_embedding_top_k``).

Example:

```python
linker = EntityLinker.from_defaults(sources=["titles"])
index = build_index(load_corpus("docs.jsonl"), "./index", extra_transformations=[linker])
graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_)
retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=8)
retriever.retrieve("When did Lothair II's mother die?")
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.entity_graph._dictionary import EntityDictionary
from llama_index_kgplus.entity_graph._graph import EntityGraph
from llama_index_kgplus.entity_graph._linker import EntityLinker
from llama_index_kgplus.entity_graph._ner import SpacyEntityExtractor
from llama_index_kgplus.entity_graph._retriever import EntityGraphRetriever, GraphRetrievalSettings

__all__ = [
    "EntityGraph",
    "EntityLinker",
    "EntityGraphRetriever",
    "EntityDictionary",
    "SpacyEntityExtractor",
    "GraphRetrievalSettings",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "ENTITIES_KEY": "llama_index_kgplus.entity_graph._linker:ENTITIES_KEY",
        "Entity": "llama_index_kgplus.entity_graph._dictionary:Entity",
        "entity_key": "llama_index_kgplus.entity_graph._names:entity_key",
        "ENTITY_SOURCES": "llama_index_kgplus.entity_graph._sources:ENTITY_SOURCES",
        "EntityMatch": "llama_index_kgplus.entity_graph._dictionary:EntityMatch",
        "GRAPH_FILE": "llama_index_kgplus.entity_graph._graph:GRAPH_FILE",
        "is_linkable_name": "llama_index_kgplus.entity_graph._names:is_linkable_name",
        "MENTIONS": "llama_index_kgplus.entity_graph._graph:MENTIONS",
        "METADATA_KEY": "llama_index_kgplus.entity_graph._retriever:METADATA_KEY",
        "parse_sources": "llama_index_kgplus.entity_graph._sources:parse_sources",
        "personalized_pagerank": "llama_index_kgplus.entity_graph._pagerank:personalized_pagerank",
        "RELATIONSHIPS_KEY": "llama_index_kgplus.entity_graph._linker:RELATIONSHIPS_KEY",
        "SAME_AS": "llama_index_kgplus.entity_graph._dictionary:SAME_AS",
        "strip_qualifier": "llama_index_kgplus.entity_graph._names:strip_qualifier",
        "transition_matrix": "llama_index_kgplus.entity_graph._pagerank:transition_matrix",
    },
)
