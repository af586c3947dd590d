"""One adapter per engine for what LlamaIndex's store API does not offer: rows without the store's output
sanitiser, a read-only query with a timeout, and (Neo4j) one explicit write transaction.

Each adapter is built from public API only: the store's ``client`` (FalkorDB: the selected graph; Neo4j: the
driver; Ladybug: its ``connection``) and the connection options the pack knows because it opened the store
(:func:`open_graph_store` records the database and timeout with :func:`record_connection`). A Neo4j store
opened elsewhere names its database through ``CALL db.info()``, or its owner records it.

Example:

```python
store = open_graph_store("falkordb://127.0.0.1:6379", database="kg")
driver = dialect_for_store(store).driver(store)        # a FalkorDBDriver
driver.run("MATCH (n) RETURN count(n) AS n")           # [{'n': 0}]
driver.run_read_only("MATCH (n) RETURN n.id AS id", timeout=5.0)
```
"""

from __future__ import annotations

import itertools
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llama_index_kgplus.errors import GraphStoreError

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class ConnectionOptions:
    """How a store was opened, where its own API does not say: the Neo4j ``database`` and the store's
    ``timeout`` as its constructor took it (FalkorDB: milliseconds; Neo4j: seconds)."""

    database: str | None = None
    timeout: float | None = None


_CONNECTIONS: weakref.WeakKeyDictionary[Any, ConnectionOptions] = weakref.WeakKeyDictionary()


def record_connection(store: Any, *, database: str | None = None, timeout: float | None = None) -> None:
    """Record how ``store`` was opened (kept as long as the store lives; never credentials)."""
    _CONNECTIONS[store] = ConnectionOptions(database=database, timeout=timeout)


def connection_options(store: Any) -> ConnectionOptions:
    """What :func:`record_connection` recorded for ``store`` (empty options when nothing was)."""
    try:
        return _CONNECTIONS.get(store) or ConnectionOptions()
    except TypeError:  # a store that cannot be weakly referenced was never recorded
        return ConnectionOptions()


def result_rows(result: Any, max_rows: int | None = None) -> Rows:
    """A Ladybug query result as one dict per row, keyed by column name (the first ``max_rows`` only, if given)."""
    columns = result.get_column_names()
    return [dict(zip(columns, row)) for row in itertools.islice(result, max_rows)]


class GraphDriver(ABC):
    """Runs statements on one engine's own client."""

    @classmethod
    @abstractmethod
    def of(cls, store: Any) -> GraphDriver:
        """The adapter over ``store``'s client and recorded connection options."""

    @abstractmethod
    def run(self, query: str, params: dict[str, Any] | None = None) -> Rows:
        """Run ``query`` (read or write) and return every row unsanitised."""

    @abstractmethod
    def run_read_only(
        self, query: str, params: dict[str, Any] | None = None, *, timeout: float, max_rows: int | None = None
    ) -> Rows:
        """Run ``query`` in the engine's read-only mode where it has one, stopped after ``timeout`` seconds; at
        most ``max_rows`` rows are read (all with None)."""


class LadybugDriver(GraphDriver):
    """Ladybug's ``Connection``. It has no read-only mode on a writable database: the caller's guard is what
    keeps writes out; the timeout is the connection's query timeout."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    @classmethod
    def of(cls, store: Any) -> LadybugDriver:
        return cls(store.connection)

    def run(self, query: str, params: dict[str, Any] | None = None) -> Rows:
        return result_rows(self.connection.execute(query, parameters=params or {}))

    def run_read_only(
        self, query: str, params: dict[str, Any] | None = None, *, timeout: float, max_rows: int | None = None
    ) -> Rows:
        self.connection.set_query_timeout(max(1, int(timeout * 1000)))
        try:
            return result_rows(self.connection.execute(query, parameters=params or {}), max_rows)
        finally:
            self.connection.set_query_timeout(0)

    @staticmethod
    def close_store(store: Any) -> None:
        """Close a Ladybug store's connections and database (its file lock goes with it); best effort, so
        closing twice is harmless."""
        for attr in ("async_connection", "connection", "db"):
            close = getattr(getattr(store, attr, None), "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass


class FalkorDBDriver(GraphDriver):
    """The ``falkordb`` client's selected graph (``store.client``); read-only queries go through
    ``GRAPH.RO_QUERY``. ``timeout_ms`` bounds :meth:`run` as the store's own ``timeout`` does."""

    def __init__(self, graph: Any, timeout_ms: float | None = None) -> None:
        self.graph = graph
        self.timeout_ms = timeout_ms

    @classmethod
    def of(cls, store: Any) -> FalkorDBDriver:
        return cls(store.client, connection_options(store).timeout)

    def run(self, query: str, params: dict[str, Any] | None = None) -> Rows:
        timeout = None if self.timeout_ms is None else int(self.timeout_ms)
        return self._rows(self.graph.query(query, params or {}, timeout=timeout))

    def run_read_only(
        self, query: str, params: dict[str, Any] | None = None, *, timeout: float, max_rows: int | None = None
    ) -> Rows:
        return self._rows(self.graph.ro_query(query, params or {}, timeout=max(1, int(timeout * 1000))), max_rows)

    @staticmethod
    def _rows(result: Any, max_rows: int | None = None) -> Rows:
        from llama_index.graph_stores.falkordb.falkordb_property_graph import to_plain_value

        rows = itertools.islice(result.result_set, max_rows)
        return [{h[1]: to_plain_value(v) for h, v in zip(result.header, row)} for row in rows]


class Neo4jDriver(GraphDriver):
    """The official driver (``store.client``) on one ``database``; read-only queries run in a READ transaction
    with the driver's transaction timeout."""

    def __init__(self, driver: Any, database: str | None, timeout: float | None = None) -> None:
        self.driver = driver
        self.database = database
        self.timeout = timeout

    @classmethod
    def of(cls, store: Any) -> Neo4jDriver:
        options = connection_options(store)
        database = options.database or _neo4j_database(store)
        return cls(store.client, database, options.timeout)

    def run(self, query: str, params: dict[str, Any] | None = None) -> Rows:
        import neo4j

        records, _, _ = self.driver.execute_query(
            neo4j.Query(query, timeout=self.timeout), parameters_=params or {}, database_=self.database
        )
        return [r.data() for r in records]

    def run_read_only(
        self, query: str, params: dict[str, Any] | None = None, *, timeout: float, max_rows: int | None = None
    ) -> Rows:
        import neo4j

        @neo4j.unit_of_work(timeout=timeout)
        def read(tx: Any) -> Rows:
            result = tx.run(query, params or {})
            return [record.data() for record in itertools.islice(result, max_rows)]

        with self.driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session:
            return session.execute_read(read)

    def write(self, work: Callable[[Any], Any]) -> Any:
        """``work(tx)`` in one explicit write transaction (committed when it returns, rolled back if it raises)."""
        with self.driver.session(database=self.database) as session:
            return session.execute_write(work)


def _neo4j_database(store: Any) -> str:
    """The database a Neo4j store the pack did not open queries, asked through the store itself (its
    ``structured_query`` runs on it); recorded so it is asked once."""
    try:
        rows = store.structured_query("CALL db.info() YIELD name RETURN name")
        name = str(rows[0]["name"])
    except Exception as exc:  # drivers raise many types; one clear line, the cause kept
        raise GraphStoreError(
            f"Cannot tell which database this {type(store).__name__} uses (the server answered db.info() with "
            f"{type(exc).__name__}): open it with open_graph_store(uri, database=...), or call "
            "record_connection(store, database=...) first."
        ) from exc
    record_connection(store, database=name)
    return name
