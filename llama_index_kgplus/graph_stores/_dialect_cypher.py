"""The Cypher dialects of FalkorDB (its own protocol) and Neo4j 5 (Bolt): real labels and relationship
types, ``UNWIND`` batches, one ``allShortestPaths`` statement for all pairs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus.errors import GraphStoreError
from llama_index_kgplus.graph_stores._dialect_base import (
    IDENTIFIER_RE,
    META_LABEL,
    GraphDialect,
    GraphLayout,
    NodeRecord,
    RawPath,
    RelRecord,
    _check_hops,
    _decode_path,
    quote_identifier,
)
from llama_index_kgplus.graph_stores._drivers import FalkorDBDriver, Neo4jDriver

logger = get_logger(__name__)


class _CypherDialect(GraphDialect):
    """What FalkorDB and Neo4j share: real labels and relationship types, ``allShortestPaths``."""

    rel_id_function: ClassVar[str] = "elementId"
    entity_labels: ClassVar[tuple[str, ...]] = ("__Entity__", "__Node__")

    def read_meta(self, store: Any, key: str) -> str | None:
        rows = self.run(store, f"MATCH (m:{META_LABEL} {{key: $key}}) RETURN m.value AS value", {"key": key})
        return rows[0]["value"] if rows else None

    def write_meta(self, store: Any, key: str, value: str) -> None:
        self.run(store, f"MERGE (m:{META_LABEL} {{key: $key}}) SET m.value = $value", {"key": key, "value": value})

    def delete_meta(self, store: Any, key: str) -> None:
        self.run(store, f"MATCH (m:{META_LABEL} {{key: $key}}) DELETE m", {"key": key})

    def property_graph_layout(self, store: Any) -> GraphLayout | None:
        # LlamaIndex's FalkorDB and Neo4j stores: entities labelled __Entity__ (id = name), relations with their own
        # types; MENTIONS runs from chunks, so only types between two entities are paths.
        rows = self.run(store, "MATCH (a:__Entity__)-[r]->(:__Entity__) RETURN DISTINCT type(r) AS t LIMIT 10000")
        if not rows and not self.run(store, "MATCH (n:__Entity__) RETURN n.id AS id LIMIT 1"):
            return None
        types = sorted({str(r["t"]) for r in rows})
        usable = [t for t in types if IDENTIFIER_RE.fullmatch(t)]
        if len(usable) < len(types):
            logger.warning(
                "Relationship types that are not plain identifiers are not followed by paths: %s",
                sorted(set(types) - set(usable))[:10],
            )
        return GraphLayout(node_label="__Entity__", id_property="id", name_property="name",
                           rel_types=tuple(usable) or ("RELATED_TO",))  # fmt: skip

    def count_nodes(self, store: Any, layout: GraphLayout) -> int:
        rows = self.run(store, f"MATCH (n:{quote_identifier(layout.node_label)}) RETURN count(n) AS n")
        return int(rows[0]["n"]) if rows else 0

    def drop_graph(self, store: Any, layout: GraphLayout) -> None:
        label = quote_identifier(layout.node_label)
        # in batches, so a large graph does not need one huge transaction
        while True:
            rows = self.run(
                store,
                f"MATCH (n:{label}) WITH n LIMIT $batch DETACH DELETE n RETURN count(*) AS n",
                {"batch": 10_000},
            )
            if not rows or int(rows[0]["n"]) == 0:
                break

    can_swap = True

    @classmethod
    def _swap_statements(cls, staged: GraphLayout, layout: GraphLayout) -> list[str]:
        label, staged_label = quote_identifier(layout.node_label), quote_identifier(staged.node_label)
        live = "".join(f":{quote_identifier(lb)}" for lb in (layout.node_label, *cls.entity_labels))
        return [
            f"MATCH (n:{label}) DETACH DELETE n",
            f"MATCH (m:{staged_label}) SET m{live} REMOVE m:{staged_label}",  # each engine counts m after it
            f"MERGE (meta:{META_LABEL} {{key: $key}}) SET meta.value = $value",
        ]

    def write_nodes(
        self,
        store: Any,
        layout: GraphLayout,
        nodes: Sequence[NodeRecord],
        node_properties: dict[str, str],
        batch_size: int = 10_000,
        progress: Any = None,
    ) -> int:
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
        for node in nodes:
            props = {k: v for k, v in node.properties.items() if v is not None}
            props[layout.id_property] = node.id
            extra = tuple(sorted({lb for lb in node.labels if lb != layout.node_label}))
            groups[extra].append(props)
        written = 0
        for extra, rows in groups.items():
            labels = "".join(":" + quote_identifier(lb, "label") for lb in (layout.node_label, *extra))
            query = f"UNWIND $rows AS r CREATE (n{labels}) SET n += r"
            written += self._run_batches(store, query, rows, batch_size, progress)
        return written

    def _run_batches(
        self, store: Any, query: str, rows: list[dict[str, Any]], batch_size: int, progress: Any = None
    ) -> int:
        """``query`` (which reads ``$rows``) once per batch of rows; returns how many rows went in."""
        for i in range(0, len(rows), batch_size):
            batch = rows[i : i + batch_size]
            self.run(store, query, {"rows": batch})
            if progress is not None:
                progress.update(len(batch))
        return len(rows)

    def write_relationships(
        self,
        store: Any,
        layout: GraphLayout,
        rels: Sequence[RelRecord],
        rel_properties: dict[str, str],
        batch_size: int = 10_000,
        progress: Any = None,
    ) -> int:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for rel in rels:
            props = {k: v for k, v in rel.properties.items() if v is not None}
            groups[rel.type].append({"s": rel.start, "e": rel.end, "p": props})
        written = 0
        for rel_type, rows in groups.items():
            query = (
                f"UNWIND $rows AS r MATCH (a:{label} {{{idp}: r.s}}) MATCH (b:{label} {{{idp}: r.e}}) "
                f"CREATE (a)-[x:{quote_identifier(rel_type, 'relationship type')}]->(b) SET x += r.p"
            )
            written += self._run_batches(store, query, rows, batch_size, progress)
        return written

    def write_aliases(
        self, store: Any, layout: GraphLayout, aliases: Sequence[tuple[str, str]], batch_size: int = 10_000
    ) -> int:
        by_id: dict[str, list[str]] = defaultdict(list)
        for node_id, alias in aliases:
            by_id[node_id].append(alias)
        rows = [{"id": k, "a": v} for k, v in by_id.items()]
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        aliasp = quote_identifier(layout.alias_property)
        self.run(store, f"MATCH (n:{label}) WHERE n.{aliasp} IS NOT NULL SET n.{aliasp} = null")  # replace, not add
        query = (
            f"UNWIND $rows AS r MATCH (n:{label} {{{idp}: r.id}}) SET n.{quote_identifier(layout.alias_property)} = r.a"
        )
        self._run_batches(store, query, rows, batch_size)
        return len(aliases)

    def read_names(self, store: Any, layout: GraphLayout) -> Iterator[tuple[str, str, bool]]:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        namep, aliasp = quote_identifier(layout.name_property), quote_identifier(layout.alias_property)
        for row in self.run(
            store, f"MATCH (n:{label}) WHERE n.{namep} IS NOT NULL RETURN n.{idp} AS id, n.{namep} AS name"
        ):
            yield str(row["id"]), str(row["name"]), False
        query = f"MATCH (n:{label}) WHERE n.{aliasp} IS NOT NULL UNWIND n.{aliasp} AS a RETURN n.{idp} AS id, a"
        for row in self.run(store, query):
            yield str(row["id"]), str(row["a"]), True

    def relationships_query(self, layout: GraphLayout) -> str:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        return (
            f"MATCH (a:{label})-[r:{self._rel_pattern_cypher(layout)}]->(b:{label}) "
            f"RETURN a.{idp} AS s, b.{idp} AS t, type(r) AS type"
        )

    def shortest_paths_statement(
        self, layout: GraphLayout, pairs: Sequence[tuple[str, str]], max_hops: int, limit: int
    ) -> tuple[str, dict[str, Any]]:
        # All pairs in one statement (UNWIND). FalkorDB accepts allShortestPaths only over two already-bound
        # nodes; Neo4j 5 (and Cypher 25) accept the same form, so both engines share it.
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        query = (
            f"UNWIND $pairs AS pair "
            f"MATCH (a:{label} {{{idp}: pair[0]}}), (b:{label} {{{idp}: pair[1]}}) WITH a, b "
            f"MATCH p = allShortestPaths((a)-[:{self._rel_pattern_cypher(layout)}*..{_check_hops(max_hops)}]-(b)) "
            f"WHERE all(n IN nodes(p) WHERE n:{label}) "
            f"RETURN {self._path_columns_cypher(layout, self.rel_id_function)} LIMIT $limit"
        )
        return query, {"pairs": [list(p) for p in pairs], "limit": limit}

    def neighbours_query(self, layout: GraphLayout) -> str:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        return (
            f"MATCH p = (a:{label})-[:{self._rel_pattern_cypher(layout)}]-(b:{label}) WHERE a.{idp} IN $ids "
            f"RETURN {self._path_columns_cypher(layout, self.rel_id_function)} LIMIT $limit"
        )

    def decode_path(self, row: dict[str, Any], layout: GraphLayout) -> RawPath:
        return _decode_path(row, layout)


class FalkorDBDialect(_CypherDialect):
    """FalkorDB through its own protocol (the ``falkordb`` client); relationship ids are ``id(r)``."""

    engine = "falkordb"
    driver_type = FalkorDBDriver
    rel_id_function = "id"

    def swap_graph(self, store: Any, staged: GraphLayout, layout: GraphLayout, meta_key: str, meta_value: str) -> int:
        # FalkorDB has no multi-statement transactions, but one query is atomic: chain the three
        drop, move, meta = self._swap_statements(staged, layout)
        query = f"{drop} WITH count(*) AS dropped {move} WITH count(m) AS moved {meta} RETURN moved"
        rows = self.run(store, query, {"key": meta_key, "value": meta_value})
        return int(rows[0]["moved"]) if rows else 0

    def create_schema(
        self, store: Any, layout: GraphLayout, node_properties: dict[str, str], rel_properties: dict[str, str]
    ) -> None:
        for label in (layout.node_label, META_LABEL):
            prop = layout.id_property if label == layout.node_label else "key"
            try:
                self.run(store, f"CREATE INDEX FOR (n:{quote_identifier(label)}) ON (n.{quote_identifier(prop)})")
            except GraphStoreError as exc:
                if "already indexed" not in str(exc):
                    raise


class Neo4jDialect(_CypherDialect):
    """Neo4j 5 (valid on Cypher 25) over Bolt; relationship ids are ``elementId(r)``.

    Opened with ``refresh_schema=False, create_indexes=False``: path retrieval needs neither APOC nor the
    vector indexes of ``Neo4jPropertyGraphStore``.
    """

    engine = "neo4j"
    driver_type = Neo4jDriver
    open_kwargs: ClassVar[dict[str, Any]] = {
        "sanitize_query_output": False,
        "refresh_schema": False,
        "create_indexes": False,
    }

    def swap_graph(self, store: Any, staged: GraphLayout, layout: GraphLayout, meta_key: str, meta_value: str) -> int:
        # One explicit transaction: delete, relabel, manifest. The unique constraint on the id is dropped for the
        # switch and made again after it: ArcadeDB checks it per statement even inside a transaction, where the
        # deleted nodes still hold their keys.
        drop, move, meta = self._swap_statements(staged, layout)

        def work(tx: Any) -> int:
            tx.run(drop).consume()
            moved = tx.run(f"{move} RETURN count(m) AS moved").single()["moved"]
            tx.run(meta, key=meta_key, value=meta_value).consume()
            return int(moved)

        self.run(store, f"DROP CONSTRAINT {self._constraint_name(layout)} IF EXISTS")
        try:
            moved = Neo4jDriver.of(store).write(work)
        except Exception as exc:  # drivers raise many types; report them as one, keep the cause
            raise self._error(exc) from exc
        finally:
            self.create_schema(store, layout, {}, {})
        return moved

    @staticmethod
    def _constraint_name(layout: GraphLayout) -> str:
        return quote_identifier(f"kgplus_{layout.node_label}_{layout.id_property}")

    def create_schema(
        self, store: Any, layout: GraphLayout, node_properties: dict[str, str], rel_properties: dict[str, str]
    ) -> None:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        name = self._constraint_name(layout)
        self.run(store, f"CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{label}) REQUIRE n.{idp} IS UNIQUE")
        self.run(store, f"CREATE CONSTRAINT kgplus_meta_key IF NOT EXISTS FOR (m:{META_LABEL}) REQUIRE m.key IS UNIQUE")
