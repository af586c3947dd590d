"""Any LlamaIndex property graph store without a Cypher dialect (``SimplePropertyGraphStore``, or a store the
pack has no dialect for), read through the store API alone.

The graph is the store's entity nodes (``EntityNode``: id and ``name``) and the relations between two of them
(their ``label`` is the type); chunk nodes and their ``MENTIONS`` are never part of it. Paths run on the
in-process snapshot built from these reads. Such a store has no query language here: nothing is imported into
it, and text-to-Cypher refuses it with one :class:`GraphStoreError` line.

Reads: ``SimplePropertyGraphStore`` through its public ``graph`` (one pass over its triplets); any other store
through ``get()`` (every node) and ``get_triplets(ids=...)`` in batches, which holds every triplet as long as
the store's ``get_triplets`` does not cut its results short.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from llama_index.core.graph_stores.types import EntityNode, LabelledPropertyGraph, Triplet

from llama_index_kgplus.errors import GraphStoreError
from llama_index_kgplus.graph_stores._dialect_base import GraphDialect, GraphLayout, NodeRecord, RelRecord

#: node ids per ``get_triplets(ids=...)`` call when a store is read through its API
_BATCH = 500
_NO_QUERIES = "neither text-to-Cypher nor any other query runs on it"
_NO_STORE_PATHS = (
    "A store read through its API has no path query: its paths run on the in-process snapshot (path_engine "
    "'auto' or 'snapshot'; the snapshot is refused above max_snapshot_edges relationships)."
)
#: the layout of a graph read through the store API: nominal (nothing is queried by label or property)
API_LAYOUT = GraphLayout(node_label="Entity", id_property="id", name_property="name", rel_types=("RELATED_TO",))


def entity_graph(store: Any) -> tuple[list[EntityNode], list[Triplet]]:
    """The store's entity nodes and the triplets between two of them, one per (source, label, target)."""
    graph = getattr(store, "graph", None)
    if isinstance(graph, LabelledPropertyGraph):
        nodes, triplets = list(graph.nodes.values()), graph.get_triplets()
    else:
        nodes = list(store.get())
        ids = [n.id for n in nodes if isinstance(n, EntityNode)]
        triplets = [t for i in range(0, len(ids), _BATCH) for t in store.get_triplets(ids=ids[i : i + _BATCH])]
    entities = [n for n in nodes if isinstance(n, EntityNode)]
    between: dict[tuple[str, str, str], Triplet] = {}
    for source, rel, target in triplets:
        if isinstance(source, EntityNode) and isinstance(target, EntityNode):
            between.setdefault((source.id, rel.label, target.id), (source, rel, target))
    return entities, [between[key] for key in sorted(between)]  # in one order (core's store keeps a set)


class StoreAPIDialect(GraphDialect):
    """The graph of any ``PropertyGraphStore`` through ``get``/``get_triplets`` (see the module)."""

    engine = "store-api"
    runs_queries = False

    def _refuse(self, store: Any, what: str) -> NoReturn:
        raise GraphStoreError(
            f"{type(store).__name__} has no Cypher, so {what}: use a Ladybug, FalkorDB or Neo4j store for that "
            "(KG paths work on any LlamaIndex property graph store)."
        )

    # no statements
    def driver(self, store: Any) -> NoReturn:
        self._refuse(store, _NO_QUERIES)

    def run(self, store: Any, query: str, params: dict[str, Any] | None = None) -> NoReturn:
        self._refuse(store, _NO_QUERIES)

    async def arun(self, store: Any, query: str, params: dict[str, Any] | None = None) -> NoReturn:
        self._refuse(store, _NO_QUERIES)

    def run_read_only(
        self,
        store: Any,
        query: str,
        timeout: float,
        params: dict[str, Any] | None = None,
        *,
        max_rows: int | None = None,
    ) -> NoReturn:
        self._refuse(store, _NO_QUERIES)

    # nothing is imported into it: no key/value records, no schema, no writes
    def read_meta(self, store: Any, key: str) -> str | None:
        return None

    def write_meta(self, store: Any, key: str, value: str) -> NoReturn:
        self._refuse(store, "nothing can be imported into it")

    def delete_meta(self, store: Any, key: str) -> NoReturn:
        self._refuse(store, "nothing can be imported into it")

    def create_schema(
        self, store: Any, layout: GraphLayout, node_properties: dict[str, str], rel_properties: dict[str, str]
    ) -> NoReturn:
        self._refuse(store, "nothing can be imported into it")

    def drop_graph(self, store: Any, layout: GraphLayout) -> NoReturn:
        self._refuse(store, "nothing can be imported into it")

    def write_nodes(
        self,
        store: Any,
        layout: GraphLayout,
        nodes: Sequence[NodeRecord],
        node_properties: dict[str, str],
        batch_size: int = 10_000,
        progress: Any = None,
    ) -> NoReturn:
        self._refuse(store, "nothing can be imported into it")

    def write_relationships(
        self,
        store: Any,
        layout: GraphLayout,
        rels: Sequence[RelRecord],
        rel_properties: dict[str, str],
        batch_size: int = 10_000,
        progress: Any = None,
    ) -> NoReturn:
        self._refuse(store, "nothing can be imported into it")

    def write_aliases(
        self, store: Any, layout: GraphLayout, aliases: Sequence[tuple[str, str]], batch_size: int = 10_000
    ) -> NoReturn:
        self._refuse(store, "nothing can be imported into it")

    # reads
    def property_graph_layout(self, store: Any) -> GraphLayout | None:
        entities, _ = entity_graph(store)
        return API_LAYOUT if entities else None

    def count_nodes(self, store: Any, layout: GraphLayout) -> int:
        return len(entity_graph(store)[0])

    def count_graph(self, store: Any, layout: GraphLayout) -> tuple[int, int]:
        entities, triplets = entity_graph(store)
        return len(entities), len(triplets)

    def read_names(self, store: Any, layout: GraphLayout) -> Iterator[tuple[str, str, bool]]:
        for node in entity_graph(store)[0]:
            yield node.id, node.name, False

    def read_relationships(
        self, store: Any, layout: GraphLayout, name_property: str | None = None
    ) -> Iterator[tuple[str, str, str]]:
        for source, rel, target in entity_graph(store)[1]:
            shown = rel.properties.get(name_property) if name_property else None
            yield source.id, target.id, str(shown or rel.label)

    def read_node_columns(self, store: Any, layout: GraphLayout) -> dict[str, list[Any]]:
        entities = entity_graph(store)[0]
        return {"id": [n.id for n in entities], "name": [n.name for n in entities]}

    def read_relationship_columns(self, store: Any, layout: GraphLayout) -> dict[str, list[Any]]:
        triplets = entity_graph(store)[1]
        return {
            "s": [s.id for s, _, _ in triplets],
            "t": [t.id for _, _, t in triplets],
            "type": [r.label for _, r, _ in triplets],
            "key": [f"{s.id}\x1f{r.label}\x1f{t.id}" for s, r, t in triplets],  # what tells parallel relations apart
        }

    # paths run on the snapshot only: the store-query methods refuse
    def relationships_query(self, layout: GraphLayout) -> NoReturn:
        raise GraphStoreError(_NO_STORE_PATHS)

    def shortest_paths_statement(
        self, layout: GraphLayout, pairs: Sequence[tuple[str, str]], max_hops: int, limit: int
    ) -> NoReturn:
        raise GraphStoreError(_NO_STORE_PATHS)

    def neighbours_query(self, layout: GraphLayout) -> NoReturn:
        raise GraphStoreError(_NO_STORE_PATHS)

    def decode_path(self, row: dict[str, Any], layout: GraphLayout) -> NoReturn:
        raise GraphStoreError(_NO_STORE_PATHS)
