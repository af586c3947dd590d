"""The SQLite key-value store and the embedding cache built on it (``embed_model_from_spec(cache=...)``,
``$KGPLUS_EMBED_CACHE``): values round-trip, namespaces and collections stay apart, processes share one file, and
a cached model reads a vector back instead of computing it. Real SQLite files, the real embedding model."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import pickle

import pytest

from llama_index_kgplus._defaults import EMBED_CACHE_ENV
from llama_index_kgplus._kvstore import SQLiteKVStore
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.llm import embed_model_from_spec


def test_values_round_trip_by_collection_and_namespace(tmp_path):
    path = tmp_path / "sub" / "kv.sqlite"  # the folder is created
    store, other = SQLiteKVStore(path=str(path), namespace="a"), SQLiteKVStore(path=str(path), namespace="b")
    store.put("k", {"v": [0.5, -1.25]})
    store.put("k", {"v": [1.0]}, collection="other")
    store.put_all([("x", {"n": 1}), ("y", {"n": 2}), ("ü", {"n": 3})], collection="many")
    assert store.get("k") == {"v": [0.5, -1.25]} and store.get("k", collection="other") == {"v": [1.0]}
    assert other.get("k") is None  # another namespace of the same file
    assert store.get_all(collection="many") == {"x": {"n": 1}, "y": {"n": 2}, "ü": {"n": 3}}
    store.put("k", {"v": []})
    assert store.get("k") == {"v": []}  # replaced
    assert store.delete("k") is True and store.delete("k") is False and store.get("k") is None
    reopened = pickle.loads(pickle.dumps(store))  # what a spawn worker receives: the file, not a connection
    assert reopened.get("x", collection="many") == {"n": 1}
    assert json.loads(json.dumps(store.model_dump())) == {"path": str(path), "namespace": "a"}


def test_long_values_are_stored_compressed_and_plain_ones_still_read(tmp_path):
    import sqlite3

    from llama_index.core.schema import TextNode
    from llama_index.core.storage.docstore.utils import doc_to_json

    path = tmp_path / "kv.sqlite"
    store = SQLiteKVStore(path=str(path))
    node = doc_to_json(TextNode(text="A passage of some length about rivers and towns. " * 20, metadata={"n": 1}))
    store.put_all([("node", node), ("short", {"n": 1})])
    raw = dict(sqlite3.connect(path).execute("SELECT key, value FROM kv").fetchall())
    assert isinstance(raw["node"], bytes) and len(raw["node"]) * 2 < len(json.dumps(node))
    assert raw["short"] == '{"n": 1}'  # too short to gain anything
    assert store.get("node") == node and store.get_all() == {"node": node, "short": {"n": 1}}
    assert dict(store.field_of_each("__type__")) == {"node": "1", "short": None}  # one compressed, one SQL-read
    assert dict(store.field_of_each("n")) == {"node": None, "short": 1}
    with sqlite3.connect(path) as db:  # a file written before values were compressed: plain JSON text
        db.execute("UPDATE kv SET value = ? WHERE key = 'node'", (json.dumps(node),))
        db.execute("UPDATE kv SET value = ? WHERE key = 'short'", (b"\x09unknown",))
    assert store.get("node") == node
    with pytest.raises(InputDataError, match="format this version cannot read"):
        store.get("short")


def test_async_twins(tmp_path):
    store = SQLiteKVStore(path=str(tmp_path / "kv.sqlite"))

    async def run():
        await store.aput("a", {"v": 1})
        await store.aput_all([("b", {"v": 2})])
        got = (await store.aget("a"), await store.aget_all(), await store.adelete("a"), await store.aget("a"))
        return got

    assert asyncio.run(run()) == ({"v": 1}, {"a": {"v": 1}, "b": {"v": 2}}, True, None)


def _write_keys(path: str, worker: int) -> None:
    store = SQLiteKVStore(path=path)
    for i in range(100):
        store.put(f"{worker}-{i}", {"worker": worker, "i": i})


def test_processes_write_one_file_at_once(tmp_path):
    path = str(tmp_path / "kv.sqlite")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_keys, args=(path, w)) for w in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert len(SQLiteKVStore(path=path).get_all()) == 300


def test_a_path_that_cannot_hold_a_store_is_one_clear_error(tmp_path):
    (tmp_path / "a-folder").mkdir()
    with pytest.raises(InputDataError, match="cannot be used as a key-value store") as caught:
        SQLiteKVStore(path=str(tmp_path / "a-folder")).get("k")
    assert "\n" not in str(caught.value)


@pytest.mark.model
def test_a_cached_model_reads_vectors_back_and_keeps_models_apart(tmp_path, monkeypatch):
    monkeypatch.delenv(EMBED_CACHE_ENV, raising=False)
    path = tmp_path / "embeddings.sqlite"
    assert embed_model_from_spec().embeddings_cache is None  # no cache unless asked
    model = embed_model_from_spec(cache=path)
    texts = ["a virtual environment", "an exception handler", "a virtual environment"]
    computed = model.get_text_embedding_batch(texts)
    assert computed[0] == computed[2] and len(computed[0]) == 384
    assert set(model.embeddings_cache.get_all(collection="embeddings")) == set(texts)
    # what is in the cache is what the model returns: put a marker vector under a text and read it back
    marker = [1.0] + [0.0] * 383
    model.embeddings_cache.put("marked", {"id": marker}, collection="embeddings")
    again = embed_model_from_spec(cache=path)  # a new model (another run) over the same file
    assert again.get_text_embedding_batch(["marked", "an exception handler"]) == [marker, computed[1]]
    assert again.get_query_embedding("marked") == marker
    # the same file under another setting of the model is another namespace: nothing is shared
    shorter = embed_model_from_spec(cache=path, max_length=16)
    assert shorter.get_text_embedding("marked") != marker
    monkeypatch.setenv(EMBED_CACHE_ENV, str(path))
    assert embed_model_from_spec().get_text_embedding("marked") == marker  # the environment names the same file
