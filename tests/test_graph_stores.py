"""Graph store URIs and the embedded default store."""

from __future__ import annotations

import subprocess
import sys

import pytest

from llama_index_kgplus import GraphStoreError, open_graph_store
from llama_index_kgplus.graph_stores._uri import GraphStoreURI


@pytest.mark.parametrize(
    ("uri", "engine", "host", "port"),
    [
        ("falkordb://127.0.0.1:6380", "falkordb", "127.0.0.1", 6380),
        ("falkordb://localhost", "falkordb", "localhost", 6379),
        ("neo4j://db.example:7687", "neo4j", "db.example", 7687),
        ("bolt://127.0.0.1", "neo4j", "127.0.0.1", 7687),
        ("neo4j+s://x.databases.neo4j.io", "neo4j", "x.databases.neo4j.io", 7687),
    ],
)
def test_server_uris(uri, engine, host, port):
    parsed = GraphStoreURI.parse(uri)
    assert (parsed.engine, parsed.host, parsed.port) == (engine, host, port)


def test_ladybug_uri_needs_absolute_path(tmp_path):
    assert GraphStoreURI.parse(f"ladybug://{tmp_path}/kg.lbug").path == tmp_path / "kg.lbug"
    with pytest.raises(GraphStoreError, match="absolute path"):
        GraphStoreURI.parse("ladybug://relative/kg.lbug")


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("kuzu:///tmp/x", "Unknown graph store URI scheme 'kuzu'"),
        ("/tmp/x", "Unknown graph store URI scheme ''"),
        ("neo4j://user:secret@host:7687", "no credentials"),
        ("neo4j://:7687", "names no host"),
        ("falkordb://host:notaport", "invalid port"),
    ],
)
def test_bad_uris(uri, message):
    with pytest.raises(GraphStoreError, match=message):
        GraphStoreURI.parse(uri)


def test_embedded_store_is_durable(tmp_path):
    uri = f"ladybug://{tmp_path / 'kg.lbug'}"
    store = open_graph_store(uri)
    store.structured_query("CREATE NODE TABLE IF NOT EXISTS T(id STRING PRIMARY KEY)")
    store.structured_query("CREATE (:T {id: $id})", {"id": "kept"})
    del store
    import gc

    gc.collect()
    again = open_graph_store(uri)
    assert again.structured_query("MATCH (t:T) RETURN t.id AS id") == [{"id": "kept"}]


def test_default_store_lives_under_kgplus_home(_kgplus_home):
    store = open_graph_store()
    assert store.structured_query("RETURN 1 AS one") == [{"one": 1}]
    assert (_kgplus_home / "graph.lbug").exists()


def test_store_locked_by_another_process(tmp_path):
    path = tmp_path / "locked.lbug"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, ladybug as lb; db = lb.Database(sys.argv[1]); lb.Connection(db).execute('RETURN 1');"
            "print('ready', flush=True); sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(GraphStoreError, match="locked by another process"):
            open_graph_store(f"ladybug://{path}")
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_unreachable_falkordb_is_reported():
    pytest.importorskip("llama_index.graph_stores.falkordb")
    with pytest.raises(GraphStoreError, match="Cannot reach FalkorDB"):
        open_graph_store("falkordb://127.0.0.1:1")


def test_unreachable_neo4j_is_reported():
    pytest.importorskip("llama_index.graph_stores.neo4j")
    with pytest.raises(GraphStoreError, match="Cannot reach Neo4j"):
        open_graph_store("bolt://127.0.0.1:1")
