"""Graph stores named by URI, shared by the KG path retrieval and GraphRAG; per-engine Cypher dialects and
driver adapters; any other LlamaIndex property graph store read through its API."""

from typing import TYPE_CHECKING

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.graph_stores._open import open_graph_store
from llama_index_kgplus.graph_stores._uri import ladybug_uri

if TYPE_CHECKING:  # imported on first use at run time (see __getattr__ below): it needs the `ladybug` extra
    from llama_index_kgplus.graph_stores._ladybug_store import LadybugGraphStore

__all__ = [
    "open_graph_store",
    "LadybugGraphStore",
    "ladybug_uri",
]
set_public_module(__name__, globals(), ["open_graph_store", "ladybug_uri"])

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "default_graph_store_uri": "llama_index_kgplus.graph_stores._uri:default_graph_store_uri",
        "dialect_for_engine": "llama_index_kgplus.graph_stores._dialects:dialect_for_engine",
        "dialect_for_store": "llama_index_kgplus.graph_stores._dialects:dialect_for_store",
        "GraphDialect": "llama_index_kgplus.graph_stores._dialect_base:GraphDialect",
        "GraphDriver": "llama_index_kgplus.graph_stores._drivers:GraphDriver",
        "GraphStoreURI": "llama_index_kgplus.graph_stores._uri:GraphStoreURI",
        "GraphLayout": "llama_index_kgplus.graph_stores._dialect_base:GraphLayout",
        "IDENTIFIER_RE": "llama_index_kgplus.graph_stores._dialect_base:IDENTIFIER_RE",
        "MAX_HOPS_LIMIT": "llama_index_kgplus.graph_stores._dialect_base:MAX_HOPS_LIMIT",
        "NodeRecord": "llama_index_kgplus.graph_stores._dialect_base:NodeRecord",
        "quote_identifier": "llama_index_kgplus.graph_stores._dialect_base:quote_identifier",
        "RawPath": "llama_index_kgplus.graph_stores._dialect_base:RawPath",
        "record_connection": "llama_index_kgplus.graph_stores._drivers:record_connection",
        "RelRecord": "llama_index_kgplus.graph_stores._dialect_base:RelRecord",
        "StoreAPIDialect": "llama_index_kgplus.graph_stores._dialect_api:StoreAPIDialect",
    },
    # needs the optional `ladybug` extra: imported on first use, not with this package
    imported_on_first_use={"LadybugGraphStore": "llama_index_kgplus.graph_stores._ladybug_store:LadybugGraphStore"},
)
