"""The streaming ingest of :func:`~llama_index_kgplus.build_index`: documents are read, split, embedded and
written in batches into the on-disk stores of an index folder (a LanceDB table and the SQLite docstore, or a
server store that returns its nodes with the folder's SQLite docstore), so memory stays flat in the corpus size.

The batches go into a new table and a new SQLite file beside the index in place, as every ingest's rows do (see
:mod:`llama_index_kgplus._indexing`): readers keep seeing the old index until the new one is sealed and switched
in. After each batch the folder's
``.ingest-resume.json`` records what was written (the table and SQLite file, a digest of each batch's document
ids and content hashes); before each, the ids of the nodes about to be written. A run of the same ingest (same
chunking, embedding model, batch size and store) after a crash or ``kill -9`` removes the nodes of the batch that
was being written, skips the batches whose documents match the record and goes on from there; when the documents
differ from the recorded ones, the partial ingest is dropped and the ingest starts over (a one-pass iterator,
which cannot be read again, is refused with the fix instead).

Example:

```python
storage, index_id = write_batches(load_corpus("big.jsonl", stream=True), Path("./index"), "lancedb",
                                  [splitter, embed_model], key={"chunk_size": 384}, live=None)
```
"""

from __future__ import annotations

import hashlib
import json
import operator
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from llama_index.core import Document, StorageContext
from llama_index.core.graph_stores import SimpleGraphStore
from llama_index.core.ingestion import run_transformations
from llama_index.core.schema import TransformComponent
from tqdm.auto import tqdm

from llama_index_kgplus._files import atomic_write_json
from llama_index_kgplus._redact import get_logger
from llama_index_kgplus._server_store import store_record as server_record
from llama_index_kgplus._sqlitedoc import (
    FolderKVStore,
    SQLiteDocumentStore,
    SQLiteIndexStore,
    drop_other_files,
    kv_path,
    new_kv_file,
)
from llama_index_kgplus.errors import InputDataError

__all__ = ["DEFAULT_BATCH_SIZE", "READINGS_FILE", "RESUME_FILE", "drop_resume_record", "write_batches"]

logger = get_logger(__name__)

DEFAULT_BATCH_SIZE = 1000
"""Documents read, split, embedded and written at a time by a streaming ingest."""
RESUME_FILE = ".ingest-resume.json"
READINGS_FILE = ".ingest-readings.sqlite"
"""Where a structured streaming ingest keeps what the reading entity sources found until the chunks are linked
(``llama_index_kgplus._ingesting``)."""
_FORMAT = "kgplus-ingest-resume/1"


class _Restart(Exception):
    """The documents differ from those of the interrupted ingest: start over."""


def write_batches(
    documents: Iterable[Document],
    persist_dir: Path,
    vector_store: Any,
    transformations: Sequence[TransformComponent],
    *,
    key: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    show_progress: bool = True,
) -> tuple[StorageContext, str]:
    """Run ``transformations`` (splitter, embedding) over ``documents`` ``batch_size`` at a time and write each
    batch's nodes into ``vector_store`` (``"lancedb"``: a table of the folder, made or resumed here; or a store
    that returns its nodes) and a SQLite docstore of ``persist_dir``; resume an interrupted run of the same
    ingest (``key``: what makes it the same, JSON values). ``live``: the ``ingest.json`` of the index in place,
    whose table and file are never resumed into or removed. Returns the storage context (nothing sealed) and the
    index id."""
    if batch_size < 1:
        raise InputDataError(f"batch_size must be at least 1, not {batch_size}.")
    key = {**key, "batch_size": batch_size, "store": _store_key(vector_store)}
    while True:
        run = _Run.resume_or_start(persist_dir, vector_store, key, live)
        try:
            return run.write(documents, transformations, batch_size, show_progress)
        except _Restart as restart:
            run.drop()
            if iter(documents) is documents:  # a one-pass iterator: what was read is gone
                raise InputDataError(
                    f"{persist_dir}: {restart}; it was dropped: run the ingest again to start over."
                ) from None
            logger.warning("%s: %s. Starting over.", persist_dir, restart)
        except BaseException:
            if not run.written:
                run.drop()  # nothing to resume: leave no file behind
            raise


def drop_resume_record(persist_dir: Path) -> None:
    """Remove the resume record once the ingest it describes is sealed and switched in."""
    (persist_dir / RESUME_FILE).unlink(missing_ok=True)


def _store_key(vector_store: Any) -> dict[str, Any]:
    """What names the store an ingest writes into: the folder's LanceDB, or a server store (without secrets)."""
    return {"type": "lancedb"} if isinstance(vector_store, str) else server_record(vector_store)


def _digest(batch: Sequence[Document]) -> str:
    """A batch's document ids and content hashes, as one sha256."""
    return hashlib.sha256(json.dumps([[d.doc_id, d.hash] for d in batch]).encode()).hexdigest()


def _batches(documents: Iterable[Document], size: int) -> Iterator[list[Document]]:
    iterator = iter(documents)
    while batch := list(islice(iterator, size)):
        yield batch


class _Run:
    """One streaming ingest into a folder: its stores and its resume record."""

    def __init__(
        self,
        persist_dir: Path,
        record: dict[str, Any],
        vector_store: Any,
        kvstore: FolderKVStore,
        live: Mapping[str, Any] | None,
    ) -> None:
        self.persist_dir = persist_dir
        self.live = live
        self.record = record
        self.vector_store = vector_store
        self.kvstore = kvstore
        self.docstore = SQLiteDocumentStore(kvstore)
        self.written = bool(record["batches"])

    @classmethod
    def resume_or_start(
        cls, persist_dir: Path, vector_store: Any, key: dict[str, Any], live: Mapping[str, Any] | None
    ) -> _Run:
        path = persist_dir / RESUME_FILE
        try:
            record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        except (OSError, ValueError):
            record = None  # a record is written atomically: unreadable means not ours
        if isinstance(record, dict) and record.get("format") == _FORMAT:
            run = cls._resume(persist_dir, vector_store, key, live, record)
            if run is not None:
                return run
        _drop_unused(persist_dir, live)
        return cls._start(persist_dir, vector_store, key, live)

    @classmethod
    def _start(cls, persist_dir: Path, vector_store: Any, key: dict[str, Any], live: Mapping[str, Any] | None) -> _Run:
        kvstore = new_kv_file(persist_dir)
        record: dict[str, Any] = {
            "format": _FORMAT, "key": key, "index_id": uuid.uuid4().hex, "docstore": Path(kvstore.path).name,
            "batches": [], "documents": 0, "nodes": 0, "pending": None,
        }  # fmt: skip
        if isinstance(vector_store, str):
            from llama_index_kgplus._lancedb import new_store

            vector_store = new_store(persist_dir)
            record["table"] = vector_store.table_name
        return cls(persist_dir, record, vector_store, kvstore, live)

    @classmethod
    def _resume(
        cls,
        persist_dir: Path,
        vector_store: Any,
        key: dict[str, Any],
        live: Mapping[str, Any] | None,
        record: dict[str, Any],
    ) -> _Run | None:
        """The interrupted run that ``record`` describes, its half-written batch removed; None when it is not this
        ingest's (other settings or store), or its files are gone or in use by the index in place."""
        in_place = live or {}
        kv = kv_path(persist_dir, {"file": record.get("docstore")})
        if record.get("key") != key or not kv.is_file() or kv.name == (in_place.get("docstore") or {}).get("file"):
            return None
        if isinstance(vector_store, str):
            from llama_index_kgplus._lancedb import TABLE_DIR, store_class, table_path

            table = str(record.get("table"))
            if table == (in_place.get("vector_store") or {}).get("table"):
                return None
            if record["batches"] and not table_path(persist_dir, {"uri": TABLE_DIR, "table": table}).is_dir():
                return None
            vector_store = store_class()(uri=str(persist_dir / TABLE_DIR), table_name=table)
        run = cls(persist_dir, record, vector_store, FolderKVStore(path=str(kv), read_only=False), live)
        run._remove_pending()
        logger.warning(
            "%s: resuming the interrupted ingest after its first %d documents (remove %s to start over).",
            persist_dir, record["documents"], RESUME_FILE,
        )  # fmt: skip
        return run

    def _remove_pending(self) -> None:
        """Remove the nodes of the batch that was being written when the run stopped (from the store and the
        docstore: either may hold some of them)."""
        pending = self.record.get("pending")
        if not pending:
            return
        node_ids = list(pending["node_ids"])
        if node_ids:
            self.vector_store.delete_nodes(node_ids=node_ids)
        for doc_id in pending["doc_ids"]:
            self.docstore.delete_ref_doc(doc_id, raise_error=False)
        for node_id in node_ids:
            self.docstore.delete_document(node_id, raise_error=False)
        self.record["pending"] = None
        self._save()

    def _save(self) -> None:
        atomic_write_json(self.persist_dir / RESUME_FILE, self.record)

    def write(
        self,
        documents: Iterable[Document],
        transformations: Sequence[TransformComponent],
        batch_size: int,
        show_progress: bool,
    ) -> tuple[StorageContext, str]:
        done: list[str] = self.record["batches"]
        total = operator.length_hint(documents) or None
        seen = 0
        with tqdm(total=total, desc="Ingesting", unit="doc", disable=not show_progress) as bar:
            for number, batch in enumerate(_batches(documents, batch_size)):
                digest = _digest(batch)
                seen += 1
                if number < len(done):
                    if digest != done[number]:
                        first = number * batch_size + 1
                        raise _Restart(
                            f"the documents from number {first} on differ from those of the interrupted ingest"
                        )
                    bar.update(len(batch))
                    continue
                self._write_batch(batch, digest, transformations)
                bar.update(len(batch))
                bar.set_postfix(nodes=self.record["nodes"], refresh=False)
        if seen < len(done):
            raise _Restart("the documents are fewer than those of the interrupted ingest")
        if not done:
            raise InputDataError("No documents to index.")
        storage = StorageContext.from_defaults(
            docstore=self.docstore, index_store=SQLiteIndexStore(self.kvstore), vector_store=self.vector_store,
            graph_store=SimpleGraphStore(),
        )  # fmt: skip
        return storage, str(self.record["index_id"])

    def _write_batch(self, batch: list[Document], digest: str, transformations: Sequence[TransformComponent]) -> None:
        nodes = run_transformations(batch, transformations)
        self.record["pending"] = {"doc_ids": [d.doc_id for d in batch], "node_ids": [n.node_id for n in nodes]}
        self._save()
        self.written = True
        self.vector_store.add(nodes)
        for node in nodes:
            node.embedding = None  # the store keeps it; the docstore keeps the rest
        self.docstore.add_documents(nodes, allow_update=True)
        # each document's content hash: a later sync (``kgplus sync``) re-indexes only the documents whose hash changed
        self.docstore.set_document_hashes({doc.doc_id: doc.hash for doc in batch})
        self.record["batches"].append(digest)
        self.record["documents"] += len(batch)
        self.record["nodes"] += len(nodes)
        self.record["pending"] = None
        self._save()

    def drop(self) -> None:
        """Remove this run's record, table and SQLite file (and any other the index in place does not use)."""
        self.kvstore.close()
        _drop_unused(self.persist_dir, self.live)


def _drop_unused(persist_dir: Path, live: Mapping[str, Any] | None) -> None:
    """Remove the resume record, and the tables and SQLite files that the index in place (``live``) does not use:
    those of an interrupted ingest that will not be resumed."""
    from llama_index_kgplus._lancedb import drop_other_tables

    (persist_dir / RESUME_FILE).unlink(missing_ok=True)
    drop_other_tables(persist_dir, (live or {}).get("vector_store"))
    drop_other_files(persist_dir, (live or {}).get("docstore"))
