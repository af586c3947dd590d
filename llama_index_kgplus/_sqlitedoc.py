"""The docstore and index store of a LanceDB index folder in one SQLite file, which opens in constant time.

LlamaIndex's own ``KVDocumentStore`` and ``KVIndexStore`` over the pack's :class:`SQLiteKVStore`: a reader reads
only the rows it asks for, where the JSON docstore of the default folder is parsed whole on every open (154 MB at
10^5 passages, ``benchmarks/scale.md``).

Old-or-new, as the LanceDB table is kept: the files live in ``docstore/`` of the folder, one per ingest
(``<id>.sqlite``), and ``ingest.json`` names the one that belongs to the index (:func:`persist_kv`). A reader opens
that file read-only (SQLite's ``immutable``: no lock, no journal); the first write (``delete_ref_doc``,
``insert``) copies it to a new file of the folder and writes there, so the folder keeps the old index until
:func:`persist_kv` names the new file and the switch drops the files no stamp names (:func:`drop_other_files`).
A docstore of another kind (the in-memory one of a new index) is written whole into a new file.

Example:

```python
storage = open_kv_storage("./index", record)  # the docstore and index store that ingest.json names
record = persist_kv(storage, "./index")  # what the next ingest.json names
```
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.core.storage.docstore.keyval_docstore import (
    DEFAULT_COLLECTION_DATA_SUFFIX,
    DEFAULT_METADATA_COLLECTION_SUFFIX,
    DEFAULT_NAMESPACE,
    DEFAULT_REF_DOC_COLLECTION_SUFFIX,
    KVDocumentStore,
)
from llama_index.core.storage.docstore.utils import doc_to_json, json_to_doc
from llama_index.core.storage.index_store.keyval_index_store import KVIndexStore
from llama_index.core.storage.kvstore.types import DEFAULT_COLLECTION
from pydantic import Field, PrivateAttr

from llama_index_kgplus._kvstore import SQLiteKVStore
from llama_index_kgplus.errors import InputDataError

__all__ = [
    "KV_DIR",
    "KV_TYPE",
    "FolderKVStore",
    "SQLiteDocumentStore",
    "SQLiteIndexStore",
    "drop_other_files",
    "kv_path",
    "new_kv_file",
    "open_kv_stores",
    "persist_kv",
]

KV_DIR = "docstore"
"""The folder of an index that holds its SQLite docstores."""
KV_TYPE = "sqlite"
_PAGE_SIZE = 16384
_SUFFIXES = ("", "-wal", "-shm", "-journal")
_READERS = threading.local()


class FolderKVStore(SQLiteKVStore):
    """An index folder's SQLite file, copied on write: read-only (``immutable``) until the first write, which
    copies it to a new file of the same folder and goes on there."""

    read_only: bool = Field(default=True, description="Whether ``path`` is a sealed file, read without writing.")
    _fork_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _connection(self) -> sqlite3.Connection:
        if not self.read_only:
            return super()._connection()
        key = (os.getpid(), self.path)
        readers = _READERS.__dict__.setdefault("by_file", {})
        if key not in readers:
            try:
                readers[key] = sqlite3.connect(f"file:{Path(self.path).as_posix()}?mode=ro&immutable=1", uri=True)
            except sqlite3.Error as exc:
                raise InputDataError(f"{self.path} cannot be opened as an index's docstore ({exc}).") from exc
        return readers[key]  # type: ignore[no-any-return]

    def _writable(self) -> None:
        with self._fork_lock:
            if self.read_only:
                new = Path(self.path).with_name(f"{uuid.uuid4().hex}.sqlite")
                shutil.copyfile(self.path, new)
                self.path, self.read_only = str(new), False

    def put_all(
        self, kv_pairs: list[tuple[str, dict]], collection: str = DEFAULT_COLLECTION, batch_size: int = 1
    ) -> None:
        """:meth:`SQLiteKVStore.put_all`, into a copy of a sealed file; nothing when the values are there already
        (an index that opens puts its index struct back as it read it)."""
        if self.read_only and all(self._stored(k, collection) == json.dumps(v) for k, v in kv_pairs):
            return
        self._writable()
        super().put_all(kv_pairs, collection=collection, batch_size=batch_size)

    def delete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        """:meth:`SQLiteKVStore.delete`, from a copy of a sealed file."""
        self._writable()
        return super().delete(key, collection=collection)

    def seal(self) -> str:
        """Write everything into the file itself (no write-ahead log left) and read it from now on without
        writing (a later write copies it again); returns the file's name."""
        if not self.read_only:
            self._connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.close()  # the last connection: SQLite removes the log (another thread's stays until it ends)
            self.read_only = True
        return Path(self.path).name


class SQLiteDocumentStore(KVDocumentStore):
    """``KVDocumentStore`` over a :class:`FolderKVStore`, which it names (``kvstore``)."""

    def __init__(self, kvstore: FolderKVStore) -> None:
        super().__init__(kvstore, namespace=DEFAULT_NAMESPACE)
        self.kvstore = kvstore

    def add_documents(
        self,
        docs: Sequence[BaseNode],
        allow_update: bool = True,
        batch_size: int | None = None,
        store_text: bool = True,
    ) -> None:
        """``KVDocumentStore.add_documents``, writing the same rows faster: a document's record is read once per
        call (not once per node) and built as plain JSON (LlamaIndex's goes through dataclasses_json, which took
        about a third of a streaming ingest's docstore time)."""
        if not allow_update:  # LlamaIndex's, which checks every node first
            super().add_documents(docs, allow_update=False, batch_size=batch_size, store_text=store_text)
            return
        nodes: list[tuple[str, dict]] = []
        metadata: list[tuple[str, dict]] = []
        documents: dict[str, dict[str, Any]] = {}
        for node in docs:
            if store_text:
                nodes.append((node.node_id, doc_to_json(node)))
            entry: dict[str, Any] = {"doc_hash": node.hash}
            if node.source_node is not None and node.ref_doc_id:
                entry["ref_doc_id"] = node.ref_doc_id
                if node.ref_doc_id not in documents:
                    stored = self.get_ref_doc_info(node.ref_doc_id)
                    documents[node.ref_doc_id] = {
                        "node_ids": list(stored.node_ids) if stored else [],
                        "metadata": stored.metadata if stored and stored.metadata else {},
                        "kept": bool(stored and stored.metadata),  # a document keeps the metadata it has
                    }
                document = documents[node.ref_doc_id]
                if node.node_id not in document["node_ids"]:
                    document["node_ids"].append(node.node_id)
                if not document["kept"]:
                    document["metadata"].update(node.metadata or {})
            metadata.append((node.node_id, entry))
        records = [(d, {"node_ids": r["node_ids"], "metadata": r["metadata"]}) for d, r in documents.items()]
        for pairs, suffix in ((nodes, DEFAULT_COLLECTION_DATA_SUFFIX), (metadata, DEFAULT_METADATA_COLLECTION_SUFFIX),
                              (records, DEFAULT_REF_DOC_COLLECTION_SUFFIX)):  # fmt: skip
            self.kvstore.put_all(pairs, collection=DEFAULT_NAMESPACE + suffix)

    async def async_add_documents(
        self,
        docs: Sequence[BaseNode],
        allow_update: bool = True,
        batch_size: int | None = None,
        store_text: bool = True,
    ) -> None:
        """Async :meth:`add_documents` (SQLite answers in the calling thread either way)."""
        self.add_documents(docs, allow_update=allow_update, batch_size=batch_size, store_text=store_text)

    def size(self) -> tuple[int, int]:
        """How many documents and nodes it holds, counted by SQLite (none is read)."""
        return (
            self.kvstore.count(DEFAULT_NAMESPACE + DEFAULT_REF_DOC_COLLECTION_SUFFIX),
            self.kvstore.count(DEFAULT_NAMESPACE + DEFAULT_COLLECTION_DATA_SUFFIX),
        )

    def ref_doc_ids(self) -> list[str]:
        """The ids of the documents it holds (``get_all_ref_doc_info`` reads every one's node list too)."""
        return self.kvstore.keys(DEFAULT_NAMESPACE + DEFAULT_REF_DOC_COLLECTION_SUFFIX)

    def document_hashes(self) -> dict[str, str]:
        """The content hash of every document and node it holds, by id, read in one query (``get_document_hash``
        reads one row per call)."""
        rows = self.kvstore.field_of_each("doc_hash", DEFAULT_NAMESPACE + DEFAULT_METADATA_COLLECTION_SUFFIX)
        return {key: digest for key, digest in rows if isinstance(digest, str)}

    def iter_nodes(self) -> Iterator[BaseNode]:
        """Every node it holds, read one at a time (``docs`` reads them all at once)."""
        for _, value in self.kvstore.iter_items(DEFAULT_NAMESPACE + DEFAULT_COLLECTION_DATA_SUFFIX):
            yield json_to_doc(value)


class SQLiteIndexStore(KVIndexStore):
    """``KVIndexStore`` over a :class:`FolderKVStore`, which it names (``kvstore``)."""

    def __init__(self, kvstore: FolderKVStore) -> None:
        super().__init__(kvstore)
        self.kvstore = kvstore


def kv_path(persist_dir: Path, record: dict[str, Any]) -> Path:
    """The SQLite file that ``record`` (``docstore`` of ``ingest.json``) names."""
    return persist_dir / KV_DIR / Path(str(record.get("file"))).name


def open_kv_stores(persist_dir: Path, record: dict[str, Any]) -> tuple[SQLiteDocumentStore, SQLiteIndexStore]:
    """The docstore and index store of an index folder, in the file its ``ingest.json`` names (nothing read)."""
    if record.get("type") != KV_TYPE:
        raise InputDataError(
            f"{persist_dir}: ingest.json names a docstore of type {record.get('type')!r}, which this version "
            "cannot open: upgrade llama-index-kgplus or re-run `kgplus ingest`."
        )
    path = kv_path(persist_dir, record)
    if not path.is_file():
        raise InputDataError(
            f"{persist_dir} lacks its docstore {path}, written by its last ingest: re-run `kgplus ingest DOCS "
            f"--index {persist_dir} --vector-store lancedb`."
        )
    kvstore = FolderKVStore(path=str(path))
    return SQLiteDocumentStore(kvstore), SQLiteIndexStore(kvstore)


def new_kv_file(persist_dir: Path) -> FolderKVStore:
    """A new, empty SQLite file in ``persist_dir/docstore``, written to until :func:`persist_kv` seals it."""
    folder = persist_dir / KV_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex}.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as connection:
        # nodes of ~1-4 kB stay in their B-tree page (4 kB pages send each to an overflow page of its own: a file
        # 3x the size of its JSON)
        connection.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
        connection.execute("VACUUM")
    return FolderKVStore(path=str(path), read_only=False)


def persist_kv(storage_context: Any, persist_dir: Path) -> dict[str, Any]:
    """Seal the docstore and index store of ``storage_context`` in a file of ``persist_dir/docstore`` and return
    what ``ingest.json`` records of it. The folder's own file (opened by :func:`open_kv_stores`) is sealed where it
    is; any other docstore is copied whole into a new file."""
    folder = persist_dir / KV_DIR
    docstore, index_store = storage_context.docstore, storage_context.index_store
    kvstore = getattr(docstore, "kvstore", None)
    own = (
        isinstance(docstore, SQLiteDocumentStore)
        and isinstance(kvstore, FolderKVStore)
        and Path(kvstore.path).parent.resolve() == folder.resolve()
        and getattr(index_store, "kvstore", None) is kvstore
    )
    if not own:
        kvstore = new_kv_file(persist_dir)
        new_docstore = SQLiteDocumentStore(kvstore)
        new_docstore.add_documents(list(docstore.docs.values()), allow_update=True)
        hashes = {ref: docstore.get_document_hash(ref) for ref in (docstore.get_all_ref_doc_info() or {})}
        new_docstore.set_document_hashes({ref: digest for ref, digest in hashes.items() if digest})
        new_index_store = SQLiteIndexStore(kvstore)
        for struct in index_store.index_structs():
            new_index_store.add_index_struct(struct)
    assert isinstance(kvstore, FolderKVStore)
    return {"type": KV_TYPE, "file": kvstore.seal()}


def drop_other_files(persist_dir: Path, keep: dict[str, Any] | None) -> None:
    """Remove the SQLite files of ``persist_dir/docstore`` that the stamp's ``keep`` record does not name (with
    their journals): those of replaced indexes and of writes never persisted; the folder itself without one."""
    folder = persist_dir / KV_DIR
    if not folder.is_dir():
        return
    if keep is None:
        shutil.rmtree(folder, ignore_errors=True)
        return
    kept = {kv_path(persist_dir, keep).name + suffix for suffix in _SUFFIXES}
    for path in folder.iterdir():
        if path.name not in kept:
            path.unlink(missing_ok=True)
