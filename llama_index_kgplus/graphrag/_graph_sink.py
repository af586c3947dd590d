"""Write the merged GraphRAG graph (entities, relationships, chunks, mentions, with provenance) to a graph store.

:class:`LadybugGraphSink` keeps it in the embedded Ladybug database of the store folder, in its own tables, so
every property survives (LlamaIndex's Ladybug store keeps only a fixed set of columns)::

    (:GraphRAGChunk {id, doc_id, text})-[:GRAPHRAG_MENTIONS]->(:GraphRAGEntity {id, name, type, description,
        chunk_ids, doc_ids})-[:GRAPHRAG_RELATED {id, type, description, weight, chunk_ids, doc_ids}]->(...)

Open it with ``open_graph_store("ladybug://<store>/graph.lbug").structured_query(...)`` while no GraphRAG command
runs (Ladybug allows one process at a time). :class:`PropertyGraphStoreSink` writes the same graph to any
LlamaIndex ``PropertyGraphStore`` (Neo4j, FalkorDB, the in-memory ``SimplePropertyGraphStore``) through its
generic API: entities as ``EntityNode`` (name = the normalised id), relationships as ``Relation``, chunks as
``ChunkNode`` with ``MENTIONS`` relations. Both apply a :class:`GraphDiff` and are idempotent, so a rerun
after a crash converges to the same graph.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llama_index_kgplus.errors import GraphStoreError
from llama_index_kgplus.graphrag._merge import Entity, Relationship

if TYPE_CHECKING:
    from llama_index.core.graph_stores.types import PropertyGraphStore
from llama_index_kgplus.graphrag._state import ChunkRecord

_BATCH = 500


@dataclass(frozen=True)
class GraphDiff:
    """What changed since the last write: ids to upsert (new or changed) and ids to delete."""

    upsert_entities: frozenset[str] = frozenset()
    delete_entities: frozenset[str] = frozenset()
    upsert_relationships: frozenset[str] = frozenset()
    replaced_relationships: frozenset[str] = frozenset()  # existed before and changed
    delete_relationships: frozenset[str] = frozenset()
    upsert_chunks: frozenset[str] = frozenset()
    replaced_chunks: frozenset[str] = frozenset()  # existed before with another text
    delete_chunks: frozenset[str] = frozenset()
    deleted_relationship_endpoints: frozenset[str] = frozenset()

    @classmethod
    def between(
        cls,
        old: tuple[Mapping[str, str], Mapping[str, str], Mapping[str, str]],
        entities: Mapping[str, Entity],
        relationships: Mapping[str, Relationship],
        chunk_hashes: Mapping[str, str],
        old_rel_endpoints: Mapping[str, tuple[str, ...]],
    ) -> GraphDiff:
        """The diff from the graph last written (``old``: content hashes of its entities, relationships and
        chunk texts by id; ``old_rel_endpoints``: the two entity ids of each old relationship) to the new one."""
        old_e, old_r, old_c = old
        new_r = {rid: r.content_hash() for rid, r in relationships.items()}
        deleted_r = frozenset(set(old_r) - set(new_r))
        return cls(
            upsert_entities=frozenset(i for i, e in entities.items() if old_e.get(i) != e.content_hash()),
            delete_entities=frozenset(set(old_e) - set(entities)),
            upsert_relationships=frozenset(i for i, h in new_r.items() if old_r.get(i) != h),
            replaced_relationships=frozenset(i for i, h in new_r.items() if i in old_r and old_r[i] != h),
            delete_relationships=deleted_r,
            upsert_chunks=frozenset(i for i, h in chunk_hashes.items() if old_c.get(i) != h),
            replaced_chunks=frozenset(i for i, h in chunk_hashes.items() if i in old_c and old_c[i] != h),
            delete_chunks=frozenset(set(old_c) - set(chunk_hashes)),
            deleted_relationship_endpoints=frozenset(
                e for rid in deleted_r for e in old_rel_endpoints.get(rid, ()) if e in entities
            ),
        )

    @property
    def empty(self) -> bool:
        """Whether nothing is to be written or deleted."""
        return not any(
            (
                self.upsert_entities,
                self.delete_entities,
                self.upsert_relationships,
                self.delete_relationships,
                self.upsert_chunks,
                self.delete_chunks,
            )
        )


class GraphSink(ABC):
    """Where the merged graph is written.

    Example:

    ```python
    from llama_index_kgplus import GraphRAGIndex, open_graph_store
    from llama_index_kgplus.graphrag import PropertyGraphStoreSink

    # the default sink is a LadybugGraphSink in the store folder; any LlamaIndex property graph store works too
    sink = PropertyGraphStoreSink(open_graph_store("neo4j://localhost:7687"))
    index = GraphRAGIndex.from_defaults("./grag", llm=llm, graph_sink=sink)
    ```
    """

    @abstractmethod
    def write(
        self,
        entities: Mapping[str, Entity],
        relationships: Mapping[str, Relationship],
        chunks: Mapping[str, ChunkRecord],
        diff: GraphDiff,
    ) -> None:
        """Apply ``diff``; ``entities``, ``relationships`` and ``chunks`` are the complete new graph."""

    def counts(self) -> dict[str, int] | None:
        """Node and relationship counts as stored (None if the store cannot tell cheaply)."""
        return None

    def close(self) -> None:  # noqa: B027 - a no-op unless the sink holds a connection
        """Release the store."""


def _batches(rows: list[Any]) -> list[list[Any]]:
    return [rows[i : i + _BATCH] for i in range(0, len(rows), _BATCH)]


class LadybugGraphSink(GraphSink):
    """The graph in an embedded Ladybug database (own tables; see the module docstring).

    Example:

    ```python
    sink = LadybugGraphSink("./store/graph.lbug")
    sink.write(entities, relationships, chunks, diff)
    sink.query("MATCH (e:GraphRAGEntity) RETURN count(e) AS n")
    sink.close()
    ```
    """

    _DDL = (
        "CREATE NODE TABLE IF NOT EXISTS GraphRAGEntity(id STRING, name STRING, type STRING, description STRING, "
        "chunk_ids STRING[], doc_ids STRING[], PRIMARY KEY(id))",
        "CREATE NODE TABLE IF NOT EXISTS GraphRAGChunk(id STRING, doc_id STRING, text STRING, PRIMARY KEY(id))",
        "CREATE REL TABLE IF NOT EXISTS GRAPHRAG_RELATED(FROM GraphRAGEntity TO GraphRAGEntity, id STRING, "
        "type STRING, description STRING, weight DOUBLE, chunk_ids STRING[], doc_ids STRING[])",
        "CREATE REL TABLE IF NOT EXISTS GRAPHRAG_MENTIONS(FROM GraphRAGChunk TO GraphRAGEntity)",
    )

    def __init__(self, path: str | Path) -> None:
        from llama_index_kgplus.graph_stores import ladybug_uri, open_graph_store
        from llama_index_kgplus.graph_stores._dialects import dialect_for_engine

        self.path = Path(path).resolve()
        self._dialect = dialect_for_engine("ladybug")  # the shared Ladybug dialect: unsanitised rows, clean close
        self._store: PropertyGraphStore | None = open_graph_store(ladybug_uri(self.path), **self._dialect.open_kwargs)
        for ddl in self._DDL:
            self.query(ddl)

    def query(self, cypher: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run parameterised Cypher on the store."""
        if self._store is None:
            raise GraphStoreError(f"The graph store {self.path} is closed.")
        return self._dialect.run(self._store, cypher, params or {})

    def write(
        self,
        entities: Mapping[str, Entity],
        relationships: Mapping[str, Relationship],
        chunks: Mapping[str, ChunkRecord],
        diff: GraphDiff,
    ) -> None:
        """Write the complete new graph: delete what is no longer in it, then upsert what the diff changed."""
        q = self.query
        # Deletions reconcile with the complete new graph, so whatever an interrupted write left behind goes too.
        q("MATCH ()-[r:GRAPHRAG_RELATED]->() WHERE NOT r.id IN $ids DELETE r", {"ids": sorted(relationships)})
        q("MATCH (e:GraphRAGEntity) WHERE NOT e.id IN $ids DETACH DELETE e", {"ids": sorted(entities)})
        q("MATCH (c:GraphRAGChunk) WHERE NOT c.id IN $ids DETACH DELETE c", {"ids": sorted(chunks)})
        chunk_rows = [
            {"id": c.chunk_id, "doc_id": c.doc_id, "text": c.text}
            for i in sorted(diff.upsert_chunks)
            if (c := chunks.get(i))
        ]
        for rows in _batches(chunk_rows):
            q(
                "UNWIND $rows AS row MERGE (c:GraphRAGChunk {id: row.id}) SET c.doc_id = row.doc_id, c.text = row.text",
                {"rows": rows},
            )
        entity_rows = [
            {
                "id": e.id,
                "name": e.name,
                "type": e.type,
                "description": e.description,
                "chunk_ids": list(e.chunk_ids),
                "doc_ids": list(e.doc_ids),
            }
            for i in sorted(diff.upsert_entities)
            if (e := entities.get(i))
        ]
        for rows in _batches(entity_rows):
            q(
                "UNWIND $rows AS row MERGE (e:GraphRAGEntity {id: row.id}) SET e.name = row.name, e.type = row.type, "
                "e.description = row.description, e.chunk_ids = row.chunk_ids, e.doc_ids = row.doc_ids",
                {"rows": rows},
            )
            ids = [r["id"] for r in rows]
            q(
                "UNWIND $ids AS i MATCH (:GraphRAGChunk)-[m:GRAPHRAG_MENTIONS]->(e:GraphRAGEntity {id: i}) DELETE m",
                {"ids": ids},
            )
            pairs = [{"c": c, "e": r["id"]} for r in rows for c in r["chunk_ids"] if c in chunks]
            q(
                "UNWIND $pairs AS p MATCH (c:GraphRAGChunk {id: p.c}), (e:GraphRAGEntity {id: p.e}) "
                "MERGE (c)-[:GRAPHRAG_MENTIONS]->(e)",
                {"pairs": pairs},
            )
        rel_rows = [
            {
                "id": r.id,
                "s": r.source,
                "t": r.target,
                "type": r.type,
                "description": r.description,
                "weight": r.weight,
                "chunk_ids": list(r.chunk_ids),
                "doc_ids": list(r.doc_ids),
            }
            for i in sorted(diff.upsert_relationships)
            if (r := relationships.get(i))
        ]
        for rows in _batches(rel_rows):
            q(
                "UNWIND $rows AS row MATCH (a:GraphRAGEntity {id: row.s}), (b:GraphRAGEntity {id: row.t}) "
                "MERGE (a)-[r:GRAPHRAG_RELATED {id: row.id}]->(b) SET r.type = row.type, "
                "r.description = row.description, r.weight = row.weight, r.chunk_ids = row.chunk_ids, "
                "r.doc_ids = row.doc_ids",
                {"rows": rows},
            )

    def counts(self) -> dict[str, int]:
        """Numbers of entities, relationships, chunks and mentions in the store."""
        one = lambda cypher: int(self.query(cypher)[0]["n"])  # noqa: E731
        return {
            "entities": one("MATCH (e:GraphRAGEntity) RETURN count(e) AS n"),
            "relationships": one("MATCH ()-[r:GRAPHRAG_RELATED]->() RETURN count(r) AS n"),
            "chunks": one("MATCH (c:GraphRAGChunk) RETURN count(c) AS n"),
            "mentions": one("MATCH ()-[m:GRAPHRAG_MENTIONS]->() RETURN count(m) AS n"),
        }

    def close(self) -> None:
        """Close the store connection (a later write opens it again)."""
        store, self._store = self._store, None
        if store is not None:
            self._dialect.close(store)


class PropertyGraphStoreSink(GraphSink):
    """The graph in any LlamaIndex ``PropertyGraphStore``, through its generic upsert/delete API.

    The generic API cannot delete one relationship, so when a relationship goes away or changes its type, both
    endpoints are deleted and written again with all their current relationships; after deleting, whatever of
    the new graph the store no longer holds is written again.

    Example:

    ```python
    from llama_index.core.graph_stores import SimplePropertyGraphStore
    sink = PropertyGraphStoreSink(SimplePropertyGraphStore())
    ```
    """

    def __init__(self, store: Any) -> None:
        self.store = store

    def write(
        self,
        entities: Mapping[str, Entity],
        relationships: Mapping[str, Relationship],
        chunks: Mapping[str, ChunkRecord],
        diff: GraphDiff,
    ) -> None:
        """Write the complete new graph into the property graph store: delete what is gone, upsert what the diff
        changed."""
        from llama_index.core.graph_stores.types import ChunkNode, EntityNode, Relation

        rewired = set(diff.deleted_relationship_endpoints)
        for rid in diff.replaced_relationships:
            if rid in relationships:
                rewired.update((relationships[rid].source, relationships[rid].target))
        # A replaced chunk is deleted with its MENTIONS; the entities it still mentions are written again.
        rewired |= {e.id for e in entities.values() if diff.replaced_chunks.intersection(e.chunk_ids)}
        doomed = sorted(diff.delete_entities | diff.delete_chunks | diff.replaced_chunks | rewired)
        if doomed:
            self.store.delete(ids=doomed)
        # Stores differ in what a delete takes along (SimplePropertyGraphStore drops the neighbours of a deleted
        # triplet too): whatever of the new graph is missing now is written again.
        wanted = sorted(set(entities) | set(chunks))
        present = {n.id for n in self.store.get(ids=wanted)} if wanted else set()
        missing = set(wanted) - present
        upsert_c = (set(diff.upsert_chunks) | missing) & set(chunks)
        upsert_e = (set(diff.upsert_entities) | rewired | missing) & set(entities)
        upsert_e |= {e.id for e in entities.values() if upsert_c.intersection(e.chunk_ids)}
        upsert_r = {r.id for r in relationships.values() if r.source in upsert_e or r.target in upsert_e}
        upsert_r |= set(diff.upsert_relationships) & set(relationships)
        nodes: list[Any] = [
            ChunkNode(text=chunks[c].text, id_=c, properties={"doc_id": chunks[c].doc_id}) for c in sorted(upsert_c)
        ]
        nodes += [
            EntityNode(
                name=e.id,
                label=e.type,
                properties={
                    "display_name": e.name,
                    "description": e.description,
                    "chunk_ids": list(e.chunk_ids),
                    "doc_ids": list(e.doc_ids),
                },
            )
            for e in (entities[i] for i in sorted(upsert_e))
        ]
        self.store.upsert_nodes(nodes)
        rels = [
            Relation(
                label=r.type,
                source_id=r.source,
                target_id=r.target,
                properties={
                    "relationship_id": r.id,
                    "description": r.description,
                    "weight": r.weight,
                    "chunk_ids": list(r.chunk_ids),
                    "doc_ids": list(r.doc_ids),
                },
            )
            for r in (relationships[i] for i in sorted(upsert_r))
        ]
        rels += [
            Relation(label="MENTIONS", source_id=c, target_id=e.id)
            for e in (entities[i] for i in sorted(upsert_e))
            for c in e.chunk_ids
            if c in chunks
        ]
        self.store.upsert_relations(rels)
