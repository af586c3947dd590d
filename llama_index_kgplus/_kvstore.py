"""A LlamaIndex key-value store in one SQLite file, shared safely by threads and processes.

LlamaIndex's ``SimpleKVStore`` lives in memory and is written whole; this one writes each value as it is put, opens
in constant time, and lets several processes (xdist workers, spawn workers, CLI runs) read and write one file at
once (SQLite's write-ahead log; a writer waits for another instead of failing). Values are JSON objects, as every
LlamaIndex KV store keeps them; one of ``_COMPRESS_FROM`` bytes or more is stored zlib-compressed, with a preset
dictionary of LlamaIndex's node JSON (a docstore node takes 2.4x less room; about 22 us to write, 8 to read).
Its first use is the embedding cache (``embed_model_from_spec(cache=...)``, which passes it as LlamaIndex's
``embeddings_cache``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import threading
import zlib
from collections.abc import Iterator
from typing import Any

from llama_index.core.storage.kvstore.types import DEFAULT_COLLECTION, BaseKVStore
from pydantic import BaseModel, Field

from llama_index_kgplus._paths import user_path
from llama_index_kgplus.errors import InputDataError

__all__ = ["SQLiteKVStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS kv (collection TEXT NOT NULL, digest BLOB NOT NULL, key TEXT NOT NULL, "
    "value TEXT NOT NULL, PRIMARY KEY (collection, digest)) WITHOUT ROWID"
)
_BUSY_TIMEOUT_S = 60.0
_COMPRESS_FROM = 256  # bytes of JSON; shorter values (a docstore's metadata, 100 bytes) gain nothing
# Stored values are read with it: never change it; another dictionary needs another format byte.
_FORMAT_ZLIB_NODE = b"\x01"
_NODE_DICTIONARY = (
    '{"__data__": {"id_": "", "embedding": null, "metadata": {"doc_id": "", "title": ""}, '
    '"excluded_embed_metadata_keys": [], "excluded_llm_metadata_keys": [], "relationships": {'
    '"1": {"node_id": "", "node_type": "4", "metadata": {}, "hash": "", "class_name": "RelatedNodeInfo"}, '
    '"2": {"node_id": "", "node_type": "1", "metadata": {}, "hash": "", "class_name": "RelatedNodeInfo"}, '
    '"3": {"node_id": "", "node_type": "1", "metadata": {}, "hash": "", "class_name": "RelatedNodeInfo"}}, '
    '"metadata_template": "{key}: {value}", "metadata_separator": "\\n", "text": "", "mimetype": "text/plain", '
    '"start_char_idx": 0, "end_char_idx": 0, "text_template": "{metadata_str}\\n\\n{content}", '
    '"class_name": "TextNode"}, "__type__": "1"}'
).encode("utf-8")
_CONNECTIONS = threading.local()


class SQLiteKVStore(BaseModel, BaseKVStore):
    """Key-value store in the SQLite file ``path`` (created with its folder); ``namespace`` keeps apart the
    collections of different users of one file (e.g. two embedding models).

    Example:

    ```python
    store = SQLiteKVStore(path="cache/kv.sqlite", namespace="my-model")
    store.put("a text", {"vector": [0.1, 0.2]}, collection="embeddings")
    store.get("a text", collection="embeddings")  # {'vector': [0.1, 0.2]}
    ```
    """

    path: str = Field(description="The SQLite file (``~`` expanded); created, with its folder, on first use.")
    namespace: str = Field(default="", description="Prefix of every collection: users of one file stay apart.")

    def _connection_key(self) -> tuple[int, str]:
        return os.getpid(), os.path.expanduser(self.path)  # on every read: a string, not a Path (25 µs)

    def _connection(self) -> sqlite3.Connection:
        """This process's and thread's connection to the file (SQLite connections are not shared between threads,
        and a forked child must not use its parent's)."""
        key = self._connection_key()
        connections = _CONNECTIONS.__dict__.setdefault("by_file", {})
        if key not in connections:
            path = user_path(self.path)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                connection = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S)
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash may lose the last puts, never corrupts
                connection.execute(_SCHEMA)
            except (OSError, sqlite3.Error) as exc:
                raise InputDataError(f"{path} cannot be used as a key-value store ({exc}).") from exc
            connections[key] = connection
        return connections[key]  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close this thread's connection to the file (the next call opens a new one)."""
        connection = _CONNECTIONS.__dict__.get("by_file", {}).pop(self._connection_key(), None)
        if connection is not None:
            connection.close()

    def _collection(self, collection: str) -> str:
        return f"{self.namespace}/{collection}"

    @staticmethod
    def _digest(key: str) -> bytes:
        return hashlib.sha256(key.encode("utf-8")).digest()

    def put(self, key: str, val: dict, collection: str = DEFAULT_COLLECTION) -> None:
        """Store ``val`` under ``key`` in ``collection`` (replacing what was there)."""
        self.put_all([(key, val)], collection=collection)

    def put_all(
        self, kv_pairs: list[tuple[str, dict]], collection: str = DEFAULT_COLLECTION, batch_size: int = 1
    ) -> None:
        """Store every ``(key, value)`` pair in one transaction."""
        rows = [(self._collection(collection), self._digest(k), k, _encode(json.dumps(v))) for k, v in kv_pairs]
        with self._connection() as connection:  # one transaction
            connection.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?, ?, ?)", rows)

    def get(self, key: str, collection: str = DEFAULT_COLLECTION) -> dict | None:
        """The value under ``key`` in ``collection``, or None."""
        stored = self._stored(key, collection)
        return None if stored is None else json.loads(stored)  # type: ignore[no-any-return]

    def _stored(self, key: str, collection: str) -> str | None:
        """The JSON text under ``key`` in ``collection``, or None."""
        row = (
            self._connection()
            .execute(
                "SELECT value FROM kv WHERE collection = ? AND digest = ?",
                (self._collection(collection), self._digest(key)),
            )
            .fetchone()
        )
        return None if row is None else _decode(row[0])

    def get_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, dict]:
        """Every key of ``collection`` with its value."""
        return dict(self.iter_items(collection))

    def iter_items(self, collection: str = DEFAULT_COLLECTION) -> Iterator[tuple[str, dict]]:
        """Every ``(key, value)`` of ``collection``, read as it is used (memory flat in the collection's size)."""
        rows = self._connection().execute(
            "SELECT key, value FROM kv WHERE collection = ?", (self._collection(collection),)
        )
        for key, value in rows:
            yield key, json.loads(_decode(value))

    def field_of_each(self, field: str, collection: str = DEFAULT_COLLECTION) -> Iterator[tuple[str, Any]]:
        """``(key, value[field])`` of every value of ``collection`` (None where it has no such field): SQLite reads
        the field out of plain JSON, without Python parsing the whole value."""
        rows = self._connection().execute(
            "SELECT key, CASE WHEN typeof(value) = 'blob' THEN value END, json_extract(CASE WHEN typeof(value) = "
            "'text' THEN value END, ?) FROM kv WHERE collection = ?",
            ('$."' + field.replace('"', '""') + '"', self._collection(collection)),
        )
        for key, packed, extracted in rows:
            yield key, (json.loads(_decode(packed)).get(field) if packed is not None else extracted)

    def keys(self, collection: str = DEFAULT_COLLECTION) -> list[str]:
        """Every key of ``collection`` (no value is read)."""
        rows = self._connection().execute("SELECT key FROM kv WHERE collection = ?", (self._collection(collection),))
        return [key for (key,) in rows]

    def count(self, collection: str = DEFAULT_COLLECTION) -> int:
        """How many keys ``collection`` holds."""
        row = (
            self._connection()
            .execute("SELECT COUNT(*) FROM kv WHERE collection = ?", (self._collection(collection),))
            .fetchone()
        )
        return int(row[0])

    def delete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        """Remove ``key`` from ``collection``; whether it was there."""
        with self._connection() as connection:
            cursor = connection.execute(
                "DELETE FROM kv WHERE collection = ? AND digest = ?", (self._collection(collection), self._digest(key))
            )
        return cursor.rowcount > 0

    async def aput(self, key: str, val: dict, collection: str = DEFAULT_COLLECTION) -> None:
        """:meth:`put`, off the event loop."""
        await asyncio.to_thread(self.put, key, val, collection)

    async def aput_all(
        self, kv_pairs: list[tuple[str, dict]], collection: str = DEFAULT_COLLECTION, batch_size: int = 1
    ) -> None:
        """:meth:`put_all`, off the event loop."""
        await asyncio.to_thread(self.put_all, kv_pairs, collection)

    async def aget(self, key: str, collection: str = DEFAULT_COLLECTION) -> dict | None:
        """:meth:`get`, off the event loop."""
        return await asyncio.to_thread(self.get, key, collection)

    async def aget_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, dict]:
        """:meth:`get_all`, off the event loop."""
        return await asyncio.to_thread(self.get_all, collection)

    async def adelete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        """:meth:`delete`, off the event loop."""
        return await asyncio.to_thread(self.delete, key, collection)


def _encode(text: str) -> str | bytes:
    """What is stored of a value's JSON text: itself, or a format byte and its compressed bytes (a BLOB)."""
    if len(text) < _COMPRESS_FROM:
        return text
    packer = zlib.compressobj(1, zdict=_NODE_DICTIONARY)
    return _FORMAT_ZLIB_NODE + packer.compress(text.encode("utf-8")) + packer.flush()


def _decode(stored: str | bytes) -> str:
    """A value's JSON text from what is stored (the JSON text itself in files written before compression)."""
    if isinstance(stored, str):
        return stored
    if stored[:1] != _FORMAT_ZLIB_NODE:
        raise InputDataError("A key-value store holds a value of a format this version cannot read: upgrade the pack.")
    unpacker = zlib.decompressobj(zdict=_NODE_DICTIONARY)
    return (unpacker.decompress(stored[1:]) + unpacker.flush()).decode("utf-8")
