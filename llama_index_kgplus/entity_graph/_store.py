"""Copy an :class:`EntityGraph` into a LlamaIndex ``PropertyGraphStore``, so users of a server store (Neo4j,
FalkorDB) or the embedded Ladybug store see it there.

Passages become ``ChunkNode``s (id = node id, text from the docstore when given, property ``doc_id``), entities
``EntityNode``s labelled ``ENTITY`` (name = display name, properties ``entity_id``, ``sources``, ``kg_id``),
links ``MENTIONS`` relations (properties ``count``, ``about``), and ``SAME_AS`` / knowledge-graph / LLM
relationships relations between entities (label in upper snake case, the original type in ``type``).
Everything goes through the store's generic ``upsert_nodes`` / ``upsert_relations``, except one gap:
LlamaIndex's Ladybug store only links chunks to entities as a side effect of entity-entity relations, so
for it the ``MENTIONS`` edges are written into its own ``Chunk``/``MENTIONS``/``Entity`` tables with one
parameterised statement per batch.

Example:

```python
counts = graph.write_to_store(open_graph_store("falkordb://127.0.0.1:6379"), docstore=index.docstore)
```
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from llama_index_kgplus.errors import GraphStoreError
from llama_index_kgplus.graph_stores._dialects import dialect_for_store

if TYPE_CHECKING:
    from llama_index_kgplus.entity_graph._graph import EntityGraph

ENTITY_LABEL = "ENTITY"


def write_entity_graph(
    graph: EntityGraph, store: Any, *, docstore: Any = None, batch_size: int = 1000
) -> dict[str, int]:
    """Write ``graph`` into ``store``; returns the counts written (``entities``, ``passages``,
    ``relationships``). Writing twice updates in place (upserts)."""
    from llama_index.core.graph_stores.types import ChunkNode, EntityNode, Relation
    from llama_index.core.schema import MetadataMode

    entity_nodes = {}
    for key in graph.entity_keys:
        entity = graph.entities.entities[key]
        properties: dict[str, Any] = {"entity_id": key, "sources": sorted(entity.sources)}
        if entity.kg_id is not None:
            properties["kg_id"] = entity.kg_id
        entity_nodes[key] = EntityNode(name=entity.name, label=ENTITY_LABEL, properties=properties)
    chunks = []
    for pid, doc_id in zip(graph.passage_ids, graph.passage_doc_ids):
        node = docstore.get_node(pid, raise_error=False) if docstore is not None else None
        text = node.get_content(MetadataMode.NONE) if node is not None else ""
        chunks.append(ChunkNode(text=text, id_=pid, properties={"doc_id": doc_id, "ref_doc_id": doc_id}))
    mentions = [
        Relation(
            label="MENTIONS", source_id=pid, target_id=entity_nodes[key].id, properties={"count": count, "about": about}
        )
        for pid, key, count, about in graph.mentions()
    ]
    keys = graph.entity_keys
    related = [
        Relation(
            label=relation_label(t),
            source_id=entity_nodes[keys[a]].id,
            target_id=entity_nodes[keys[b]].id,
            properties={"type": t},
        )
        for a, b, t in graph.entity_edges()
    ]
    nodes = [*entity_nodes.values(), *chunks]
    for batch in _batches(nodes, batch_size):
        store.upsert_nodes(batch)
    ladybug = _is_ladybug(store)
    for batch in _batches(related if ladybug else [*mentions, *related], batch_size):
        store.upsert_relations(batch)
    if ladybug:
        rows = [{"c": r.source_id, "e": r.target_id} for r in mentions]
        for batch in _batches(rows, batch_size):
            store.structured_query(
                "UNWIND $rows AS row MATCH (c:Chunk {id: row.c}), (e:Entity {id: row.e}) MERGE (c)-[:MENTIONS]->(e)",
                param_map={"rows": batch},
            )
    return {"entities": len(entity_nodes), "passages": len(chunks), "relationships": len(mentions) + len(related)}


def relation_label(rel_type: str) -> str:
    """A relationship type as a store label: ``"process of"`` -> ``PROCESS_OF``."""
    label = re.sub(r"[^0-9A-Za-z_]+", "_", rel_type).strip("_").upper()
    return label if label and not label[0].isdigit() else f"REL_{label}"


def _is_ladybug(store: Any) -> bool:
    try:
        return dialect_for_store(store).engine == "ladybug"
    except GraphStoreError:  # any other store (e.g. SimplePropertyGraphStore) takes the generic path
        return False


def _batches(rows: list[Any], size: int) -> list[list[Any]]:
    return [rows[i : i + size] for i in range(0, len(rows), size)]
