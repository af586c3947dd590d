"""Moving an index folder kept in JSON (LlamaIndex's simple vector store and docstore, read whole on every open)
into the folder's LanceDB table and SQLite docstore, which open at once: :func:`upgrade_index`.

The nodes, their vectors and ids, the index id, the ingest settings and the derived files (entity graph,
hierarchy) are carried over as they are; nothing is split, linked, summarised or embedded again. The result is
sealed and switched in like any ingest (``_indexing``): a reader sees the JSON index or the LanceDB one.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from llama_index.core import StorageContext
from llama_index.core.data_structs.data_structs import IndexDict
from llama_index.core.storage.index_store import SimpleIndexStore
from llama_index.core.vector_stores.simple import SimpleVectorStore
from tqdm.auto import tqdm

from llama_index_kgplus._indexing import (
    _DERIVED_FILES,
    FileWriter,
    _NodesInStoreIndexDict,
    _read_stamp,
    open_storage,
    persist_storage,
    require_index,
)
from llama_index_kgplus._lock import writer_lock
from llama_index_kgplus.errors import InputDataError

_BATCH = 1000


def upgrade_index(persist_dir: str | Path, *, show_progress: bool = True) -> int:
    """Move the index in ``persist_dir`` from LlamaIndex's JSON stores into a LanceDB table and a SQLite docstore
    (``vector_store="lancedb"`` of :func:`~llama_index_kgplus.build_index`), which open in constant time. Every
    node keeps its vector and id, and the entity graph, hierarchy and ingest settings are kept: nothing is
    embedded again. Readers see the old index or the new one. Returns the number of nodes moved: 0 when the folder
    is in LanceDB already. Needs the ``lancedb`` extra.

    Example:

    ```python
    from llama_index_kgplus.indexing import upgrade_index

    upgrade_index("./index")  # then load_index("./index") opens the LanceDB table
    ```
    """
    from llama_index_kgplus._lancedb import STORE_TYPE, new_store

    persist_dir = require_index(persist_dir)
    with writer_lock(persist_dir, "upgrading the index"):
        stamp = _read_stamp(persist_dir)
        if stamp is None:
            raise InputDataError(
                f"{persist_dir} was not written by `kgplus ingest` (no ingest.json): re-run `kgplus ingest DOCS "
                f"--index {persist_dir} --vector-store lancedb`."
            )
        record = stamp.get("vector_store")
        if isinstance(record, dict):
            if record.get("type") == STORE_TYPE:
                return 0
            raise InputDataError(f"{persist_dir} keeps its vectors in a {record.get('type')} store: nothing to move.")
        storage = open_storage(persist_dir)
        old = storage.vector_store
        structs = storage.index_store.index_structs()
        if not isinstance(old, SimpleVectorStore) or len(structs) != 1 or not isinstance(structs[0], IndexDict):
            raise InputDataError(f"{persist_dir} holds no vector index built by `kgplus ingest`: nothing to move.")
        vectors = old.data.embedding_dict
        table = new_store(persist_dir)
        ids = list(vectors)
        with tqdm(total=len(ids), desc="Moving nodes to LanceDB", unit="node", disable=not show_progress) as bar:
            for start in range(0, len(ids), _BATCH):
                try:
                    nodes = storage.docstore.get_nodes(ids[start : start + _BATCH])
                except ValueError as exc:  # a vector without its node: the folder is not one index
                    raise InputDataError(f"{persist_dir}: {exc}; re-run `kgplus ingest DOCS --index ...`.") from exc
                for node in nodes:
                    node.embedding = vectors[node.node_id]
                table.add(nodes)
                bar.update(len(nodes))
        table.optimize_for_search()  # the ANN index, once big enough
        index_store = SimpleIndexStore()
        index_store.add_index_struct(_NodesInStoreIndexDict(index_id=structs[0].index_id, summary=structs[0].summary))
        moved = StorageContext.from_defaults(docstore=storage.docstore, index_store=index_store, vector_store=table)
        persist_storage(
            moved,
            persist_dir,
            index_id=structs[0].index_id,
            embed_model=stamp.get("embed_model"),
            files={name: _copy(persist_dir / name) for name in _DERIVED_FILES if (persist_dir / name).is_file()},
            settings=stamp.get("settings"),
        )
    return len(ids)


def _copy(source: Path) -> FileWriter:
    def write(target: Path) -> Any:
        return shutil.copy2(source, target)

    return write
