"""Per-engine Cypher dialects: the few statements that differ between Ladybug, FalkorDB and Neo4j.

Shared by the KG path retrieval (``kg/``) and GraphRAG. A dialect is a small stateless object; every call takes
the LlamaIndex ``PropertyGraphStore`` it runs on and goes through its ``structured_query``.

Safety rules kept by every statement here:

- every *value* travels as a query parameter;
- the only things formatted into query text are identifiers (labels, relationship types, property names),
  checked against :data:`IDENTIFIER_RE` and back-quoted; small validated integers that Cypher cannot take as
  parameters (the upper bound of a variable-length path); and, for Ladybug's ``COPY FROM``, the path of a
  temporary file this module created itself;
- every variable-length pattern has an upper bound, and every path query a ``LIMIT``.

Example::

    store = open_graph_store("ladybug:///tmp/kg.lbug")
    dialect = dialect_for_store(store)
    layout = GraphLayout(node_label="Ent", id_property="cid", name_property="name", rel_types=("Rel",))
    paths = dialect.shortest_paths(store, layout, [("C1", "C2")], max_hops=2, limit=1000)
"""

from __future__ import annotations

import asyncio
import csv
import math
import re
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from llama_index_kgplus.errors import GraphStoreError, InputDataError

#: Labels, relationship types and property names: letters, digits and ``_``, not starting with a digit.
IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
#: Value types of node/relationship properties (neo4j-admin header types, normalised).
SCALAR_TYPES = ("string", "int", "float", "boolean")
#: Upper bound of ``max_hops`` accepted by the path queries.
MAX_HOPS_LIMIT = 6
#: Label (Ladybug: node table) of the small key/value records a capability keeps in the store.
META_LABEL = "KGPlusMeta"


def quote_identifier(name: str, what: str = "identifier") -> str:
    """``name`` back-quoted for Cypher, after checking it is a plain identifier (never user text)."""
    if not isinstance(name, str) or not IDENTIFIER_RE.fullmatch(name):
        raise InputDataError(
            f"Invalid {what} {name!r}: use letters, digits and '_' only (not starting with a digit), "
            "at most 128 characters."
        )
    return f"`{name}`"


def _check_hops(max_hops: int) -> int:
    if isinstance(max_hops, bool) or not isinstance(max_hops, int) or not 1 <= max_hops <= MAX_HOPS_LIMIT:
        raise ValueError(f"max_hops must be an integer from 1 to {MAX_HOPS_LIMIT}, got {max_hops!r}.")
    return max_hops


def _check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}.")
    return limit


@dataclass(frozen=True)
class GraphLayout:
    """Where a graph lives in a store.

    ``node_label`` marks every node of the graph (Ladybug: its node table), ``id_property`` is their unique
    key and ``name_property`` their display name. ``rel_types`` are the relationship types paths may use
    (other relationships, e.g. a PropertyGraphIndex's ``MENTIONS`` to chunk nodes, are never traversed);
    Ladybug keeps all of them in one relationship table ``rel_table`` whose ``type_column`` holds the type.
    ``rel_properties`` are returned with every relationship of a path. ``alias_property`` holds extra names
    (Cypher engines: a list property on the node; Ladybug: a table ``<node_label>Alias``).
    """

    node_label: str = "Ent"
    id_property: str = "cid"
    name_property: str = "name"
    rel_types: tuple[str, ...] = ("Rel",)
    rel_properties: tuple[str, ...] = ()
    rel_table: str = "Rel"
    type_column: str = "reltype"
    labels_column: str = "labels"
    alias_property: str = "synonyms"

    def __post_init__(self) -> None:
        for what in ("node_label", "id_property", "name_property", "rel_table", "type_column", "labels_column",
                     "alias_property"):
            quote_identifier(getattr(self, what), what.replace("_", " "))
        for name in (*self.rel_types, *self.rel_properties):
            quote_identifier(name, "relationship type or property")
        if not self.rel_types:
            raise InputDataError("A graph layout needs at least one relationship type.")

    @property
    def alias_table(self) -> str:
        return f"{self.node_label}Alias"


@dataclass(frozen=True)
class RawPath:
    """A path as an engine returned it: node ids and names in path order, and per relationship its type,
    whether it points forward (from ``node_ids[i]`` to ``node_ids[i + 1]``), an engine id that tells parallel
    relationships apart, and the requested properties."""

    node_ids: tuple[str, ...]
    node_names: tuple[str | None, ...]
    rel_types: tuple[str, ...]
    rel_forward: tuple[bool, ...]
    rel_keys: tuple[str, ...]
    rel_properties: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def length(self) -> int:
        return len(self.rel_types)


@dataclass(frozen=True)
class NodeRecord:
    """A node to write: its id, extra labels and properties (``None`` values are not stored)."""

    id: str
    labels: tuple[str, ...] = ()
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RelRecord:
    """A relationship to write, from node ``start`` to node ``end``."""

    start: str
    end: str
    type: str
    properties: dict[str, Any] = field(default_factory=dict)


class GraphDialect(ABC):
    """The engine-specific statements; subclasses are stateless singletons."""

    engine: ClassVar[str]
    #: keyword arguments for :func:`open_graph_store` that this use needs. ``sanitize_query_output=False``:
    #: LlamaIndex's output sanitiser drops lists of 128+ items and ``None`` list items (Ladybug's store even
    #: applies it to the whole result, so 128+ rows come back as ``None``), which would corrupt paths.
    open_kwargs: ClassVar[dict[str, Any]] = {"sanitize_query_output": False}

    # ------------------------------------------------------------------ running queries

    def run(self, store: Any, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run through ``store.structured_query``; a store opened with output sanitising on is queried through
        its own client instead (same call, minus the sanitiser)."""
        try:
            if getattr(store, "sanitize_query_output", False):
                return self._run_unsanitized(store, query, params or {})
            return list(store.structured_query(query, params or {}))
        except Exception as exc:  # drivers raise many types; report them as one, keep the cause
            raise self._error(exc) from exc

    @abstractmethod
    def _run_unsanitized(self, store: Any, query: str, params: dict[str, Any]) -> list[dict[str, Any]]: ...

    async def arun(self, store: Any, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Async twin of :meth:`run`: a worker thread (the FalkorDB and Neo4j clients are thread-safe; the
        Neo4j store's async driver is not used because it binds to the first event loop that uses it);
        Ladybug uses its own async connection."""
        return await asyncio.to_thread(self.run, store, query, params)

    def _error(self, exc: Exception) -> GraphStoreError:
        if isinstance(exc, GraphStoreError):
            return exc
        return GraphStoreError(f"{self.engine} query failed ({type(exc).__name__}: {exc}).")

    def close(self, store: Any) -> None:
        """Release the store's connections (the embedded store's file lock too)."""
        close = getattr(store, "close", None)
        if callable(close):
            close()

    # ------------------------------------------------------------------ key/value records

    @abstractmethod
    def read_meta(self, store: Any, key: str) -> str | None: ...

    @abstractmethod
    def write_meta(self, store: Any, key: str, value: str) -> None: ...

    @abstractmethod
    def delete_meta(self, store: Any, key: str) -> None: ...

    # ------------------------------------------------------------------ writing a graph

    @abstractmethod
    def count_nodes(self, store: Any, layout: GraphLayout) -> int: ...

    @abstractmethod
    def create_schema(
        self, store: Any, layout: GraphLayout, node_properties: dict[str, str], rel_properties: dict[str, str]
    ) -> None:
        """Create what the layout needs (tables, the unique index on the id property)."""

    @abstractmethod
    def drop_graph(self, store: Any, layout: GraphLayout) -> None:
        """Delete every node of ``layout.node_label`` with its relationships, and its schema."""

    @abstractmethod
    def write_nodes(
        self, store: Any, layout: GraphLayout, nodes: Sequence[NodeRecord], node_properties: dict[str, str],
        batch_size: int = 10_000, progress: Any = None,
    ) -> int: ...

    @abstractmethod
    def write_relationships(
        self, store: Any, layout: GraphLayout, rels: Sequence[RelRecord], rel_properties: dict[str, str],
        batch_size: int = 10_000, progress: Any = None,
    ) -> int: ...

    @abstractmethod
    def write_aliases(
        self, store: Any, layout: GraphLayout, aliases: Sequence[tuple[str, str]], batch_size: int = 10_000
    ) -> int:
        """Replace the aliases of the layout's nodes with ``(id, alias)`` pairs."""

    # ------------------------------------------------------------------ reading a graph

    @abstractmethod
    def read_names(self, store: Any, layout: GraphLayout) -> Iterator[tuple[str, str, bool]]:
        """``(id, name_or_alias, is_alias)`` for every node name and alias."""

    @abstractmethod
    def shortest_paths_statement(
        self, layout: GraphLayout, pairs: Sequence[tuple[str, str]], max_hops: int, limit: int
    ) -> tuple[str, dict[str, Any]]:
        """The query and parameters that return every pair's shortest paths in one round trip."""

    @abstractmethod
    def neighbours_query(self, layout: GraphLayout) -> str: ...

    @abstractmethod
    def decode_path(self, row: dict[str, Any], layout: GraphLayout) -> RawPath: ...

    def shortest_paths(
        self, store: Any, layout: GraphLayout, pairs: Sequence[tuple[str, str]], max_hops: int = 2,
        limit: int = 10_000,
    ) -> list[RawPath]:
        """All shortest paths of at most ``max_hops`` relationships between each pair, direction ignored,
        in one round trip. A path goes from the pair's first id to its second. Pairs of equal ids are skipped."""
        pairs = _unique_pairs(pairs)
        if not pairs:
            return []
        query, params = self.shortest_paths_statement(layout, pairs, _check_hops(max_hops), _check_limit(limit))
        return self._paths_for_pairs(self.run(store, query, params), layout, pairs)

    async def ashortest_paths(
        self, store: Any, layout: GraphLayout, pairs: Sequence[tuple[str, str]], max_hops: int = 2,
        limit: int = 10_000,
    ) -> list[RawPath]:
        pairs = _unique_pairs(pairs)
        if not pairs:
            return []
        query, params = self.shortest_paths_statement(layout, pairs, _check_hops(max_hops), _check_limit(limit))
        return self._paths_for_pairs(await self.arun(store, query, params), layout, pairs)

    def neighbours(self, store: Any, layout: GraphLayout, ids: Sequence[str], limit: int = 10_000) -> list[RawPath]:
        """The direct relationships of the given nodes as one-hop paths starting at them."""
        if not ids:
            return []
        rows = self.run(store, self.neighbours_query(layout), {"ids": list(ids), "limit": _check_limit(limit)})
        return [_starting_at(self.decode_path(row, layout), set(ids)) for row in rows]

    async def aneighbours(
        self, store: Any, layout: GraphLayout, ids: Sequence[str], limit: int = 10_000
    ) -> list[RawPath]:
        if not ids:
            return []
        rows = await self.arun(
            store, self.neighbours_query(layout), {"ids": list(ids), "limit": _check_limit(limit)}
        )
        return [_starting_at(self.decode_path(row, layout), set(ids)) for row in rows]

    def _paths_for_pairs(
        self, rows: list[dict[str, Any]], layout: GraphLayout, pairs: list[tuple[str, str]]
    ) -> list[RawPath]:
        wanted = {frozenset(p): p for p in pairs}
        by_pair: dict[frozenset[str], list[RawPath]] = defaultdict(list)
        for row in rows:
            path = self.decode_path(row, layout)
            key = frozenset((path.node_ids[0], path.node_ids[-1]))
            pair = wanted.get(key)
            if pair is None:
                continue  # a statement over an id set also answers pairs nobody asked for
            by_pair[key].append(path if path.node_ids[0] == pair[0] else reverse_path(path))
        out = []
        for paths in by_pair.values():  # keep each pair's shortest (statements may return longer walks too)
            shortest = min(p.length for p in paths)
            out += [p for p in paths if p.length == shortest]
        return out

    # ------------------------------------------------------------------ helpers for subclasses

    @staticmethod
    def _path_columns_cypher(layout: GraphLayout, id_fn: str) -> str:
        idp, namep = quote_identifier(layout.id_property), quote_identifier(layout.name_property)
        cols = [
            f"[n IN nodes(p) | n.{idp}] AS node_ids",
            f"[n IN nodes(p) | n.{namep}] AS node_names",
            "[r IN relationships(p) | type(r)] AS rel_types",
            f"[r IN relationships(p) | startNode(r).{idp}] AS rel_starts",
            f"[r IN relationships(p) | {id_fn}(r)] AS rel_keys",
        ]
        cols += [
            f"[r IN relationships(p) | r.{quote_identifier(prop)}] AS prop_{i}"
            for i, prop in enumerate(layout.rel_properties)
        ]
        return ", ".join(cols)

    @staticmethod
    def _rel_pattern_cypher(layout: GraphLayout) -> str:
        return "|".join(quote_identifier(t, "relationship type") for t in layout.rel_types)


def _unique_pairs(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    seen, out = set(), []
    for a, b in pairs:
        key = frozenset((a, b))
        if a != b and key not in seen:
            seen.add(key)
            out.append((str(a), str(b)))
    return out


def _starting_at(path: RawPath, ids: set[str]) -> RawPath:
    return path if path.node_ids[0] in ids else reverse_path(path)


def reverse_path(path: RawPath) -> RawPath:
    """The same path read from its other end."""
    return RawPath(
        node_ids=path.node_ids[::-1],
        node_names=path.node_names[::-1],
        rel_types=path.rel_types[::-1],
        rel_forward=tuple(not f for f in path.rel_forward[::-1]),
        rel_keys=path.rel_keys[::-1],
        rel_properties=path.rel_properties[::-1],
    )


def _decode_cypher_path(row: dict[str, Any], layout: GraphLayout) -> RawPath:
    node_ids = tuple(str(x) for x in row["node_ids"])
    starts = [str(x) for x in row["rel_starts"]]
    props = tuple(
        {prop: row[f"prop_{i}"][j] for i, prop in enumerate(layout.rel_properties)} for j in range(len(starts))
    )
    return RawPath(
        node_ids=node_ids,
        node_names=tuple(row["node_names"]),
        rel_types=tuple(str(t) for t in row["rel_types"]),
        rel_forward=tuple(starts[j] == node_ids[j] for j in range(len(starts))),
        rel_keys=tuple(_key(k) for k in row["rel_keys"]),
        rel_properties=props,
    )


class _CypherDialect(GraphDialect):
    """What FalkorDB and Neo4j share: real labels and relationship types, ``allShortestPaths``."""

    rel_id_function: ClassVar[str] = "elementId"

    def read_meta(self, store: Any, key: str) -> str | None:
        rows = self.run(store, f"MATCH (m:{META_LABEL} {{key: $key}}) RETURN m.value AS value", {"key": key})
        return rows[0]["value"] if rows else None

    def write_meta(self, store: Any, key: str, value: str) -> None:
        self.run(store, f"MERGE (m:{META_LABEL} {{key: $key}}) SET m.value = $value", {"key": key, "value": value})

    def delete_meta(self, store: Any, key: str) -> None:
        self.run(store, f"MATCH (m:{META_LABEL} {{key: $key}}) DELETE m", {"key": key})

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

    def write_nodes(
        self, store: Any, layout: GraphLayout, nodes: Sequence[NodeRecord], node_properties: dict[str, str],
        batch_size: int = 10_000, progress: Any = None,
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
            for i in range(0, len(rows), batch_size):
                batch = rows[i : i + batch_size]
                self.run(store, query, {"rows": batch})
                written += len(batch)
                if progress is not None:
                    progress.update(len(batch))
        return written

    def write_relationships(
        self, store: Any, layout: GraphLayout, rels: Sequence[RelRecord], rel_properties: dict[str, str],
        batch_size: int = 10_000, progress: Any = None,
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
            for i in range(0, len(rows), batch_size):
                batch = rows[i : i + batch_size]
                self.run(store, query, {"rows": batch})
                written += len(batch)
                if progress is not None:
                    progress.update(len(batch))
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
            f"UNWIND $rows AS r MATCH (n:{label} {{{idp}: r.id}}) "
            f"SET n.{quote_identifier(layout.alias_property)} = r.a"
        )
        for i in range(0, len(rows), batch_size):
            self.run(store, query, {"rows": rows[i : i + batch_size]})
        return len(aliases)

    def read_names(self, store: Any, layout: GraphLayout) -> Iterator[tuple[str, str, bool]]:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        namep, aliasp = quote_identifier(layout.name_property), quote_identifier(layout.alias_property)
        for row in self.run(store, f"MATCH (n:{label}) WHERE n.{namep} IS NOT NULL RETURN n.{idp} AS id, n.{namep} AS name"):
            yield str(row["id"]), str(row["name"]), False
        query = f"MATCH (n:{label}) WHERE n.{aliasp} IS NOT NULL UNWIND n.{aliasp} AS a RETURN n.{idp} AS id, a"
        for row in self.run(store, query):
            yield str(row["id"]), str(row["a"]), True

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
        return _decode_cypher_path(row, layout)


class FalkorDBDialect(_CypherDialect):
    """FalkorDB through its own protocol (the ``falkordb`` client); relationship ids are ``id(r)``."""

    engine = "falkordb"
    rel_id_function = "id"

    def _run_unsanitized(self, store: Any, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        from llama_index.graph_stores.falkordb.falkordb_property_graph import to_plain_value

        result = store._graph.query(query, params, timeout=getattr(store, "_timeout", None))
        return [{h[1]: to_plain_value(v) for h, v in zip(result.header, row)} for row in result.result_set]

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
    open_kwargs: ClassVar[dict[str, Any]] = {
        "sanitize_query_output": False, "refresh_schema": False, "create_indexes": False,
    }

    def _run_unsanitized(self, store: Any, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        records, _, _ = store._driver.execute_query(query, parameters_=params, database_=store._database)
        return [r.data() for r in records]

    def create_schema(
        self, store: Any, layout: GraphLayout, node_properties: dict[str, str], rel_properties: dict[str, str]
    ) -> None:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        name = quote_identifier(f"kgplus_{layout.node_label}_{layout.id_property}")
        self.run(store, f"CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{label}) REQUIRE n.{idp} IS UNIQUE")
        self.run(store, f"CREATE CONSTRAINT kgplus_meta_key IF NOT EXISTS FOR (m:{META_LABEL}) REQUIRE m.key IS UNIQUE")


_LADYBUG_TYPES = {"string": "STRING", "int": "INT64", "float": "DOUBLE", "boolean": "BOOLEAN"}
_UNSAFE_LIST_ITEM = re.compile(r"[,\[\]{}\"'\\\n\r]")


class LadybugDialect(GraphDialect):
    """Ladybug (embedded Kuzu fork): typed tables, ``ALL SHORTEST`` recursive patterns, ``COPY FROM`` loads.

    The graph gets its own tables, separate from the ``Entity``/``Chunk`` tables that
    ``LadybugPropertyGraphStore`` creates: a node table ``layout.node_label`` (extra labels in a list column),
    one relationship table ``layout.rel_table`` (the type in a column), a table ``<label>Alias`` for aliases
    and ``KGPlusMeta`` for key/value records. Chunk nodes are therefore never on a path.

    Shortest paths take every pair of the question's ids in one statement: the sources and targets are given
    as lists (``a.id IN $ids``), which lets the engine run one bounded search per source; pairs given one by
    one through ``UNWIND`` defeat that optimisation here (about a second per pair on the 135-node UMLS graph
    instead of milliseconds). A single pair uses both primary keys directly.
    """

    engine = "ladybug"

    def _run_unsanitized(self, store: Any, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        result = store.connection.execute(query, parameters=params)
        columns = result.get_column_names()
        return [dict(zip(columns, row)) for row in result]

    async def arun(self, store: Any, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        conn = getattr(store, "async_connection", None)
        if conn is None:
            return await super().arun(store, query, params)
        try:
            result = await conn.execute(query, params or {})
            columns = result.get_column_names()
            return [dict(zip(columns, row)) for row in result]
        except Exception as exc:
            raise self._error(exc) from exc

    def close(self, store: Any) -> None:
        for attr in ("async_connection", "connection", "db"):
            obj = getattr(store, attr, None)
            close = getattr(obj, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass

    def _tables(self, store: Any) -> set[str]:
        return {row["name"] for row in self.run(store, "CALL show_tables() RETURN name")}

    # key/value records
    def read_meta(self, store: Any, key: str) -> str | None:
        if META_LABEL not in self._tables(store):
            return None
        rows = self.run(store, f"MATCH (m:{META_LABEL} {{key: $key}}) RETURN m.value AS value", {"key": key})
        return rows[0]["value"] if rows else None

    def write_meta(self, store: Any, key: str, value: str) -> None:
        self.run(store, f"CREATE NODE TABLE IF NOT EXISTS {META_LABEL}(key STRING PRIMARY KEY, value STRING)")
        self.run(store, f"MERGE (m:{META_LABEL} {{key: $key}}) SET m.value = $value", {"key": key, "value": value})

    def delete_meta(self, store: Any, key: str) -> None:
        if META_LABEL in self._tables(store):
            self.run(store, f"MATCH (m:{META_LABEL} {{key: $key}}) DELETE m", {"key": key})

    # schema
    def count_nodes(self, store: Any, layout: GraphLayout) -> int:
        if layout.node_label not in self._tables(store):
            return 0
        rows = self.run(store, f"MATCH (n:{quote_identifier(layout.node_label)}) RETURN count(n) AS n")
        return int(rows[0]["n"]) if rows else 0

    def create_schema(
        self, store: Any, layout: GraphLayout, node_properties: dict[str, str], rel_properties: dict[str, str]
    ) -> None:
        node_cols = [f"{quote_identifier(layout.id_property)} STRING PRIMARY KEY"]
        node_cols += [
            f"{quote_identifier(k)} {self._column_type(t)}" for k, t in node_properties.items() if k != layout.id_property
        ]
        node_cols.append(f"{quote_identifier(layout.labels_column)} STRING[]")
        label = quote_identifier(layout.node_label)
        rel_cols = [f"{quote_identifier(layout.type_column)} STRING"]
        rel_cols += [f"{quote_identifier(k)} {self._column_type(t)}" for k, t in rel_properties.items()]
        self.run(store, f"CREATE NODE TABLE {label}({', '.join(node_cols)})")
        self.run(store, f"CREATE REL TABLE {quote_identifier(layout.rel_table)}(FROM {label} TO {label}, {', '.join(rel_cols)})")
        self._create_alias_table(store, layout)

    def _create_alias_table(self, store: Any, layout: GraphLayout) -> None:
        self.run(
            store,
            f"CREATE NODE TABLE IF NOT EXISTS {quote_identifier(layout.alias_table)}"
            f"(aid SERIAL PRIMARY KEY, node_id STRING, alias STRING)",
        )

    @staticmethod
    def _column_type(value_type: str) -> str:
        base = value_type[:-2] if value_type.endswith("[]") else value_type
        if base not in _LADYBUG_TYPES:
            raise InputDataError(f"Unsupported property type {value_type!r}; use one of {SCALAR_TYPES} or arrays.")
        return _LADYBUG_TYPES[base] + ("[]" if value_type.endswith("[]") else "")

    def drop_graph(self, store: Any, layout: GraphLayout) -> None:
        tables = self._tables(store)
        for name in (layout.rel_table, layout.alias_table, layout.node_label):
            if name in tables:
                self.run(store, f"DROP TABLE {quote_identifier(name)}")

    # writes: COPY FROM a temporary CSV (UNWIND ... CREATE is orders of magnitude slower on this engine)
    def write_nodes(
        self, store: Any, layout: GraphLayout, nodes: Sequence[NodeRecord], node_properties: dict[str, str],
        batch_size: int = 10_000, progress: Any = None,
    ) -> int:
        columns = [k for k in node_properties if k != layout.id_property]

        def rows() -> Iterator[list[Any]]:
            for node in nodes:
                labels = sorted({layout.node_label, *node.labels})
                yield [node.id, *(self._csv_value(node.properties.get(c), node_properties[c]) for c in columns),
                       self._csv_value(labels, "string[]")]

        return self._copy(store, layout.node_label, None, rows(), len(nodes), progress)

    def write_relationships(
        self, store: Any, layout: GraphLayout, rels: Sequence[RelRecord], rel_properties: dict[str, str],
        batch_size: int = 10_000, progress: Any = None,
    ) -> int:
        columns = list(rel_properties)

        def rows() -> Iterator[list[Any]]:
            for rel in rels:
                yield [rel.start, rel.end, rel.type,
                       *(self._csv_value(rel.properties.get(c), rel_properties[c]) for c in columns)]

        return self._copy(store, layout.rel_table, None, rows(), len(rels), progress)

    def write_aliases(
        self, store: Any, layout: GraphLayout, aliases: Sequence[tuple[str, str]], batch_size: int = 10_000
    ) -> int:
        self._create_alias_table(store, layout)
        self.run(store, f"MATCH (s:{quote_identifier(layout.alias_table)}) DELETE s")  # replace, not add
        return self._copy(store, layout.alias_table, ("node_id", "alias"), ([a, b] for a, b in aliases),
                          len(aliases), None)

    @staticmethod
    def _csv_value(value: Any, value_type: str) -> Any:
        if value is None:
            return None
        if value_type.endswith("[]"):
            items = []
            for item in value:
                text = str(item).lower() if isinstance(item, bool) else str(item)
                if _UNSAFE_LIST_ITEM.search(text) or text != text.strip():
                    raise InputDataError(
                        f"Array value {item!r} holds a comma, bracket, quote, backslash, newline or edge "
                        "whitespace, which the embedded store's CSV list format cannot carry; store it as a "
                        "plain string column or use a FalkorDB/Neo4j store."
                    )
                items.append(text)
            return "[" + ",".join(items) + "]"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return value

    def _copy(self, store: Any, table: str, columns: tuple[str, ...] | None, rows: Iterable[list[Any]],
              total: int, progress: Any) -> int:
        if total == 0:
            return 0
        tmpdir = Path(tempfile.mkdtemp(prefix="kgplus-copy-"))
        try:
            path = tmpdir / "rows.csv"
            multiline = False
            with path.open("w", encoding="utf-8", newline="") as fh:
                writer = csv.writer(fh, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
                for row in rows:
                    if not multiline and any(isinstance(v, str) and ("\n" in v or "\r" in v) for v in row):
                        multiline = True
                    writer.writerow(["" if v is None else v for v in row])
            literal = str(path)
            if "'" in literal or "\\" in literal:  # a temporary path we made; refuse anything unusual
                raise GraphStoreError(f"Temporary folder {tmpdir} has a quote or backslash in its path; set TMPDIR.")
            target = quote_identifier(table) + (f"({', '.join(quote_identifier(c) for c in columns)})" if columns else "")
            options = "HEADER=false" + (", PARALLEL=false" if multiline else "")
            self.run(store, f"COPY {target} FROM '{literal}' ({options})")
            if progress is not None:
                progress.update(total)
            return total
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

    # reads
    def read_names(self, store: Any, layout: GraphLayout) -> Iterator[tuple[str, str, bool]]:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        namep = quote_identifier(layout.name_property)
        for row in self.run(store, f"MATCH (n:{label}) WHERE n.{namep} IS NOT NULL RETURN n.{idp} AS id, n.{namep} AS name"):
            yield str(row["id"]), str(row["name"]), False
        if layout.alias_table in self._tables(store):
            for row in self.run(store, f"MATCH (s:{quote_identifier(layout.alias_table)}) RETURN s.node_id AS id, s.alias AS a"):
                yield str(row["id"]), str(row["a"]), True

    def _path_columns(self, layout: GraphLayout) -> str:
        cols = [
            f"properties(nodes(p), '{layout.id_property}') AS node_ids",
            f"properties(nodes(p), '{layout.name_property}') AS node_names",
            "properties(nodes(p), '_ID') AS node_keys",
            f"properties(rels(p), '{layout.type_column}') AS rel_types",
            "properties(rels(p), '_SRC') AS rel_starts",
            "properties(rels(p), '_ID') AS rel_keys",
        ]
        cols += [f"properties(rels(p), '{prop}') AS prop_{i}" for i, prop in enumerate(layout.rel_properties)]
        return ", ".join(cols)

    def shortest_paths_statement(
        self, layout: GraphLayout, pairs: Sequence[tuple[str, str]], max_hops: int, limit: int
    ) -> tuple[str, dict[str, Any]]:
        # The relationship table holds only this graph's relationships, so no type filter is needed. One pair:
        # both ends by primary key (fastest). More: every pair of the id set in one statement; rows of pairs
        # nobody asked for (alternatives of one ambiguous name) are dropped by the caller. (Fixed-length 1- and
        # 2-hop join patterns were faster still, but ladybug 0.22 loses rows of such joins over parallel
        # relationships, checked against networkx, so only ALL SHORTEST is used.)
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        ids = sorted({x for pair in pairs for x in pair})
        pattern = f"-[:{quote_identifier(layout.rel_table)}* ALL SHORTEST 1..{_check_hops(max_hops)}]-"
        if len(pairs) == 1:
            query = (
                f"MATCH p = (a:{label} {{{idp}: $lhs}}){pattern}(b:{label} {{{idp}: $rhs}}) "
                f"RETURN {self._path_columns(layout)} LIMIT $limit"
            )
            return query, {"lhs": pairs[0][0], "rhs": pairs[0][1], "limit": limit}
        query = (
            f"MATCH p = (a:{label}){pattern}(b:{label}) "
            f"WHERE a.{idp} IN $ids AND b.{idp} IN $ids AND a.{idp} < b.{idp} "
            f"RETURN {self._path_columns(layout)} LIMIT $limit"
        )
        return query, {"ids": ids, "limit": limit}

    def neighbours_query(self, layout: GraphLayout) -> str:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        rel = quote_identifier(layout.rel_table)
        return (
            f"MATCH p = (a:{label})-[:{rel}*1..1]-(b:{label}) WHERE a.{idp} IN $ids "
            f"RETURN {self._path_columns(layout)} LIMIT $limit"
        )

    def decode_path(self, row: dict[str, Any], layout: GraphLayout) -> RawPath:
        if "node_keys" not in row:  # a fixed-length branch: relationship starts are ids already
            return _decode_cypher_path(row, layout)
        node_ids = tuple(str(x) for x in row["node_ids"])
        keys = [_key(k) for k in row["node_keys"]]
        starts = [_key(s) for s in row["rel_starts"]]
        props = tuple(
            {prop: row[f"prop_{i}"][j] for i, prop in enumerate(layout.rel_properties)} for j in range(len(starts))
        )
        return RawPath(
            node_ids=node_ids,
            node_names=tuple(row["node_names"]),
            rel_types=tuple(str(t) for t in row["rel_types"]),
            rel_forward=tuple(starts[j] == keys[j] for j in range(len(starts))),
            rel_keys=tuple(_key(k) for k in row["rel_keys"]),
            rel_properties=props,
        )


def _key(internal_id: Any) -> str:
    if isinstance(internal_id, dict):
        return f"{internal_id.get('table')}:{internal_id.get('offset')}"
    return str(internal_id)


_DIALECTS: dict[str, GraphDialect] = {
    "ladybug": LadybugDialect(),
    "falkordb": FalkorDBDialect(),
    "neo4j": Neo4jDialect(),
}


def dialect_for_engine(engine: str) -> GraphDialect:
    """The dialect of ``"ladybug"``, ``"falkordb"`` or ``"neo4j"``."""
    try:
        return _DIALECTS[engine]
    except KeyError:
        raise GraphStoreError(f"No dialect for engine {engine!r}; use one of {sorted(_DIALECTS)}.") from None


def dialect_for_store(store: Any) -> GraphDialect:
    """The dialect matching a LlamaIndex property graph store instance (by its class)."""
    names = {cls.__name__ for cls in type(store).__mro__}
    for class_name, engine in (
        ("LadybugPropertyGraphStore", "ladybug"),
        ("FalkorDBPropertyGraphStore", "falkordb"),
        ("Neo4jPropertyGraphStore", "neo4j"),
    ):
        if class_name in names:
            return _DIALECTS[engine]
    raise GraphStoreError(
        f"No Cypher dialect for {type(store).__name__}: use a Ladybug, FalkorDB or Neo4j property graph store."
    )
