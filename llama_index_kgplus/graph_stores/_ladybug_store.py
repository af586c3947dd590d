"""LlamaIndex's Ladybug store with two reads mended, so that every graph in the file is one property graph.

``LadybugPropertyGraphStore`` (0.3.x) keys the ends of a relationship by node table, so a triplet between two
nodes of one table (every ``Entity -> Entity`` relation, every imported relationship) comes back with the same
source and target id and without its properties; and ``get_rel_map`` starts only from entities that a chunk
``MENTIONS``, so a graph without chunks (an import) has no neighbourhood. This subclass keeps everything else
and answers those two from the graph itself. :func:`open_graph_store` returns it for ``ladybug://`` URIs.

Example::

    store = open_graph_store("ladybug:///tmp/kg.lbug")          # a LadybugGraphStore
    store.get_triplets(entity_names=["virus"])                    # virus -[Rel {relname: causes}]-> ...
    store.get_rel_map(store.get(ids=["virus"]), depth=2)
"""

from __future__ import annotations

from typing import Any

from llama_index.core.graph_stores.types import EntityNode, LabelledNode, Relation, Triplet
from llama_index.graph_stores.ladybug import LadybugPropertyGraphStore

from llama_index_kgplus.graph_stores._drivers import result_rows

# engine-internal keys of a node or relationship value, and LlamaIndex columns that are not properties
_INTERNAL = {"_id", "_label", "_src", "_dst", "id", "name", "label", "embedding"}
_CHUNK_TABLE, _MENTIONS = "Chunk", "MENTIONS"
_TRIPLET_LIMIT = 100  # LlamaIndex's own bound for get_triplets


def _meta(value: dict[str, Any], key: str) -> Any:
    return value.get(f"_{key.upper()}", value.get(f"_{key}"))


def _properties(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k.lower() not in _INTERNAL and v is not None}


def _entity(value: dict[str, Any]) -> EntityNode:
    return EntityNode(
        name=str(value.get("name") or value.get("id")),
        label=str(value.get("label") or _meta(value, "label") or "Entity"),
        properties=_properties(value),
    )


def _triplet(source: dict[str, Any], rel: dict[str, Any], target: dict[str, Any]) -> Triplet | None:
    """One triplet from engine values, or None for chunk nodes and ``MENTIONS`` (not entity relations)."""
    if _CHUNK_TABLE in (_meta(source, "label"), _meta(target, "label")) or _meta(rel, "label") == _MENTIONS:
        return None
    s, t = _entity(source), _entity(target)
    label = str(rel.get("label") or _meta(rel, "label") or "")
    return (s, Relation(label=label, source_id=s.id, target_id=t.id, properties=_properties(rel)), t)


class LadybugGraphStore(LadybugPropertyGraphStore):
    """``LadybugPropertyGraphStore`` whose ``get_triplets`` and ``get_rel_map`` also read relationships within
    one node table (imported graphs, ``Entity -> Entity``) with their ends and properties."""

    def _rows(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        return result_rows(self.connection.execute(query, parameters=params))

    def get_triplets(
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[Triplet]:
        conditions, params = [], {}
        for key, value, condition in (
            ("names", entity_names, "e.name IN $names"),
            ("rels", relation_names, "r.label IN $rels"),
            ("ids", ids, "e.id IN $ids"),
        ):
            if value:
                conditions.append(condition)
                params[key] = list(value)
        where = f"WHERE {' AND '.join(conditions)} " if conditions else ""
        rows = self._rows(f"MATCH (e)-[r]->(t) {where}RETURN e, r, t LIMIT {_TRIPLET_LIMIT}", params)
        return [tr for row in rows if (tr := _triplet(row["e"], row["r"], row["t"])) is not None]

    def get_rel_map(
        self,
        graph_nodes: list[LabelledNode],
        depth: int = 2,
        limit: int = 30,
        ignore_rels: list[str] | None = None,
    ) -> list[Triplet]:
        found = super().get_rel_map(graph_nodes, depth=depth, limit=limit, ignore_rels=ignore_rels)
        if found or not graph_nodes:
            return found
        # no chunk mentions these entities: walk the graph from them, depth hops out, both directions
        ignored, seen, triplets = set(ignore_rels or []), set(), []
        frontier = {node.id for node in graph_nodes} | {
            str(n.properties["id"]) for n in graph_nodes if "id" in n.properties
        }
        for _ in range(max(depth, 1)):
            rows = self._rows(
                "MATCH (e)-[r]->(t) WHERE e.id IN $ids OR t.id IN $ids OR e.name IN $ids OR t.name IN $ids "
                f"RETURN e, r, t LIMIT {4 * limit}",
                {"ids": sorted(frontier)},
            )
            reached: set[str] = set()
            for row in rows:
                triplet = _triplet(row["e"], row["r"], row["t"])
                key = _meta(row["r"], "id")
                if triplet is None or triplet[1].label in ignored or str(key) in seen:
                    continue
                seen.add(str(key))
                triplets.append(triplet)
                reached |= {str(row["e"].get("id")), str(row["t"].get("id"))}
            frontier = reached - frontier
            if len(triplets) >= limit or not frontier:
                break
        return triplets[:limit]
