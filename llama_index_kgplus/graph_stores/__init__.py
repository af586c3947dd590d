"""Graph stores named by URI, shared by the KG path retrieval and GraphRAG; per-engine Cypher dialects and
driver adapters; any other LlamaIndex property graph store read through its API."""

from llama_index_kgplus.graph_stores._dialects import (
    IDENTIFIER_RE,
    MAX_HOPS_LIMIT,
    GraphDialect,
    GraphLayout,
    NodeRecord,
    RawPath,
    RelRecord,
    StoreAPIDialect,
    dialect_for_engine,
    dialect_for_store,
    quote_identifier,
)
from llama_index_kgplus.graph_stores._drivers import GraphDriver, record_connection
from llama_index_kgplus.graph_stores._open import open_graph_store
from llama_index_kgplus.graph_stores._uri import GraphStoreURI, default_graph_store_uri, ladybug_uri

__all__ = [
    "IDENTIFIER_RE",
    "LadybugGraphStore",
    "MAX_HOPS_LIMIT",
    "GraphDialect",
    "GraphDriver",
    "GraphLayout",
    "GraphStoreURI",
    "NodeRecord",
    "RawPath",
    "RelRecord",
    "StoreAPIDialect",
    "default_graph_store_uri",
    "dialect_for_engine",
    "dialect_for_store",
    "ladybug_uri",
    "open_graph_store",
    "quote_identifier",
    "record_connection",
]


def __getattr__(name: str) -> object:
    # LadybugGraphStore needs the optional `ladybug` extra: imported on first use, not with this package
    if name == "LadybugGraphStore":
        from llama_index_kgplus.graph_stores._ladybug_store import LadybugGraphStore

        return LadybugGraphStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
