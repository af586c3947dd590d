"""Graph stores named by URI, shared by the KG path retrieval and GraphRAG."""

from llama_index_kgplus.graph_stores._open import open_graph_store
from llama_index_kgplus.graph_stores._uri import GraphStoreURI

__all__ = ["GraphStoreURI", "open_graph_store"]
