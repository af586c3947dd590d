"""Per-engine Cypher dialects: the few statements that differ between Ladybug, FalkorDB and Neo4j.

Shared by the KG path retrieval (``kg/``) and GraphRAG. A dialect is a small stateless object; every call takes
the LlamaIndex ``PropertyGraphStore`` it runs on and goes through its ``structured_query``.

The engines live in ``_dialect_ladybug`` and ``_dialect_cypher`` (FalkorDB, Neo4j) on the base in
``_dialect_base``, which also states the safety rules every statement keeps (values are parameters, identifiers
are checked and quoted, every path length is bounded, every path query has a LIMIT). ``_dialect_api`` reads any
other property graph store (``SimplePropertyGraphStore``, ...) through the store API, without statements.

Example:

```python
store = open_graph_store("ladybug:///tmp/kg.lbug")
dialect = dialect_for_store(store)
layout = GraphLayout(node_label="Ent", id_property="cid", name_property="name", rel_types=("Rel",))
paths = dialect.shortest_paths(store, layout, [("C1", "C2")], max_hops=2, limit=1000)
```
"""

from __future__ import annotations

from typing import Any

from llama_index_kgplus.errors import GraphStoreError
from llama_index_kgplus.graph_stores._dialect_api import StoreAPIDialect
from llama_index_kgplus.graph_stores._dialect_base import (
    IDENTIFIER_RE,
    MAX_HOPS_LIMIT,
    META_LABEL,
    SCALAR_TYPES,
    GraphDialect,
    GraphLayout,
    NodeRecord,
    RawPath,
    RelRecord,
    quote_identifier,
    reverse_path,
)
from llama_index_kgplus.graph_stores._dialect_cypher import FalkorDBDialect, Neo4jDialect
from llama_index_kgplus.graph_stores._dialect_ladybug import LadybugDialect

__all__ = [
    "IDENTIFIER_RE",
    "MAX_HOPS_LIMIT",
    "META_LABEL",
    "SCALAR_TYPES",
    "FalkorDBDialect",
    "GraphDialect",
    "GraphLayout",
    "LadybugDialect",
    "Neo4jDialect",
    "NodeRecord",
    "RawPath",
    "RelRecord",
    "StoreAPIDialect",
    "dialect_for_engine",
    "dialect_for_store",
    "quote_identifier",
    "reverse_path",
]

_DIALECTS: dict[str, GraphDialect] = {
    "ladybug": LadybugDialect(),
    "falkordb": FalkorDBDialect(),
    "neo4j": Neo4jDialect(),
}
_STORE_API = StoreAPIDialect()


def dialect_for_engine(engine: str) -> GraphDialect:
    """The dialect of ``"ladybug"``, ``"falkordb"`` or ``"neo4j"``."""
    try:
        return _DIALECTS[engine]
    except KeyError:
        raise GraphStoreError(f"No dialect for engine {engine!r}; use one of {sorted(_DIALECTS)}.") from None


def dialect_for_store(store: Any) -> GraphDialect:
    """The dialect matching a LlamaIndex property graph store instance (by its class): Ladybug, FalkorDB or
    Neo4j; any other ``PropertyGraphStore`` (``SimplePropertyGraphStore``, ...) is read through its API."""
    from llama_index.core.graph_stores.types import PropertyGraphStore

    names = {cls.__name__ for cls in type(store).__mro__}
    for class_name, engine in (
        ("LadybugPropertyGraphStore", "ladybug"),
        ("FalkorDBPropertyGraphStore", "falkordb"),
        ("Neo4jPropertyGraphStore", "neo4j"),
    ):
        if class_name in names:
            return _DIALECTS[engine]
    if isinstance(store, PropertyGraphStore):
        return _STORE_API
    raise GraphStoreError(
        f"{type(store).__name__} is not a LlamaIndex property graph store: give a PropertyGraphStore "
        "(e.g. SimplePropertyGraphStore, or a Ladybug, FalkorDB or Neo4j store) or a graph store URI."
    )
