"""Ingest documents into a persisted vector index, and load it back.

The default vector store is LlamaIndex's simple vector store persisted in the folder as JSON, read whole when the
index opens; ``vector_store="lancedb"`` keeps the vectors, text and nodes in a LanceDB table inside the folder
instead (``lancedb/``, the ``lancedb`` extra: :mod:`llama_index_kgplus._lancedb`), which opens in constant time and
searches with an ANN index at scale, and such a folder keeps its docstore and index store in one SQLite file
(``docstore/``, :mod:`llama_index_kgplus._sqlitedoc`) instead of ``docstore.json``, read row by row rather than
parsed whole; :func:`load_index` opens either without being told which. Any other LlamaIndex
``vector_store`` can be passed too, such as ``PGVectorStore`` (PostgreSQL with pgvector, the ``postgres`` extra):
it keeps the vectors on its server, ``ingest.json`` records which store (:mod:`llama_index_kgplus._server_store`,
without secrets), a store that returns its nodes gets the SQLite docstore of a LanceDB folder, and
``load_index(DIR, vector_store=store)`` reopens it (without the store: refused, naming it). Extra
transformations (e.g. summary node builders) run after splitting and embedding. Into such a store without extra
transformations the ingest streams in batches and resumes after a crash (:mod:`llama_index_kgplus._streaming`).

The folder is an ordinary LlamaIndex persist folder, written so that a crash, ``kill -9`` or a full disk never
leaves it broken or mixed: the new files are written whole into ``.ingest-staging/`` with a stamp
(``ingest.json``: ingest id, sha256 of every file), then moved into place; an interrupted move is finished by
the next :func:`load_index` (or ingest), and files that do not match the stamp are refused with a clear error.
The files an ingest derives from the index (the entity graph, ``hierarchy.json``) are staged and stamped with it
(``files`` of :func:`persist_index`), so the folder holds the old index with its graph and hierarchy or the new
one with its own, never the new vectors without their graph; one such file written later
(:func:`write_index_file`) joins the index the same way. A LanceDB table is not copied into staging: each ingest
writes a new table beside the old, ``ingest.json`` names the table and its Lance version, readers open that
version, and the switch removes the tables no stamp names; its SQLite docstore the same way (one file per ingest,
named by ``ingest.json``, copied on its first write after opening). One writer at a time: every write holds the folder's
writer lock (:mod:`llama_index_kgplus._lock`).

Example:

```python
index = build_index(load_corpus("docs.jsonl"), "./index")
index = load_index("./index")
```
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import operator
import os
import shutil
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llama_index.core import Document, StorageContext, VectorStoreIndex, load_index_from_storage
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.data_structs import IndexDict
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import BaseNode, TransformComponent
from llama_index.core.storage.docstore.types import RefDocInfo
from llama_index.core.vector_stores.simple import DEFAULT_VECTOR_STORE, NAMESPACE_SEP
from llama_index.core.vector_stores.types import DEFAULT_PERSIST_FNAME, BasePydanticVectorStore

from llama_index_kgplus._defaults import LOCAL_EMBED_MODELS, describe_embed_record
from llama_index_kgplus._files import atomic_write_json, fsync_dir, sha256_file
from llama_index_kgplus._lock import try_writer_lock, writer_lock
from llama_index_kgplus._paths import inside, member, user_path
from llama_index_kgplus._redact import redact_url
from llama_index_kgplus._server_store import check_store, holds_nodes, is_server_store
from llama_index_kgplus._streaming import DEFAULT_BATCH_SIZE
from llama_index_kgplus._sync import run_sync
from llama_index_kgplus._text import sentence_splitter
from llama_index_kgplus.errors import InputDataError

if TYPE_CHECKING:
    from llama_index_kgplus._syncing import SyncReport

__all__ = [
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_CHUNK_SIZE",
    "FileWriter",
    "INGEST_FILE",
    "VECTOR_STORES",
    "PackVectorStoreIndex",
    "build_index",
    "check_index_files",
    "check_embed_model",
    "has_docstore",
    "index_embed_model",
    "index_size",
    "load_index",
    "persist_index",
    "persist_storage",
    "read_settings",
    "require_index",
    "open_storage",
    "set_folder_delete",
    "set_structured_stream",
    "stream_index",
    "vector_store_for",
    "write_index_file",
]

DEFAULT_CHUNK_SIZE = 384
DEFAULT_CHUNK_OVERLAP = 32
INGEST_FILE = "ingest.json"
STAGING_DIR = ".ingest-staging"
# derived from the index, beside it; a new index removes those of the old one that it does not have
_DERIVED_FILES = ("hierarchy.json", "entity_graph.npz", "retriever.json")
# the JSON vector stores LlamaIndex writes: a new index kept in LanceDB removes those of an old JSON one
_JSON_STORE_FILES = ("default__vector_store.json", "image__vector_store.json")
# the JSON docstore and index store: a new index that keeps them in SQLite removes those of an old one
_JSON_KV_FILES = ("docstore.json", "index_store.json", "graph_store.json")
VECTOR_STORES = ("simple", "lancedb")
"""The vector stores an index folder can hold: LlamaIndex's JSON ``SimpleVectorStore``, LanceDB."""
AUTO_LANCEDB_DOCUMENTS = 10_000
"""From this many documents (so at least as many passages) a new index folder keeps its vectors in LanceDB, when
the ``lancedb`` extra is installed: the JSON store, read whole, opens faster from the CLI below about 10^4
passages, LanceDB (constant, plus its import) above (``benchmarks/scale.md``)."""
# how long a reader waits for a writer that is moving a sealed index into place (a few renames)
_SWITCH_WAIT = 60.0
FileWriter = Callable[[Path], object]
"""Writes one file at the path it is given."""


@dataclass
class _NodesInStoreIndexDict(IndexDict):
    """The index struct of an index whose vector store holds the nodes (LanceDB): no map of every node id.

    LlamaIndex keeps that map when the docstore follows the store (``store_nodes_override``), but reads it only
    for stores that return ids without nodes; at 10^5 passages it is 8 MB of JSON decoded and encoded again on
    every open."""

    def add_node(self, node: BaseNode, text_id: str | None = None) -> str:
        return text_id if text_id is not None else node.node_id

    def delete(self, doc_id: str) -> None:
        self.nodes_dict.pop(doc_id, None)  # kept empty: nothing to delete


# how an index bound to its folder deletes a document: the sync's (llama_index_kgplus._syncing, a layer above
# this module, which cannot import it: it installs it when imported, as the package's __init__ does)
_FOLDER_DELETE: list[Callable[..., Awaitable[Any]]] = []


def set_folder_delete(delete: Callable[..., Awaitable[Any]]) -> None:
    """Install how an index bound to its folder deletes a document (:meth:`PackVectorStoreIndex.adelete_ref_doc`):
    ``delete(index, persist_dir, ingest_id, doc_id, llm, show_progress)``, returning its ``SyncReport``."""
    _FOLDER_DELETE[:] = [delete]


# how build_index streams an entity linker and a summary builder (llama_index_kgplus._ingesting, a layer above,
# installs it when imported, as the package's __init__ does)
_STRUCTURED_STREAM: list[Callable[..., PackVectorStoreIndex | None]] = []


def set_structured_stream(stream: Callable[..., PackVectorStoreIndex | None]) -> None:
    """Install how :func:`build_index` streams ``extra_transformations`` into a folder: ``stream(documents,
    persist_dir, embed_model, chunk_size, chunk_overlap, extra_transformations, vector_store, show_progress,
    batch_size)`` returns the index, or None when they need every chunk at once."""
    _STRUCTURED_STREAM[:] = [stream]


class PackVectorStoreIndex(VectorStoreIndex):
    """The ``VectorStoreIndex`` that :func:`build_index` and :func:`load_index` return.

    An index loaded from a folder sealed by ``ingest.json`` (or persisted into one: ``build_index`` with a
    ``persist_dir``, :func:`persist_index`) is bound to it while the two hold the same index (:attr:`folder`):
    ``delete_ref_doc`` then deletes the document through every index of the folder (the vector store, the
    docstore, the entity graph, the summaries, a GraphRAG store in ``graphrag/``) and switches the result in at
    once, as ``kgplus sync`` does, and this object holds the result (``delete_report_``). A change made in memory
    (``insert``, ``delete_nodes``, ...) unbinds it: it then deletes as LlamaIndex does, from the vector store and
    the docstore in memory, until :func:`persist_index` writes it (which drops the folder's entity graph and
    hierarchy, which would no longer describe it). ``bind_folder(None)`` unbinds it on purpose.

    Example:

    ```python
    index = load_index("./index", embed_model=embed_model)
    index.delete_ref_doc("Lothair II")  # the folder no longer holds it, in any of its indexes
    print(index.delete_report_.summary())
    ```
    """

    _folder: tuple[Path, str] | None = None  # the folder that holds this index, and the ingest id it holds it as
    delete_report_: SyncReport | None = None

    @property
    def folder(self) -> Path | None:
        """The index folder this index is bound to: the one it was loaded from or persisted into, unchanged since on
        both sides (else None)."""
        if self._folder is None or _ingest_id(self._folder[0]) != self._folder[1]:
            return None
        return self._folder[0]

    def bind_folder(self, persist_dir: str | Path | None) -> None:
        """Bind the index to ``persist_dir``, which holds it as it is (:func:`load_index` and :func:`persist_index`
        do); None unbinds it, so that ``delete_ref_doc`` deletes in memory only, as LlamaIndex does. A folder
        without ``ingest.json`` (of plain LlamaIndex) binds nothing.

        Example:

        ```python
        index.bind_folder(None)
        index.delete_ref_doc("Lothair II")  # in memory; persist_index(index, "./index") writes it
        ```
        """
        folder = user_path(persist_dir).resolve() if persist_dir is not None else None
        ingest_id = _ingest_id(folder) if folder is not None else None
        self._folder = (folder, ingest_id) if folder is not None and ingest_id is not None else None

    @property
    def ref_doc_info(self) -> dict[str, RefDocInfo]:
        """The indexed documents with their node ids, by document id."""
        if isinstance(self.index_struct, _NodesInStoreIndexDict):
            return self.docstore.get_all_ref_doc_info() or {}
        return super().ref_doc_info

    def insert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """Insert nodes (in memory: the index leaves its folder)."""
        self._folder = None
        super().insert_nodes(nodes, **insert_kwargs)

    async def ainsert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """:meth:`insert_nodes`, async."""
        self._folder = None
        await super().ainsert_nodes(nodes, **insert_kwargs)

    def delete_nodes(self, node_ids: list[str], delete_from_docstore: bool = False, **delete_kwargs: Any) -> None:
        """Delete nodes (in memory: the index leaves its folder)."""
        self._folder = None
        super().delete_nodes(node_ids, delete_from_docstore=delete_from_docstore, **delete_kwargs)

    async def adelete_nodes(
        self, node_ids: list[str], delete_from_docstore: bool = False, **delete_kwargs: Any
    ) -> None:
        """:meth:`delete_nodes`, async."""
        self._folder = None
        await super().adelete_nodes(node_ids, delete_from_docstore=delete_from_docstore, **delete_kwargs)

    def update_ref_doc(self, document: Document, **update_kwargs: Any) -> None:
        """Delete the document's nodes and insert it again, in memory, as LlamaIndex does (the index leaves its
        folder: sync the corpus to update documents through every index of the folder)."""
        self._folder = None
        super().update_ref_doc(document, **update_kwargs)

    async def aupdate_ref_doc(self, document: Document, **update_kwargs: Any) -> None:
        """:meth:`update_ref_doc`, async."""
        self._folder = None
        await super().aupdate_ref_doc(document, **update_kwargs)

    def delete_ref_doc(
        self,
        ref_doc_id: str,
        delete_from_docstore: bool = True,
        *,
        llm: Any = None,
        show_progress: bool = False,
        **delete_kwargs: Any,
    ) -> None:
        """Delete the document ``ref_doc_id`` and its nodes: through every index of the folder the index is bound
        to (see the class notes; an id the folder does not hold is an :class:`InputDataError` and changes nothing),
        else from the vector store and the docstore in memory (the docstore too, which the pack's retrievers read,
        unless ``delete_from_docstore=False``, which also leaves the folder alone). ``llm``: the model (or model
        spec) of rewritten summaries and of the GraphRAG store's reports (by default the one ``ingest.json``
        records, else ``$KGPLUS_LLM``; loaded only when needed); ``delete_kwargs``: for the vector store's delete in
        memory."""
        if self._folder is not None and delete_from_docstore:
            run_sync(self.adelete_ref_doc(ref_doc_id, llm=llm, show_progress=show_progress))
            return
        self._folder = None
        super().delete_ref_doc(ref_doc_id, delete_from_docstore=delete_from_docstore, **delete_kwargs)

    async def adelete_ref_doc(
        self,
        ref_doc_id: str,
        delete_from_docstore: bool = True,
        *,
        llm: Any = None,
        show_progress: bool = False,
        **delete_kwargs: Any,
    ) -> None:
        """:meth:`delete_ref_doc`, async."""
        if self._folder is not None and delete_from_docstore:
            (folder, ingest_id), (delete,) = self._folder, _FOLDER_DELETE
            self.delete_report_ = await delete(self, folder, ingest_id, ref_doc_id, llm, show_progress)
            return
        self._folder = None
        await super().adelete_ref_doc(ref_doc_id, delete_from_docstore=delete_from_docstore, **delete_kwargs)


def default_vector_store(documents: Iterable[Document]) -> str:
    """The vector store of a new index folder when none is named: ``"lancedb"`` for :data:`AUTO_LANCEDB_DOCUMENTS`
    documents or more, or a stream that does not say how many, when the ``lancedb`` extra is installed; else
    ``"simple"``."""
    from llama_index_kgplus._lancedb import installed

    count = operator.length_hint(documents, -1)  # -1: a stream that does not say
    return "lancedb" if (count < 0 or count >= AUTO_LANCEDB_DOCUMENTS) and installed() else "simple"


def keeps_json_vectors(persist_dir: str | Path) -> bool:
    """Whether the index in ``persist_dir`` keeps its vectors in LlamaIndex's JSON store."""
    return (user_path(persist_dir) / _JSON_STORE_FILES[0]).is_file()


def vector_store_for(kind: str, persist_dir: str | Path) -> Any | None:
    """The vector store of a new index in ``persist_dir`` by its name in :data:`VECTOR_STORES`: ``None`` for the
    default JSON store, a new LanceDB table in the folder for ``lancedb``."""
    if kind not in VECTOR_STORES:
        raise InputDataError(f"Unknown vector store {kind!r}: use one of {', '.join(VECTOR_STORES)}.")
    if kind == "simple":
        return None
    from llama_index_kgplus._lancedb import new_store

    return new_store(user_path(persist_dir))


def build_index(
    documents: Iterable[Document],
    persist_dir: str | Path | None,
    *,
    embed_model: BaseEmbedding | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    extra_transformations: Sequence[TransformComponent] = (),
    vector_store: Any | None = None,
    show_progress: bool = True,
    nodes: Sequence[BaseNode] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> PackVectorStoreIndex:
    """Split, embed and index ``documents``; persist to ``persist_dir`` (if given), holding its writer lock from
    the start (another writer of the folder is refused before any work). ``nodes``: the chunks of ``documents``,
    already split and embedded elsewhere (a ``RayIngestionPipeline``'s output, docs/scale.md), indexed as they
    are (``extra_transformations`` still run on them; give the ``chunk_size`` and ``chunk_overlap`` they were
    split with, which a sync reuses). ``vector_store``: ``"simple"`` (LlamaIndex's JSON store in the folder),
    ``"lancedb"`` (a LanceDB table in the folder, which opens in constant time: for large corpora; needs
    ``persist_dir`` and the ``lancedb`` extra), ``None`` (with a ``persist_dir``, ``"lancedb"`` from
    :data:`AUTO_LANCEDB_DOCUMENTS` documents when installed, else ``"simple"``), or any LlamaIndex
    vector store, such as ``PGVectorStore`` (a server's table: ``ingest.json`` records which, and
    ``load_index(persist_dir, vector_store=store)`` reopens it).

    Into a folder whose stores keep the nodes on disk (``"lancedb"``, or a server store that returns its nodes),
    without ``nodes``, the ingest streams: ``documents`` (any iterable, e.g. ``load_corpus(path, stream=True)``) are
    read, split, embedded and written ``batch_size`` at a time, memory stays flat in their number, and a run of the
    same ingest after a crash or ``kill -9`` resumes after the last written batch
    (:mod:`llama_index_kgplus._streaming`). ``extra_transformations`` stream too when they are an ``EntityLinker``
    and a ``SemanticChunkingSummaryNodeBuilder`` (either or both; the linker needs ``documents`` it can read twice):
    each batch is linked and summarised as it is written, and the entity graph (``entity_graph.npz``) and
    ``hierarchy.json`` are written with the index (``llama_index_kgplus._ingesting``); other transformations
    (RAPTOR, your own) run over every node at once.

    Example:

    ```python
    from llama_index_kgplus import build_index, load_corpus, load_index

    build_index(load_corpus("docs.jsonl", stream=True), "./index", vector_store="lancedb")
    index = load_index("./index")  # opens the LanceDB table
    ```
    """
    from llama_index.core import Settings

    if isinstance(documents, Sized) and not len(documents):
        raise InputDataError("No documents to index.")
    if isinstance(vector_store, str) and persist_dir is None and vector_store != "simple":
        raise InputDataError(f"vector_store={vector_store!r} lives in the index folder: give a persist_dir.")
    if vector_store is None and persist_dir is not None:
        vector_store = default_vector_store(documents)
    with writer_lock(persist_dir, "build_index") if persist_dir is not None else contextlib.nullcontext():
        embed_model = embed_model or Settings.embed_model  # resolved once the folder is ours
        if persist_dir is not None and nodes is None and _streams(vector_store):
            if not extra_transformations:
                return stream_index(
                    documents, user_path(persist_dir), embed_model, chunk_size, chunk_overlap, vector_store,
                    show_progress, batch_size,
                )  # fmt: skip
            if _STRUCTURED_STREAM:
                streamed = _STRUCTURED_STREAM[0](
                    documents, user_path(persist_dir), embed_model, chunk_size, chunk_overlap, extra_transformations,
                    vector_store, show_progress, batch_size,
                )  # fmt: skip
                if streamed is not None:
                    return streamed
        if isinstance(vector_store, str):
            vector_store = vector_store_for(vector_store, persist_dir) if persist_dir is not None else None
        documents = list(documents)
        if not documents:
            raise InputDataError("No documents to index.")
        return _build_index(
            documents, persist_dir, embed_model, chunk_size, chunk_overlap, extra_transformations, vector_store,
            show_progress, nodes,
        )  # fmt: skip


def _streams(vector_store: Any) -> bool:
    """Whether an ingest into ``vector_store`` (a name of :data:`VECTOR_STORES` or a store) can stream: the folder's
    LanceDB table, or a server store that returns its nodes (both keep them on disk, with the SQLite docstore)."""
    return vector_store == "lancedb" or (not isinstance(vector_store, str) and holds_nodes(vector_store))


def stream_index(
    documents: Iterable[Document],
    persist_dir: Path,
    embed_model: BaseEmbedding,
    chunk_size: int,
    chunk_overlap: int,
    vector_store: Any,
    show_progress: bool,
    batch_size: int,
    *,
    per_batch: Sequence[TransformComponent] = (),
    derived_files: Callable[[PackVectorStoreIndex], Mapping[str, FileWriter]] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> PackVectorStoreIndex:
    """:func:`build_index` in batches (see :mod:`llama_index_kgplus._streaming`), then sealed and switched in.
    ``per_batch``: transformations run on each batch after the embedding (the entity linking and summaries of a
    structured ingest, ``llama_index_kgplus._ingesting``), ``derived_files``: the files made from the whole index
    before it is sealed (its entity graph, its hierarchy), ``settings``: more of how it was built, for
    ``ingest.json`` (and the resume record: a run with other settings starts over)."""
    from llama_index_kgplus._streaming import drop_resume_record, write_batches

    _finish_interrupted_persist(persist_dir)
    try:
        live = _read_stamp(persist_dir)
    except InputDataError:
        live = None  # an unreadable stamp names nothing to keep
    settings = {"chunk_size": chunk_size, "chunk_overlap": chunk_overlap, **(settings or {})}
    storage, index_id = write_batches(
        documents, persist_dir, vector_store, [sentence_splitter(chunk_size, chunk_overlap), embed_model, *per_batch],
        key={**settings, "embed_model": embed_model_record(embed_model)}, live=live, batch_size=batch_size,
        show_progress=show_progress,
    )  # fmt: skip
    index = PackVectorStoreIndex(
        index_struct=_NodesInStoreIndexDict(index_id=index_id), storage_context=storage, embed_model=embed_model,
        store_nodes_override=True,
    )  # fmt: skip
    files = derived_files(index) if derived_files is not None else None
    persist_index(index, persist_dir, embed_model=embed_model, settings=settings, files=files)
    # after the switch: a crash between the two leaves a record of the index in place, which the next run drops
    drop_resume_record(persist_dir)
    return index


def _build_index(
    documents: Sequence[Document],
    persist_dir: str | Path | None,
    embed_model: BaseEmbedding,
    chunk_size: int,
    chunk_overlap: int,
    extra_transformations: Sequence[TransformComponent],
    vector_store: Any | None,
    show_progress: bool,
    nodes: Sequence[BaseNode] | None = None,
) -> PackVectorStoreIndex:
    if nodes is None:
        pipeline = IngestionPipeline(
            transformations=[sentence_splitter(chunk_size, chunk_overlap), embed_model, *extra_transformations]
        )
        nodes = pipeline.run(documents=list(documents), show_progress=show_progress)
    else:
        _check_chunks(documents, nodes)
        if extra_transformations:
            nodes = IngestionPipeline(transformations=list(extra_transformations)).run(
                nodes=list(nodes), show_progress=show_progress
            )
    storage = (
        StorageContext.from_defaults(vector_store=vector_store) if vector_store else StorageContext.from_defaults()
    )
    storage.docstore.add_documents(nodes)
    # each document's content hash: a later sync (``kgplus sync``) re-indexes only the documents whose hash changed
    storage.docstore.set_document_hashes({doc.doc_id: doc.hash for doc in documents})
    if vector_store is not None and _keeps_nodes(vector_store):
        # the docstore follows the table's adds and deletes; the table holds the nodes, so no map of their ids
        index = PackVectorStoreIndex(
            index_struct=_NodesInStoreIndexDict(), storage_context=storage, embed_model=embed_model,
            store_nodes_override=True,
        )  # fmt: skip
        index.insert_nodes(nodes, show_progress=show_progress)
        if _is_lancedb(vector_store):
            vector_store.optimize_for_search()  # the ANN index, once big enough
    else:
        index = PackVectorStoreIndex(
            nodes, storage_context=storage, embed_model=embed_model, show_progress=show_progress
        )
    if persist_dir is not None:
        persist_index(
            index, persist_dir, embed_model=embed_model,
            settings={"chunk_size": chunk_size, "chunk_overlap": chunk_overlap},
        )  # fmt: skip
    return index


def _check_chunks(documents: Sequence[Document], nodes: Sequence[BaseNode]) -> None:
    """Refuse, in one line, chunks given to :func:`build_index` that are not the embedded chunks of ``documents``."""
    if not nodes:
        raise InputDataError("nodes is empty: give the chunks of the documents, split and embedded.")
    doc_ids = {doc.doc_id for doc in documents}
    for node in nodes:
        if node.embedding is None:
            raise InputDataError(f"The node {node.node_id!r} has no embedding: embed the chunks before indexing them.")
        if node.ref_doc_id not in doc_ids:
            raise InputDataError(
                f"The node {node.node_id!r} belongs to no document given (ref_doc_id {node.ref_doc_id!r}): give the "
                "documents the chunks were split from."
            )


def _is_lancedb(vector_store: Any) -> bool:
    from llama_index_kgplus._lancedb import is_pack_store

    return is_pack_store(vector_store)


def _keeps_nodes(vector_store: Any) -> bool:
    """Whether the vector store returns the nodes themselves (the pack's LanceDB table, a server store with
    ``stores_text``): its index keeps no map of every node id, and its docstore is the folder's SQLite file."""
    return _is_lancedb(vector_store) or holds_nodes(vector_store)


def persist_index(
    index: VectorStoreIndex,
    persist_dir: str | Path,
    *,
    embed_model: BaseEmbedding | None = None,
    files: Mapping[str, FileWriter] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> str:
    """Persist ``index`` into ``persist_dir`` all at once (see the module notes); returns the ingest id.
    ``embed_model`` (recorded, so that a query with another model is refused): the index's, by default.
    ``files``: the files derived from it, by name (``{"entity_graph.npz": graph.write_file}``), each written by its
    writer beside the index's own files and switched in with them. ``settings``: how it was built (chunking, entity
    sources, hierarchy; JSON values), recorded in ``ingest.json`` so that a sync splits and links the same way.
    A :class:`PackVectorStoreIndex` that the folder holds as it is (its :attr:`~PackVectorStoreIndex.folder`, e.g.
    after its ``delete_ref_doc``) is not written again without ``files`` or ``settings``: the folder keeps it, with
    its entity graph and hierarchy. The index is then bound to the folder."""
    persist_dir = user_path(persist_dir)
    with writer_lock(persist_dir, "persisting an index"):
        held = isinstance(index, PackVectorStoreIndex) and index.folder == persist_dir.resolve()
        if held and files is None and settings is None:
            return str(_ingest_id(persist_dir))
        embed_model = embed_model or index_embed_model(index)
        ingest_id = persist_storage(
            index.storage_context,
            persist_dir,
            index_id=index.index_id,
            embed_model=embed_model_record(embed_model) if embed_model is not None else None,
            files=files,
            settings=settings,
        )
        if isinstance(index, PackVectorStoreIndex):
            index.bind_folder(persist_dir)
    return ingest_id


def embed_model_record(embed_model: BaseEmbedding) -> dict[str, Any]:
    """What ``ingest.json`` records of the embedding model: its class, name and server (if served)."""
    server = getattr(embed_model, "api_base", None) or getattr(embed_model, "base_url", None)
    server = redact_url(server) if server else None  # written to ingest.json, shown in errors
    name = str(embed_model.model_name)
    # a local model is named by its folder, wherever the environment keeps it
    return {"class": embed_model.class_name(), "model_name": name if server else Path(name).name, "server": server}


def persist_storage(
    storage_context: StorageContext,
    persist_dir: str | Path,
    *,
    index_id: str | None = None,
    embed_model: dict[str, Any] | None = None,
    files: Mapping[str, FileWriter] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> str:
    """Persist a storage context into ``persist_dir`` all at once, as :func:`persist_index` does."""
    persist_dir = user_path(persist_dir)
    with writer_lock(persist_dir, "persisting an index"):
        _finish_interrupted_persist(persist_dir)
        stamp: dict[str, Any] = {"ingest_id": uuid.uuid4().hex, "index_id": index_id, "embed_model": embed_model}
        if settings is None:  # the same index persisted again (e.g. after delete_ref_doc) keeps its record
            with contextlib.suppress(InputDataError):
                old = _read_stamp(persist_dir) or {}
                settings = old.get("settings") if index_id is not None and old.get("index_id") == index_id else None
        if settings is not None:
            stamp["settings"] = dict(settings)
        vector_store = storage_context.vector_store
        if _is_lancedb(vector_store):
            from llama_index_kgplus._lancedb import store_record

            # the table stays where it is; the stamp names the version that goes with these files
            stamp["vector_store"] = store_record(vector_store, persist_dir)
        elif is_server_store(vector_store):
            from llama_index_kgplus._server_store import store_record as server_record

            # the vectors stay on their server; the stamp names the store (without secrets) for load_index
            stamp["vector_store"] = server_record(vector_store)
        if _keeps_nodes(vector_store):
            from llama_index_kgplus._sqlitedoc import persist_kv

            # the docstore and index store: a SQLite file of the folder, named by the stamp as the table is
            stamp["docstore"] = persist_kv(storage_context, persist_dir)
        staging = _new_staging(persist_dir)
        if "docstore" not in stamp:
            _persist_json(storage_context, staging)
        for name, write in (files or {}).items():
            write(staging / name)
        _seal_and_switch(persist_dir, stamp)
    return str(stamp["ingest_id"])


def _persist_json(storage_context: StorageContext, folder: Path) -> None:
    """``storage_context.persist(folder)``, with LlamaIndex's JSON vector stores written by the json module alone:
    LlamaIndex encodes (and decodes) every float through dataclasses_json, about 10x slower (seconds at 10^3
    passages, the better part of a small sync)."""
    from llama_index.core.vector_stores.simple import SimpleVectorStore

    simple = {name: s for name, s in storage_context.vector_stores.items() if type(s) is SimpleVectorStore}
    others = {name: s for name, s in storage_context.vector_stores.items() if name not in simple}
    dataclasses.replace(storage_context, vector_stores=others).persist(persist_dir=str(folder))
    for name, store in simple.items():
        data = store.data
        fields = {
            "embedding_dict": data.embedding_dict,
            "text_id_to_ref_doc_id": data.text_id_to_ref_doc_id,
            "metadata_dict": data.metadata_dict,
        }
        with (folder / f"{name}{NAMESPACE_SEP}{DEFAULT_PERSIST_FNAME}").open("w", encoding="utf-8") as handle:
            handle.write(json.dumps(fields))  # dumps: the C encoder (dump encodes in Python, 5x slower)


def _read_json_vector_stores(persist_dir: Path) -> dict[str, Any] | None:
    """The JSON vector stores of a folder, read by the json module alone (see :func:`_persist_json`); None for a
    folder whose stores LlamaIndex's own reader must read (no namespaced default store: an older layout)."""
    from llama_index.core.vector_stores.simple import SimpleVectorStore, SimpleVectorStoreData

    names = [p.name for p in persist_dir.glob(f"*{NAMESPACE_SEP}{DEFAULT_PERSIST_FNAME}")]
    if f"{DEFAULT_VECTOR_STORE}{NAMESPACE_SEP}{DEFAULT_PERSIST_FNAME}" not in names:
        return None
    stores: dict[str, Any] = {}
    for name in names:
        with (persist_dir / name).open("rb") as handle:
            raw = json.load(handle)
        if not isinstance(raw, dict):
            raise ValueError(f"{name} is not a vector store")
        data = SimpleVectorStoreData(
            embedding_dict=raw.get("embedding_dict") or {},
            text_id_to_ref_doc_id=raw.get("text_id_to_ref_doc_id") or {},
            metadata_dict=raw.get("metadata_dict") or {},
        )
        stores[name.split(NAMESPACE_SEP)[0]] = SimpleVectorStore(data=data)
    return stores


def write_index_file(persist_dir: str | Path, name: str, write: FileWriter) -> Path:
    """Write the file ``name`` of the index folder ``persist_dir`` with ``write(path)``, holding its writer lock.
    In a folder sealed by ``ingest.json`` the file joins the index as an ingest's files do: staged, stamped with
    the others (the same ingest id) and switched in, so a crash leaves the old file or the new, each with a stamp
    that matches. Elsewhere (a folder of plain LlamaIndex, a new folder) ``write`` writes it in place (refused
    when it is a symlink out of the folder)."""
    persist_dir = user_path(persist_dir)
    with writer_lock(persist_dir, f"writing {name}"):
        _finish_interrupted_persist(persist_dir)
        stamp = _read_stamp(persist_dir)
        if stamp is None:
            write(inside(persist_dir, name, fix=f"remove the link {persist_dir / name} and re-run the command"))
        else:
            write(_new_staging(persist_dir) / name)
            _seal_and_switch(persist_dir, stamp)
    return persist_dir / name


def _new_staging(persist_dir: Path) -> Path:
    """An empty staging folder (under the writer lock, an interrupted one finished)."""
    staging = _staging(persist_dir)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    return staging


def _seal_and_switch(persist_dir: Path, stamp: dict[str, Any]) -> None:
    """Seal the staging folder with ``stamp`` (its ``files`` and the sha256 of every staged file), then move it
    into place."""
    staging = persist_dir / STAGING_DIR
    files = dict(stamp.get("files") or {})
    for path in sorted(staging.iterdir()):
        with path.open("rb") as handle:
            os.fsync(handle.fileno())
        files[path.name] = sha256_file(path)
    atomic_write_json(staging / INGEST_FILE, {**stamp, "files": files})
    _switch(persist_dir)


def read_settings(persist_dir: str | Path) -> dict[str, Any] | None:
    """The settings ``ingest.json`` records of how the index in ``persist_dir`` was built (``settings`` of
    :func:`persist_index`), or None when it records none (an index of an earlier version)."""
    settings = (_read_stamp(user_path(persist_dir)) or {}).get("settings")
    return dict(settings) if isinstance(settings, dict) else None


def _read_stamp(persist_dir: Path) -> dict[str, Any] | None:
    """``ingest.json`` of the index in place (None without one), its ``files`` a dict."""
    path = persist_dir / INGEST_FILE
    if not path.is_file():
        return None
    try:
        stamp = json.loads(path.read_text(encoding="utf-8"))
        return {**stamp, "files": dict(stamp["files"])}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputDataError(f"{path} is unreadable ({exc}): {_fix(persist_dir)}.") from exc


def _fix(persist_dir: Path) -> str:
    return f"re-run `kgplus ingest DOCS --index {persist_dir}`"


def _ingest_id(persist_dir: Path) -> str | None:
    """The ingest id of the index in place (None without a readable ``ingest.json``)."""
    try:
        return str(json.loads((persist_dir / INGEST_FILE).read_text(encoding="utf-8"))["ingest_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _staging(persist_dir: Path) -> Path:
    """The staging folder of ``persist_dir``; refused when it is a symlink out of the index."""
    return inside(persist_dir, STAGING_DIR, fix=f"remove the link {persist_dir / STAGING_DIR} and re-run the command")


def _finish_interrupted_persist(persist_dir: Path) -> None:
    """Move a sealed staging folder into place, or drop an unsealed one (the start of a write that never
    finished: the old index stays). A staging folder that a live writer is still writing is left to it; one it
    is moving into place is waited for. A stamp that names anything but plain files of the staging folder is
    refused before anything moves."""
    staging = _staging(persist_dir)
    if not staging.is_dir():
        return
    sealed = (staging / INGEST_FILE).is_file()
    if not os.access(persist_dir, os.W_OK):  # a read-only folder: no writer to wait for (and no lock to take)
        _switch(persist_dir)
        return
    with try_writer_lock(persist_dir, "finishing an interrupted ingest", wait=_SWITCH_WAIT if sealed else 0.0) as held:
        if held:
            _switch(persist_dir)
        elif sealed:
            raise InputDataError(
                f"{persist_dir} is being switched to a new index by another process for over {_SWITCH_WAIT:.0f} s: "
                "try again when it has finished."
            )


def _switch(persist_dir: Path) -> None:
    """Move a sealed staging folder into place (under the writer lock); drop an unsealed one."""
    staging = persist_dir / STAGING_DIR
    stamp = staging / INGEST_FILE
    if stamp.is_file():
        fix = f"delete {staging} (the index keeps its last whole state) and re-run `kgplus ingest`"
        new = json.loads(stamp.read_text(encoding="utf-8"))
        names = [member(staging, n, what=str(stamp), fix=fix).name for n in new["files"]]
        replaced = _ingest_id(persist_dir) != new.get("ingest_id")  # a new index, not a new file of the index
        if replaced:
            dropped = _DERIVED_FILES + (_JSON_STORE_FILES if new.get("vector_store") else ())
            for name in dropped + (_JSON_KV_FILES if new.get("docstore") else ()):
                if name not in names:
                    (persist_dir / name).unlink(missing_ok=True)
        for name in names:
            if (staging / name).exists():
                os.replace(staging / name, persist_dir / name)
        os.replace(stamp, persist_dir / INGEST_FILE)
        fsync_dir(persist_dir)
        if replaced:
            from llama_index_kgplus._lancedb import drop_other_tables

            drop_other_tables(persist_dir, new.get("vector_store"))
            from llama_index_kgplus._sqlitedoc import drop_other_files

            drop_other_files(persist_dir, new.get("docstore"))
    shutil.rmtree(staging, ignore_errors=True)


def check_index_files(persist_dir: str | Path) -> dict[str, Any] | None:
    """Finish an interrupted persist, then check the files against ``ingest.json`` (``None`` for a folder
    written by plain LlamaIndex: nothing to check)."""
    persist_dir = user_path(persist_dir)
    fix = _fix(persist_dir)
    try:
        _finish_interrupted_persist(persist_dir)
    except InputDataError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputDataError(f"{persist_dir}: cannot finish an interrupted ingest ({exc}): {fix}.") from exc
    stamp = _read_stamp(persist_dir)
    if stamp is None:
        return None
    files = stamp["files"]
    if isinstance(stamp.get("vector_store"), dict) and stamp["vector_store"].get("type") == "lancedb":
        from llama_index_kgplus._lancedb import table_path

        table = table_path(persist_dir, stamp["vector_store"])
        if not table.is_dir():
            raise InputDataError(f"{persist_dir} lacks its LanceDB table {table}, written by its last ingest: {fix}.")
    if isinstance(stamp.get("docstore"), dict):
        from llama_index_kgplus._sqlitedoc import kv_path

        kv = kv_path(persist_dir, stamp["docstore"])
        if not kv.is_file():
            raise InputDataError(f"{persist_dir} lacks its docstore {kv}, written by its last ingest: {fix}.")
    for name, digest in files.items():
        file = member(persist_dir, name, what=str(persist_dir / INGEST_FILE), fix=fix)
        if not file.is_file():
            raise InputDataError(f"{persist_dir} lacks {name}, written by its last ingest: {fix}.")
        if sha256_file(file) != digest:
            raise InputDataError(
                f"{file} is not the file the last ingest wrote (changed, truncated or copied from another "
                f"index): the index files would not match each other; {fix}."
            )
    return stamp


def require_index(persist_dir: str | Path) -> Path:
    """Check that ``persist_dir`` holds a whole index (cheap: no model needed), finishing an interrupted persist."""
    persist_dir = user_path(persist_dir)
    stamp = check_index_files(persist_dir) if persist_dir.is_dir() else None
    if not has_docstore(persist_dir, stamp):
        raise InputDataError(
            f"{persist_dir} holds no index: build one with `kgplus ingest DOCS --index {persist_dir}`."
        )
    return persist_dir


def has_docstore(persist_dir: Path, stamp: Mapping[str, Any] | None) -> bool:
    """Whether the folder holds a docstore: the SQLite file its stamp names, or LlamaIndex's ``docstore.json``."""
    return isinstance((stamp or {}).get("docstore"), dict) or (persist_dir / "docstore.json").is_file()


def index_size(index: VectorStoreIndex) -> tuple[int, int]:
    """How many documents and nodes ``index`` holds (counted by SQLite for a folder's SQLite docstore, which is
    not read whole)."""
    from llama_index_kgplus._sqlitedoc import SQLiteDocumentStore

    docstore = index.docstore
    if isinstance(docstore, SQLiteDocumentStore):
        return docstore.size()
    return len(docstore.get_all_ref_doc_info() or {}), len(docstore.docs)


def index_embed_model(index: Any) -> BaseEmbedding | None:
    """The embedding model a ``VectorStoreIndex`` embeds queries with (``None`` for other objects)."""
    # The pack's one private reach into LlamaIndex: VectorStoreIndex has no public accessor for its embedding
    # model (core's own VectorIndexRetriever and PropertyGraphIndex read index._embed_model as well).
    return getattr(index, "_embed_model", None)


def check_embed_model(persist_dir: str | Path, embed_model: BaseEmbedding | dict[str, Any]) -> None:
    """Refuse to query an index with another embedding model than the one that built it (vectors of another
    model give a crash, or, with the same dimension, wrong rankings without an error). ``embed_model`` is the
    model, or what it will be known by before it loads (``model_name`` and ``server`` of
    :func:`~llama_index_kgplus.llm.embed_model_identity`)."""
    persist_dir = user_path(persist_dir)
    path = persist_dir / INGEST_FILE
    try:
        built = json.loads(path.read_text(encoding="utf-8")).get("embed_model") if path.is_file() else None
    except (OSError, ValueError, AttributeError):
        return  # check_index_files reports an unreadable stamp
    if not isinstance(built, dict):
        return  # an index of an earlier version, or of plain LlamaIndex: nothing recorded
    now = embed_model if isinstance(embed_model, dict) else embed_model_record(embed_model)
    if any(built.get(key) != now[key] for key in ("class", "model_name", "server") if key in now):
        built_name, spec = describe_embed_record(built)
        how = (
            f"open it with the embedding model spec {spec} (--embed-model {spec}, $KGPLUS_EMBED_MODEL or "
            f"embed_model_from_spec({spec!r}); pip install 'llama-index-kgplus[{LOCAL_EMBED_MODELS[spec].extra}]')"
            if spec
            else "query it with the same --embed-model (or $KGPLUS_EMBED_MODEL)"
        )
        raise InputDataError(
            f"{persist_dir} was built with the embedding model {built_name}, not {describe_embed_record(now)[0]}: "
            f"{how}, or re-run `kgplus ingest` with this one."
        )


def load_index(
    persist_dir: str | Path,
    *,
    embed_model: BaseEmbedding | None = None,
    check: bool = True,
    vector_store: BasePydanticVectorStore | None = None,
) -> PackVectorStoreIndex:
    """Load an index persisted by :func:`build_index`; ``check=False`` skips :func:`require_index` (already
    called, e.g. before loading the embedding model). ``vector_store``: the store that holds the vectors of an
    index built with one outside the folder (a ``PGVectorStore`` on its server: the caller connects it, with its
    credentials); refused when the folder's ``ingest.json`` names another store or keeps the vectors itself, and
    a folder built with such a store is refused without it. The index is bound to the folder: its
    ``delete_ref_doc`` deletes through every index the folder holds (see :class:`PackVectorStoreIndex`).

    Example:

    ```python
    store = PGVectorStore.from_params(host="127.0.0.1", port=5432, database="rag", user="rag",
                                      password=os.environ["PGPASSWORD"], table_name="kgplus", embed_dim=384)
    index = load_index("./index", vector_store=store)
    ```
    """
    persist_dir = require_index(persist_dir) if check else user_path(persist_dir)
    if embed_model is not None:
        check_embed_model(persist_dir, embed_model)
    ingest_id = _ingest_id(persist_dir)
    index = _read_index(persist_dir, open_storage(persist_dir, vector_store=vector_store), embed_model)
    index.bind_folder(persist_dir)
    if _ingest_id(persist_dir) != ingest_id:  # switched while it was read: its files may be of either index
        index.bind_folder(None)
    return index


def _read_index(persist_dir: Path, storage: StorageContext, embed_model: BaseEmbedding | None) -> PackVectorStoreIndex:
    from llama_index_kgplus._sqlitedoc import SQLiteIndexStore

    if isinstance(storage.index_store, SQLiteIndexStore):
        # built straight from its one struct: LlamaIndex's loader would build the index twice, and each build
        # writes back the struct (LlamaIndex's map of every node id: 8 MB of JSON at 10^5 passages)
        structs = storage.index_store.index_structs()
        if len(structs) != 1 or not isinstance(structs[0], IndexDict):
            raise InputDataError(f"{persist_dir} holds no vector index built by `kgplus ingest`: {_fix(persist_dir)}.")
        return PackVectorStoreIndex(
            index_struct=_NodesInStoreIndexDict(index_id=structs[0].index_id, summary=structs[0].summary),
            storage_context=storage,
            embed_model=embed_model,
            store_nodes_override=True,
        )
    try:
        index = load_index_from_storage(storage, embed_model=embed_model)
    except (OSError, ValueError) as exc:  # a missing or unparsable store file of a folder without ingest.json
        raise InputDataError(
            f"{persist_dir} holds an unreadable index ({type(exc).__name__}: {exc}): re-run `kgplus ingest DOCS "
            f"--index {persist_dir}`."
        ) from exc
    if not isinstance(index, VectorStoreIndex):
        raise InputDataError(
            f"{persist_dir} holds a {type(index).__name__}, not a vector index built by `kgplus ingest`."
        )
    return PackVectorStoreIndex(
        index_struct=index.index_struct,
        storage_context=storage,
        embed_model=index_embed_model(index),
        store_nodes_override=_keeps_nodes(storage.vector_store),
    )


def _folder_vector_store(
    persist_dir: Path, stamp: Mapping[str, Any] | None, vector_store: BasePydanticVectorStore | None
) -> Any | None:
    """The vector store of an index folder: the one given, checked against the store ``ingest.json`` names; the
    LanceDB table it names; or ``None`` for the folder's JSON store."""
    from llama_index_kgplus._server_store import STORE_TYPE

    record = (stamp or {}).get("vector_store")
    if isinstance(record, dict) and record.get("type") == STORE_TYPE:
        check_store(persist_dir, record, vector_store)
        return vector_store
    # an index built by an earlier version with a store outside the folder has a stamp without it, and no JSON store
    if vector_store is not None and (isinstance(record, dict) or keeps_json_vectors(persist_dir)):
        kept = "a LanceDB table of the folder" if isinstance(record, dict) else "the folder's JSON vector store"
        raise InputDataError(
            f"{persist_dir} keeps its vectors in {kept}, not in a {vector_store.class_name()}: open it without "
            "vector_store, or re-run build_index with that store."
        )
    if isinstance(record, dict):
        from llama_index_kgplus._lancedb import open_store

        return open_store(persist_dir, record)
    return vector_store  # None, or the store of a folder of plain LlamaIndex (no ingest.json)


def open_storage(persist_dir: str | Path, *, vector_store: BasePydanticVectorStore | None = None) -> StorageContext:
    """The storage context of an index folder: its docstore and index store, JSON or the SQLite file that
    ``ingest.json`` names (nothing read up front), and its vector store, JSON, the LanceDB table (at its
    version) that ``ingest.json`` names, or ``vector_store`` for a folder whose vectors live on a server (checked
    against what ``ingest.json`` names)."""
    persist_dir = user_path(persist_dir)
    try:
        stamp = _read_stamp(persist_dir)
    except InputDataError:
        stamp = None  # an unreadable stamp: read as a folder of plain LlamaIndex (require_index reports it)
    kv_record = (stamp or {}).get("docstore")
    try:
        store = _folder_vector_store(persist_dir, stamp, vector_store)
        if store is not None and isinstance(kv_record, dict):
            from llama_index.core.graph_stores import SimpleGraphStore

            from llama_index_kgplus._sqlitedoc import open_kv_stores

            docstore, index_store = open_kv_stores(persist_dir, kv_record)
            return StorageContext.from_defaults(
                docstore=docstore, index_store=index_store, vector_store=store, graph_store=SimpleGraphStore()
            )
        if store is not None:
            return StorageContext.from_defaults(persist_dir=str(persist_dir), vector_store=store)
        return StorageContext.from_defaults(
            persist_dir=str(persist_dir), vector_stores=_read_json_vector_stores(persist_dir)
        )
    except InputDataError:
        raise
    except (OSError, ValueError) as exc:  # a missing or unparsable store file of a folder without ingest.json
        raise InputDataError(
            f"{persist_dir} holds an unreadable index ({type(exc).__name__}: {exc}): re-run `kgplus ingest DOCS "
            f"--index {persist_dir}`."
        ) from exc
