"""LlamaIndex's Ladybug store with its reads brought to core's property graph contract, so that every graph in
the file is one property graph and a round trip through the store gives back what went in.

``LadybugPropertyGraphStore`` (0.3.x) keys the ends of a relationship by node table, so a triplet between two
nodes of one table (every ``Entity -> Entity`` relation, every imported relationship) comes back with the same
source and target id; ``get_rel_map`` starts only from entities that a chunk ``MENTIONS``, so a graph without
chunks (an import) has no neighbourhood; its fixed columns drop every property they do not name, ``get`` and
``get_triplets`` ignore a ``properties`` filter (so ``delete_llama_nodes`` deleted every node), and
``get_llama_nodes`` rebuilds nodes with metadata they never had. This subclass answers as
``SimplePropertyGraphStore`` does where LlamaIndex's own store tests expect it (see ``docs/graph-stores.md``):

- the properties of entities, chunks and ``LINKS`` relations are kept whole, as JSON in one extra column
  (``kgplus_properties``) of those tables; nodes and relations written before (or imported) read their columns;
- ``get(properties=...)`` and ``get_triplets(properties=...)`` filter (a node or triplet matches when any given
  property has the given value); ``get_triplets()`` with no filter returns no triplets, and its names and ids
  match either end of a relation;
- ``get_llama_nodes`` returns the nodes ``upsert_llama_nodes`` wrote, unchanged;
- ``get_rel_map`` walks ``depth`` hops out from the given entities (or from the entities the given chunks
  mention), both directions, ``ignore_rels`` left out before ``limit`` counts;
- ``close()`` (and ``with``) release the file.

:func:`open_graph_store` returns it for ``ladybug://`` URIs.

Example:

```python
store = open_graph_store("ladybug:///tmp/kg.lbug")          # a LadybugGraphStore
store.get_triplets(entity_names=["virus"])                    # virus -[Rel {relname: causes}]-> ...
store.get_rel_map(store.get(ids=["virus"]), depth=2)
```
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from llama_index.core.graph_stores.types import (
    ChunkNode,
    EntityNode,
    LabelledNode,
    PropertyGraphStore,
    Relation,
    Triplet,
)
from llama_index.core.schema import BaseNode
from llama_index.graph_stores.ladybug import LadybugPropertyGraphStore

from llama_index_kgplus.graph_stores._drivers import LadybugDriver, result_rows

#: the column holding a node's or relation's properties as JSON, exactly as LlamaIndex gave them
PROPERTIES_COLUMN = "kgplus_properties"
# the tables of LlamaIndex's store (its default, unstructured layout) that get the column
_NODE_TABLES = {EntityNode: "Entity", ChunkNode: "Chunk"}
_LINKS = "LINKS"
# engine-internal keys of a node or relationship value, and LlamaIndex columns that are not properties
_INTERNAL = {"_id", "_label", "_src", "_dst", "id", "name", "label", "embedding", PROPERTIES_COLUMN}
_CHUNK_TABLE, _MENTIONS = "Chunk", "MENTIONS"
# the property keys whose deletion LlamaIndex's store also follows through MENTIONS (documents it ingested)
_DOCUMENT_KEYS = {"doc_id", "ref_doc_id"}


def _meta(value: dict[str, Any], key: str) -> Any:
    return value.get(f"_{key.upper()}", value.get(f"_{key}"))


def _properties(value: dict[str, Any], *also_internal: str) -> dict[str, Any]:
    stored = value.get(PROPERTIES_COLUMN)
    if stored is not None:
        return dict(json.loads(stored))
    return {k: v for k, v in value.items() if k.lower() not in _INTERNAL | set(also_internal) and v is not None}


def _entity(value: dict[str, Any]) -> EntityNode:
    return EntityNode(
        name=str(value.get("name") or value.get("id")),
        label=str(value.get("label") or _meta(value, "label") or "Entity"),
        properties=_properties(value),
    )


def _is_chunk(value: dict[str, Any]) -> bool:
    return bool(_meta(value, "label") == _CHUNK_TABLE)


def _node_properties(value: dict[str, Any]) -> dict[str, Any]:
    return _properties(value, "text") if _is_chunk(value) else _properties(value)


def _node(value: dict[str, Any]) -> LabelledNode:
    if not _is_chunk(value):
        return _entity(value)
    return ChunkNode(
        id_=str(value["id"]),
        text=value.get("text") or "",
        label=str(value.get("label") or "text_chunk"),
        properties=_node_properties(value),
    )


def _triplet(source: dict[str, Any], rel: dict[str, Any], target: dict[str, Any]) -> Triplet | None:
    """One triplet from engine values, or None for chunk nodes and ``MENTIONS`` (not entity relations)."""
    if _CHUNK_TABLE in (_meta(source, "label"), _meta(target, "label")) or _meta(rel, "label") == _MENTIONS:
        return None
    s, t = _entity(source), _entity(target)
    label = str(rel.get("label") or _meta(rel, "label") or "")
    return (s, Relation(label=label, source_id=s.id, target_id=t.id, properties=_properties(rel)), t)


def _matches(properties: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return any(properties.get(k) == v for k, v in wanted.items())


def _json(properties: dict[str, Any]) -> str:
    return json.dumps(properties, default=str)  # a value JSON cannot hold (a date) comes back as its text


class LadybugGraphStore(LadybugPropertyGraphStore):
    """``LadybugPropertyGraphStore`` whose reads keep core's property graph contract (see the module).

    Example:

    ```python
    from llama_index.core import PropertyGraphIndex
    from llama_index_kgplus import open_graph_store

    store = open_graph_store("ladybug:///data/graph.lbug")  # a LadybugGraphStore
    index = PropertyGraphIndex.from_documents(documents, property_graph_store=store, embed_kg_nodes=False)
    ```
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._property_tables = self._add_property_columns()

    def _rows(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return result_rows(self.connection.execute(query, parameters=params or {}))

    def _add_property_columns(self) -> set[str]:
        """The tables of :data:`PROPERTIES_COLUMN` (added where missing, unless the database is read-only)."""
        tables = {row["name"] for row in self._rows("CALL show_tables() RETURN name")}
        found = set()
        for table in {*_NODE_TABLES.values(), _LINKS} & tables:
            try:
                self._rows(f"ALTER TABLE {table} ADD IF NOT EXISTS {PROPERTIES_COLUMN} STRING")
            except RuntimeError:  # a read-only database: only tables that already have it keep properties
                columns = {row["name"] for row in self._rows(f"CALL TABLE_INFO('{table}') RETURN name")}
                if PROPERTIES_COLUMN not in columns:
                    continue
            found.add(table)
        return found

    # ------------------------------------------------------------------ writes: the properties, whole

    def upsert_nodes(self, nodes: Sequence[LabelledNode]) -> None:
        """Insert or update ``nodes``, keeping every property (the upstream store keeps a fixed set of columns; the
        rest goes into a JSON column)."""
        super().upsert_nodes(list(nodes))
        for kind, table in _NODE_TABLES.items():
            # the upstream store keys an entity by its name and a chunk by its id_
            rows = [
                {"id": n.name if isinstance(n, EntityNode) else n.id, "p": _json(n.properties)}
                for n in nodes
                if isinstance(n, kind)
            ]
            if rows and table in self._property_tables:
                self._rows(
                    f"UNWIND $rows AS r MATCH (n:{table} {{id: r.id}}) SET n.{PROPERTIES_COLUMN} = r.p", {"rows": rows}
                )

    def upsert_relations(self, relations: list[Relation]) -> None:
        """Insert or update ``relations``, keeping every property in the JSON column."""
        super().upsert_relations(relations)
        rows = [{"s": r.source_id, "t": r.target_id, "l": r.label, "p": _json(r.properties)} for r in relations]
        if rows and _LINKS in self._property_tables:
            self._rows(
                f"UNWIND $rows AS x MATCH (a:Entity {{id: x.s}})-[r:{_LINKS} {{label: x.l}}]->(b:Entity {{id: x.t}}) "
                f"SET r.{PROPERTIES_COLUMN} = x.p",
                {"rows": rows},
            )

    def delete(
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        properties: dict | None = None,
        ids: list[str] | None = None,
    ) -> None:
        """Delete nodes by entity name, relation label, id or property (a property kept in the JSON column matches
        too)."""
        if properties:  # resolved here, so a property kept in the JSON column counts too
            ids = [*(ids or []), *self._ids_with(properties)]
        super().delete(
            entity_names=entity_names,
            relation_names=relation_names,
            ids=ids or None,
            properties=properties if properties and set(properties) <= _DOCUMENT_KEYS else None,
        )

    def _ids_with(self, properties: dict[str, Any]) -> list[str]:
        rows = self._rows("MATCH (e) WHERE e.id IS NOT NULL RETURN e")
        return [str(row["e"]["id"]) for row in rows if _matches(_node_properties(row["e"]), properties)]

    # ------------------------------------------------------------------ reads

    def get(self, properties: dict | None = None, ids: list[str] | None = None) -> list[LabelledNode]:
        """Nodes by ``ids`` (all when None); with ``properties``, those having any of them."""
        where, params = ("WHERE e.id IN $ids", {"ids": list(ids)}) if ids else ("WHERE e.id IS NOT NULL", {})
        values = [row["e"] for row in self._rows(f"MATCH (e) {where} RETURN e", params)]
        return [_node(v) for v in values if not properties or _matches(_node_properties(v), properties)]

    def get_llama_nodes(self, node_ids: list[str]) -> list[BaseNode]:
        """The nodes ``upsert_llama_nodes`` wrote, as they were (chunks the upstream store wrote: as it reads them)."""
        found = {node.node_id: node for node in PropertyGraphStore.get_llama_nodes(self, node_ids)}
        missing = [i for i in node_ids if i not in found]
        if missing:
            found.update((node.node_id, node) for node in super().get_llama_nodes(missing))
        return [found[i] for i in dict.fromkeys(node_ids) if i in found]

    def get_triplets(  # type: ignore[override, unused-ignore]  # core's signature; the ladybug store drops properties
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        properties: dict | None = None,
        ids: list[str] | None = None,
    ) -> list[Triplet]:
        """Triplets between entities matching every filter given; none without a filter (core's contract)."""
        if not (entity_names or relation_names or properties or ids):
            return []
        conditions, params = [], {}
        for key, value, condition in (
            ("names", entity_names, "(e.name IN $names OR t.name IN $names)"),
            ("rels", relation_names, "r.label IN $rels"),
            ("ids", ids, "(e.id IN $ids OR t.id IN $ids)"),
        ):
            if value:
                conditions.append(condition)
                params[key] = list(value)
        where = f"WHERE {' AND '.join(conditions)} " if conditions else ""
        rows = self._rows(f"MATCH (e)-[r]->(t) {where}RETURN e, r, t", params)
        triplets = [tr for row in rows if (tr := _triplet(row["e"], row["r"], row["t"])) is not None]
        if properties:
            triplets = [tr for tr in triplets if any(_matches(part.properties, properties) for part in tr)]
        return triplets

    def get_rel_map(
        self,
        graph_nodes: list[LabelledNode],
        depth: int = 2,
        limit: int = 30,
        ignore_rels: list[str] | None = None,
    ) -> list[Triplet]:
        """The relations ``depth`` hops out from ``graph_nodes`` (entities by id or name, or the entities chunks
        mention), both directions, each once, at most ``limit`` of them not in ``ignore_rels``."""
        if not graph_nodes or depth < 1 or limit < 1:
            return []
        seeds = {node.id for node in graph_nodes} | {
            str(n.properties["id"]) for n in graph_nodes if "id" in n.properties
        }
        mentioned = self._rows(
            f"MATCH (c:{_CHUNK_TABLE})-[:{_MENTIONS}]->(e) WHERE c.id IN $ids RETURN DISTINCT e.id AS id",
            {"ids": sorted(seeds)},
        )
        frontier = seeds | {str(row["id"]) for row in mentioned}
        visited, seen, triplets = set(frontier), set(), []
        for _ in range(depth):
            rows = self._rows(
                "MATCH (e)-[r]->(t) WHERE (e.id IN $ids OR t.id IN $ids OR e.name IN $ids OR t.name IN $ids) "
                f"AND label(r) <> '{_MENTIONS}' AND label(e) <> '{_CHUNK_TABLE}' AND label(t) <> '{_CHUNK_TABLE}' "
                f"AND NOT coalesce(r.label, '') IN $ignored RETURN e, r, t LIMIT {4 * limit}",
                {"ids": sorted(frontier), "ignored": list(ignore_rels or [])},
            )
            reached: set[str] = set()
            for row in rows:
                key = str(_meta(row["r"], "id"))
                triplet = _triplet(row["e"], row["r"], row["t"])
                if triplet is None or key in seen:
                    continue
                seen.add(key)
                triplets.append(triplet)
                reached |= {str(row["e"].get("id")), str(row["t"].get("id"))}
            frontier = reached - visited
            visited |= reached
            if len(triplets) >= limit or not frontier:
                break
        return triplets[:limit]

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Close the connections and the database (its file lock goes with it); closing twice is harmless."""
        LadybugDriver.close_store(self)

    def __enter__(self) -> LadybugGraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# public as llama_index_kgplus.graph_stores.LadybugGraphStore, which imports this module on first use (it needs the
# optional `ladybug` extra); named by that path in reprs, pickles and the API reference
LadybugGraphStore.__module__ = "llama_index_kgplus.graph_stores"
