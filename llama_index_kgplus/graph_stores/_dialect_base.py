"""The dialect base: the graph layout, the path record, and what every engine's dialect implements.

Safety rules kept by every statement of every dialect:

- every *value* travels as a query parameter;
- the only things formatted into query text are identifiers (labels, relationship types, property names),
  checked against :data:`IDENTIFIER_RE` and back-quoted; small validated integers that Cypher cannot take as
  parameters (the upper bound of a variable-length path); and, for Ladybug's ``COPY FROM``, the path of a
  temporary file the dialect created itself;
- every variable-length pattern has an upper bound, and every path query a ``LIMIT``.
"""

from __future__ import annotations

import asyncio
import re
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus.errors import GraphStoreError, InputDataError, QueryTimeoutError
from llama_index_kgplus.graph_stores._drivers import GraphDriver

logger = get_logger(__name__)

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
    type_column: str = "label"
    labels_column: str = "labels"
    alias_property: str = "synonyms"

    def __post_init__(self) -> None:
        for what in (
            "node_label",
            "id_property",
            "name_property",
            "rel_table",
            "type_column",
            "labels_column",
            "alias_property",
        ):
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
    #: the adapter over the engine's own client (:mod:`._drivers`)
    driver_type: ClassVar[type[GraphDriver]]
    #: whether the store runs this dialect's statements (False: a store read through its API alone)
    runs_queries: ClassVar[bool] = True
    #: keyword arguments for :func:`open_graph_store` that this use needs. ``sanitize_query_output=False``:
    #: LlamaIndex's output sanitiser drops lists of 128+ items and ``None`` list items (Ladybug's store even
    #: applies it to the whole result, so 128+ rows come back as ``None``), which would corrupt paths.
    open_kwargs: ClassVar[dict[str, Any]] = {"sanitize_query_output": False}

    # ------------------------------------------------------------------ running queries

    def driver(self, store: Any) -> GraphDriver:
        """The adapter that runs statements on ``store``'s own client (made per call, from public API)."""
        return self.driver_type.of(store)

    def run(self, store: Any, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run through ``store.structured_query``; a store opened with output sanitising on is queried through
        its own client instead (same call, minus the sanitiser)."""
        try:
            if getattr(store, "sanitize_query_output", False):
                return self.driver(store).run(query, params or {})
            return list(store.structured_query(query, params or {}))
        except Exception as exc:  # drivers raise many types; report them as one, keep the cause
            raise self._error(exc) from exc

    async def arun(self, store: Any, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Async twin of :meth:`run`: a worker thread (the FalkorDB and Neo4j clients are thread-safe; the
        Neo4j store's async driver is not used because it binds to the first event loop that uses it);
        Ladybug uses its own async connection."""
        return await asyncio.to_thread(self.run, store, query, params)

    def run_read_only(
        self,
        store: Any,
        query: str,
        timeout: float,
        params: dict[str, Any] | None = None,
        *,
        max_rows: int | None = None,
    ) -> list[dict[str, Any]]:
        """Run a generated query (already through the read-only guard) with ``params``, the engine's own
        read-only mode where it has one and a ``timeout`` in seconds (:class:`QueryTimeoutError` when it runs
        out); at most ``max_rows`` rows are read (a ``UNION`` has a ``LIMIT`` per branch: this one holds for
        the whole)."""
        try:
            return self.driver(store).run_read_only(query, params or {}, timeout=timeout, max_rows=max_rows)
        except Exception as exc:  # drivers raise many types; report them as one, keep the cause
            if any(
                word in str(exc).lower() for word in ("timeout", "timed out", "interrupt")
            ):  # Neo4j, FalkorDB, Ladybug
                raise QueryTimeoutError(f"The query ran longer than {timeout:g} s and was stopped.") from exc
            raise self._error(exc) from exc

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

    @abstractmethod
    def property_graph_layout(self, store: Any) -> GraphLayout | None:
        """The layout of a graph written by LlamaIndex's property graph store itself (``PropertyGraphIndex``
        and its extractors, ``upsert_nodes``/``upsert_relations``), or None when the store holds none."""

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

    #: labels an imported node carries so LlamaIndex's store for this engine reads it as an entity
    entity_labels: ClassVar[tuple[str, ...]] = ()

    #: whether :meth:`swap_graph` exists: a graph can be written under another label and switched in one
    #: statement (Ladybug replaces a graph by importing into a copy of its file instead)
    can_swap: ClassVar[bool] = False

    def swap_graph(self, store: Any, staged: GraphLayout, layout: GraphLayout, meta_key: str, meta_value: str) -> int:
        """In one statement (one transaction): delete the graph of ``layout``, relabel the nodes of ``staged``
        to ``layout.node_label`` and write the meta record; returns how many nodes moved."""
        raise NotImplementedError(f"{self.engine} cannot switch graphs in one statement")

    @abstractmethod
    def write_nodes(
        self,
        store: Any,
        layout: GraphLayout,
        nodes: Sequence[NodeRecord],
        node_properties: dict[str, str],
        batch_size: int = 10_000,
        progress: Any = None,
    ) -> int: ...

    @abstractmethod
    def write_relationships(
        self,
        store: Any,
        layout: GraphLayout,
        rels: Sequence[RelRecord],
        rel_properties: dict[str, str],
        batch_size: int = 10_000,
        progress: Any = None,
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

    def read_relationships(
        self, store: Any, layout: GraphLayout, name_property: str | None = None
    ) -> Iterator[tuple[str, str, str]]:
        """``(start id, end id, type)`` of every relationship of the graph; the type is the relationship's
        ``name_property`` (e.g. ``relname``) where it has one, else its :TYPE."""
        name = f", r.{quote_identifier(name_property)} AS name" if name_property else ""
        for row in self.run(store, self.relationships_query(layout) + name):
            yield str(row["s"]), str(row["t"]), str(row.get("name") or row["type"])

    @abstractmethod
    def relationships_query(self, layout: GraphLayout) -> str:
        """``MATCH ... RETURN <start id> AS s, <end id> AS t, <type> AS type`` over the graph's relationships
        bound to ``r``."""

    # ------------------------------------------------------------------ whole-graph reads (the path snapshot)

    #: the Cypher function giving a relationship the key its paths carry in ``rel_keys``
    rel_id_function: ClassVar[str] = "id"

    def read_node_columns(self, store: Any, layout: GraphLayout) -> dict[str, list[Any]]:
        """Columns ``id`` and ``name`` (None where missing) of every node of the graph, in one query."""
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        query = f"MATCH (n:{label}) RETURN n.{idp} AS id, n.{quote_identifier(layout.name_property)} AS name"
        return self._read_columns(store, query, ("id", "name"))

    def read_relationship_columns(self, store: Any, layout: GraphLayout) -> dict[str, list[Any]]:
        """Columns ``s``, ``t``, ``type``, ``key`` (as in :attr:`RawPath.rel_keys`) and ``prop_<i>`` (the layout's
        relationship properties) of every relationship of the graph, in one query."""
        props = "".join(f", r.{quote_identifier(p)} AS prop_{i}" for i, p in enumerate(layout.rel_properties))
        query = self.relationships_query(layout) + f", {self._rel_key_cypher()} AS key" + props
        names = ("s", "t", "type", "key", *(f"prop_{i}" for i in range(len(layout.rel_properties))))
        return self._read_columns(store, query, names)

    def _rel_key_cypher(self) -> str:
        return f"{self.rel_id_function}(r)"

    def _read_columns(self, store: Any, query: str, names: Sequence[str]) -> dict[str, list[Any]]:
        rows = self.run(store, query)
        return {name: [row[name] for row in rows] for name in names}

    def count_graph(self, store: Any, layout: GraphLayout) -> tuple[int, int]:
        """``(nodes, relationships)`` of the graph in one query: the cheap part of a snapshot's staleness check."""
        label = quote_identifier(layout.node_label)
        match = self.relationships_query(layout).split(" RETURN ", 1)[0]
        rows = self.run(
            store, f"MATCH (n:{label}) WITH count(n) AS nodes OPTIONAL {match} RETURN nodes, count(r) AS rels"
        )
        return (int(rows[0]["nodes"]), int(rows[0]["rels"])) if rows else (0, 0)

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
        self,
        store: Any,
        layout: GraphLayout,
        pairs: Sequence[tuple[str, str]],
        max_hops: int = 2,
        limit: int = 10_000,
    ) -> list[RawPath]:
        """All shortest paths of at most ``max_hops`` relationships between each pair, direction ignored,
        in one round trip. A path goes from the pair's first id to its second. Pairs of equal ids are skipped."""
        pairs = _unique_pairs(pairs)
        if not pairs:
            return []
        query, params = self.shortest_paths_statement(layout, pairs, _check_hops(max_hops), _check_limit(limit))
        return self._paths_for_pairs(_bounded(self.run(store, query, params), limit), layout, pairs)

    async def ashortest_paths(
        self,
        store: Any,
        layout: GraphLayout,
        pairs: Sequence[tuple[str, str]],
        max_hops: int = 2,
        limit: int = 10_000,
    ) -> list[RawPath]:
        pairs = _unique_pairs(pairs)
        if not pairs:
            return []
        query, params = self.shortest_paths_statement(layout, pairs, _check_hops(max_hops), _check_limit(limit))
        return self._paths_for_pairs(_bounded(await self.arun(store, query, params), limit), layout, pairs)

    def neighbours(self, store: Any, layout: GraphLayout, ids: Sequence[str], limit: int = 10_000) -> list[RawPath]:
        """The direct relationships of the given nodes as one-hop paths starting at them."""
        if not ids:
            return []
        rows = self.run(store, self.neighbours_query(layout), {"ids": list(ids), "limit": _check_limit(limit)})
        return [_starting_at(self.decode_path(row, layout), set(ids)) for row in _bounded(rows, limit)]

    async def aneighbours(
        self, store: Any, layout: GraphLayout, ids: Sequence[str], limit: int = 10_000
    ) -> list[RawPath]:
        if not ids:
            return []
        rows = await self.arun(store, self.neighbours_query(layout), {"ids": list(ids), "limit": _check_limit(limit)})
        return [_starting_at(self.decode_path(row, layout), set(ids)) for row in _bounded(rows, limit)]

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


def _bounded(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    if len(rows) >= limit:
        logger.warning("A path query returned its row limit (%d): the paths may be incomplete; raise max_rows.", limit)
    return rows


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


def _decode_path(row: dict[str, Any], layout: GraphLayout, refs_column: str = "node_ids") -> RawPath:
    """A path from its row: a relationship points forward when its start equals the node before it, compared
    by id (Cypher engines: ``rel_starts`` are ids) or by internal key (Ladybug: ``node_keys``)."""
    node_ids = tuple(str(x) for x in row["node_ids"])
    refs = [_key(x) for x in row[refs_column]]
    starts = [_key(x) for x in row["rel_starts"]]
    props = tuple(
        {prop: row[f"prop_{i}"][j] for i, prop in enumerate(layout.rel_properties)} for j in range(len(starts))
    )
    return RawPath(
        node_ids=node_ids,
        node_names=tuple(row["node_names"]),
        rel_types=tuple(str(t) for t in row["rel_types"]),
        rel_forward=tuple(starts[j] == refs[j] for j in range(len(starts))),
        rel_keys=tuple(_key(k) for k in row["rel_keys"]),
        rel_properties=props,
    )


def _key(internal_id: Any) -> str:
    if isinstance(internal_id, dict):
        return f"{internal_id.get('table')}:{internal_id.get('offset')}"
    return str(internal_id)
