"""The pack's LanceDB vector store: an index folder's vectors, text and nodes in one Lance table, which opens in
constant time (it is memory-mapped, nothing is read up front) and searches with an ANN index at scale.

A subclass of LlamaIndex's ``LanceDBVectorStore`` (``llama-index-vector-stores-lancedb``, the ``lancedb`` extra)
that fixes what that store does not do for the pack (issue 40, ``benchmarks/scale.md``):

- deletes and reads by id quote literals the way Lance's SQL reads them (single quotes, escaped): its own
  ``delete``, ``delete_nodes`` and ``get_nodes`` fail against lancedb >= 0.38;
- rows have one fixed schema (``id``, ``doc_id``, ``vector``, ``text``, ``level``, ``node``: the node's JSON),
  so nodes with different metadata (chunks, summaries with lists of document ids) share a table;
- :meth:`KGPlusLanceDBVectorStore.optimize_for_search`, once the table holds ``ann_min_rows`` rows, merges its
  appends (a fragment per batch) into one fragment, then builds the ANN index (IVF_HNSW_SQ, cosine, about one
  partition per 4,096 rows) and B-tree indexes on the node and document ids; it builds them again once later
  additions fill a partition (LanceDB's own ``optimize`` lost recall doing that);
- a query reads only the columns it returns (not the vectors) and scores by cosine similarity, as LlamaIndex's
  default store does; through the ANN index it re-ranks ``refine_factor`` (default 10) times ``top_k``
  candidates by their exact distance, since the index's own distances are quantized and, for cosine, twice the
  cosine distance (recall@8 0.97 re-ranked, 0.84 not, at 10^4 rows: ``benchmarks/scale.md``); it walks each
  partition's graph keeping ``ef`` (400) candidates, where LanceDB's least, the candidates it re-ranks, found
  0.89 of the exact top 8 of all-MiniLM-L6-v2 vectors at 2 x 10^4 rows (0.99 with 400).

In an index folder the tables live in ``lancedb/``; ``ingest.json`` names the table and the Lance version that
belongs to the index (:func:`store_record`), and a reader opens that version (:func:`open_store`): a write that
has not been switched in is not seen, so the folder stays old-or-new. Each ingest writes a new table
(:func:`new_store`); the switch drops the tables no stamp names (:func:`drop_other_tables`).

Example:

```python
store = new_store("./index")  # a new table in ./index/lancedb
index = build_index(docs, None, vector_store=store)
persist_index(index, "./index")  # builds the ANN index if big enough, stamps the table's version
```
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from llama_index_kgplus.errors import InputDataError, KGPlusSetupError

__all__ = [
    "ANN_MIN_ROWS",
    "STORE_TYPE",
    "TABLE_DIR",
    "drop_other_tables",
    "is_pack_store",
    "new_store",
    "open_store",
    "store_record",
]

STORE_TYPE = "lancedb"
TABLE_DIR = "lancedb"
"""The folder of an index that holds its Lance tables."""
ANN_MIN_ROWS = 5000
"""Below this many rows a flat scan is as fast as the ANN index (about 10 ms at 5,000 384-d rows on 2 cores)."""
_ROWS_PER_PARTITION = 4096
# candidates per hit that a query through the ANN index re-ranks by exact distance: recall@8 0.97 against 0.84
# without, at 10^4 rows (benchmarks/scale.md), for about 2 ms
REFINE_FACTOR = 10
HNSW_EF = 400
"""Candidates a query keeps while it walks a partition's HNSW graph (LanceDB's ``ef``; at least the candidates it
re-ranks): chosen on all-MiniLM-L6-v2 vectors of the shared multi-hop passages (``benchmarks/scale.md``)."""
_INSTALL = "pip install 'llama-index-kgplus[lancedb]'"
#: metadata keys a query filter can use: each is a column of the table
_FILTER_COLUMNS = {"id": "id", "doc_id": "doc_id", "ref_doc_id": "doc_id", "level": "level"}


def _base_class() -> type:
    try:
        from llama_index.vector_stores.lancedb import LanceDBVectorStore
    except ImportError as exc:
        raise KGPlusSetupError(f"The LanceDB vector store needs the 'lancedb' extra: {_INSTALL}.") from exc
    return LanceDBVectorStore  # type: ignore[no-any-return]


def _sql_literal(value: Any) -> str:
    """``value`` as a Lance SQL literal: a string single-quoted with its quotes doubled, a number as is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "'" + str(value).replace("'", "''") + "'"
    return repr(value)


def _in_list(column: str, values: Sequence[Any]) -> str:
    return f"{column} IN ({', '.join(_sql_literal(v) for v in values)})"


def _where(filters: Any) -> str | None:
    """A Lance SQL predicate for LlamaIndex ``MetadataFilters`` over the table's columns (``id``, ``doc_id``,
    ``level``); another key is refused in one line."""
    from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilters

    if filters is None or not filters.filters:
        return None
    operators = {
        FilterOperator.EQ: "=", FilterOperator.NE: "!=", FilterOperator.GT: ">", FilterOperator.GTE: ">=",
        FilterOperator.LT: "<", FilterOperator.LTE: "<=",
    }  # fmt: skip
    parts = []
    for item in filters.filters:
        if isinstance(item, MetadataFilters):
            inner = _where(item)
            if inner:
                parts.append(f"({inner})")
            continue
        column = _FILTER_COLUMNS.get(item.key)
        if column is None:
            raise InputDataError(
                f"The LanceDB vector store filters on {', '.join(sorted(_FILTER_COLUMNS))}, not {item.key!r}."
            )
        if item.operator in operators:
            parts.append(f"{column} {operators[item.operator]} {_sql_literal(item.value)}")
        elif item.operator in (FilterOperator.IN, FilterOperator.NIN):
            values = item.value if isinstance(item.value, list) else [item.value]
            parts.append(("NOT " if item.operator == FilterOperator.NIN else "") + _in_list(column, values))
        else:
            raise InputDataError(f"The LanceDB vector store has no filter operator {item.operator.value!r}.")
    joiner = {FilterCondition.OR: " OR ", FilterCondition.AND: " AND "}.get(filters.condition)
    if joiner is None:
        raise InputDataError(f"The LanceDB vector store has no filter condition {filters.condition!r}.")
    return joiner.join(parts) or None


@contextmanager
def _quiet_base_logger() -> Iterator[None]:
    """LlamaIndex's store logs a warning for a table that its first ``add`` creates: expected here."""
    logger = logging.getLogger("llama_index.vector_stores.lancedb.base")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _make_class() -> type:
    import pyarrow as pa
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.schema import BaseNode, MetadataMode
    from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult
    from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

    base = _base_class()

    class KGPlusLanceDBVectorStore(base):  # type: ignore[misc, valid-type]
        """LlamaIndex's LanceDB store with the pack's fixes: quoted deletes and reads by id, one schema for every
        node, the ANN index built after a bulk ingest, queries that read only what they return.

        Example:

        ```python
        store = KGPlusLanceDBVectorStore(uri="./index/lancedb", table_name="nodes", ann_min_rows=5000)
        store.add(nodes)
        store.optimize_for_search()  # the ANN index, once the table holds ann_min_rows rows
        ```
        """

        ann_min_rows: int = Field(
            default=ANN_MIN_ROWS,
            description="build the ANN index (IVF_HNSW_SQ, cosine) once the table holds this many rows; below, "
            "queries scan the table",
        )
        rows_per_partition: int = Field(
            default=_ROWS_PER_PARTITION, description="rows per IVF partition of the ANN index"
        )
        ef: int = Field(
            default=HNSW_EF,
            gt=0,
            description="candidates a query through the ANN index keeps while it walks each partition's graph "
            "(at least the candidates it re-ranks): higher finds more of the exact nearest rows, more slowly",
        )
        _lance: Any = PrivateAttr(default=None)
        _name: str = PrivateAttr(default="vectors")
        _pinned: bool = PrivateAttr(default=False)
        _stamped: bool = PrivateAttr(default=False)  # opened at an index's version: other processes may read it

        def __init__(self, *, version: int | None = None, **kwargs: Any) -> None:
            kwargs.setdefault("mode", "create")
            kwargs.setdefault("refine_factor", REFINE_FACTOR)
            with _quiet_base_logger():
                super().__init__(**kwargs)
            self._name = str(kwargs.get("table_name") or "vectors")
            self._lance = kwargs.get("table")
            if self._lance is None:
                try:
                    self._lance = self.client.open_table(self._name)
                except ValueError:  # not created yet: the first add creates it
                    self._lance = None
            if version is not None:
                self.table.checkout(version)  # read-only at that version until the first write
                self._pinned = self._stamped = True

        @property
        def table(self) -> Any:
            """The Lance table (refused before the first add created it)."""
            if self._lance is None:
                raise InputDataError(f"The LanceDB table {self._name} holds nothing yet: add nodes first.")
            return self._lance

        @property
        def table_name(self) -> str:
            """The table's name (known before the first add creates it)."""
            return self._name

        def has_table(self) -> bool:
            """Whether the table exists (the first add creates it)."""
            return self._lance is not None

        @classmethod
        def class_name(cls) -> str:
            """The name LlamaIndex serialises this store by."""
            return "KGPlusLanceDBVectorStore"

        # ------------------------------------------------------------------ writes

        def _writable(self) -> Any:
            """The table, made writable: a table opened at an index's version continues from that version (a
            later write that was never switched in is left behind)."""
            table = self.table
            if self._pinned:
                table.restore()
                self._pinned = False
            return table

        def _rows(self, nodes: Sequence[BaseNode]) -> pa.Table:
            vectors = [node.get_embedding() for node in nodes]
            dims = {len(v) for v in vectors}
            if len(dims) != 1:
                raise InputDataError(f"Nodes with embeddings of different sizes ({sorted(dims)}) cannot share a table.")
            dim = dims.pop()
            flat = pa.array([x for v in vectors for x in v], type=pa.float32())
            levels = [node.metadata.get("level") for node in nodes]
            return pa.table(
                {
                    "id": pa.array([n.node_id for n in nodes], pa.string()),
                    self.doc_id_key: pa.array([n.ref_doc_id for n in nodes], pa.string()),
                    self.vector_column_name: pa.FixedSizeListArray.from_arrays(flat, dim),
                    self.text_key: pa.array([n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]),
                    "level": pa.array([lv if isinstance(lv, int) else None for lv in levels], pa.int64()),
                    "node": pa.array(
                        [json.dumps(node_to_metadata_dict(n, remove_text=True, flat_metadata=False)) for n in nodes]
                    ),
                }
            )

        def add(self, nodes: list[BaseNode], **add_kwargs: Any) -> list[str]:
            """Add ``nodes`` (with their embeddings); the first add creates the table."""
            if not nodes:
                return []
            rows = self._rows(nodes)
            if self._lance is None:
                self._lance = self.client.create_table(self._name, rows, mode=self.mode)
            else:
                self._writable().add(rows)
            return [n.node_id for n in nodes]

        async def async_add(self, nodes: list[BaseNode], **kwargs: Any) -> list[str]:
            """:meth:`add`, off the event loop."""
            return await asyncio.to_thread(self.add, nodes, **kwargs)

        def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
            """Delete the nodes of the document ``ref_doc_id``."""
            if self._lance is not None:
                self._writable().delete(f"{self.doc_id_key} = {_sql_literal(ref_doc_id)}")

        async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
            """:meth:`delete`, off the event loop."""
            await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

        def delete_nodes(self, node_ids: list[str] | None = None, filters: Any = None, **delete_kwargs: Any) -> None:
            """Delete nodes by id and/or metadata filters (both: the nodes that match both)."""
            clauses = [c for c in (_in_list("id", node_ids) if node_ids else None, _where(filters)) if c]
            if node_ids == [] or not clauses or self._lance is None:
                return
            self._writable().delete(" AND ".join(f"({c})" for c in clauses))

        async def adelete_nodes(
            self, node_ids: list[str] | None = None, filters: Any = None, **delete_kwargs: Any
        ) -> None:
            """:meth:`delete_nodes`, off the event loop."""
            await asyncio.to_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

        def clear(self) -> None:
            """Delete every node."""
            if self._lance is not None:
                self._writable().delete("true")

        async def aclear(self) -> None:
            """:meth:`clear`, off the event loop."""
            await asyncio.to_thread(self.clear)

        # ------------------------------------------------------------------ reads

        def _node(self, row: dict[str, Any]) -> BaseNode:
            node = metadata_dict_to_node(json.loads(row["node"]), text=row[self.text_key])
            if self.vector_column_name in row:
                node.embedding = [float(x) for x in row[self.vector_column_name]]
            return node

        def get_nodes(self, node_ids: list[str] | None = None, filters: Any = None, **kwargs: Any) -> list[BaseNode]:
            """The stored nodes (with their embeddings) by id and/or metadata filters."""
            if node_ids == [] or self._lance is None:
                return []
            clauses = [c for c in (_in_list("id", node_ids) if node_ids else None, _where(filters)) if c]
            query = self.table.search()
            if clauses:
                query = query.where(" AND ".join(f"({c})" for c in clauses))
            return [self._node(row) for row in query.limit(None).to_arrow().to_pylist()]

        def get_embeddings(self, node_ids: Sequence[str]) -> dict[str, list[float]]:
            """The stored vectors of ``node_ids`` (those it holds), read without the nodes' text and metadata."""
            if not node_ids or self._lance is None:
                return {}
            rows = (
                self.table.search().where(_in_list("id", node_ids)).select(["id", self.vector_column_name])
                .limit(None).to_arrow()
            )  # fmt: skip
            vectors = rows.column(self.vector_column_name).combine_chunks()
            flat = vectors.flatten().to_numpy().reshape(len(rows), vectors.type.list_size)
            return dict(zip(rows.column("id").to_pylist(), flat.astype(float).tolist()))

        async def aget_nodes(
            self, node_ids: list[str] | None = None, filters: Any = None, **kwargs: Any
        ) -> list[BaseNode]:
            """:meth:`get_nodes`, off the event loop."""
            return await asyncio.to_thread(self.get_nodes, node_ids, filters, **kwargs)

        def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
            """The ``similarity_top_k`` nearest nodes by cosine similarity (dense vector queries)."""
            if query.query_embedding is None:
                raise InputDataError("The LanceDB vector store answers vector queries: give a query embedding.")
            if self._lance is None:
                return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
            limit = query.similarity_top_k * (self.overfetch_factor or 1)
            search = (
                self.table.search(query.query_embedding, vector_column_name=self.vector_column_name)
                .distance_type("cosine")
                .select(["id", self.text_key, "node", "_distance"])
                .limit(limit)
            )
            where = _where(query.filters)
            if where:
                search = search.where(where, prefilter=True)
            if self.nprobes:
                search = search.nprobes(self.nprobes)
            if self.refine_factor is not None:
                search = search.refine_factor(self.refine_factor)
            search = search.ef(max(self.ef, limit * (self.refine_factor or 1)))  # LanceDB: at least what it re-ranks
            rows = search.to_arrow().to_pylist()[: query.similarity_top_k]
            return VectorStoreQueryResult(
                nodes=[self._node(row) for row in rows],
                similarities=[1.0 - float(row["_distance"]) for row in rows],
                ids=[row["id"] for row in rows],
            )

        async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
            """:meth:`query`, off the event loop."""
            return await asyncio.to_thread(self.query, query, **kwargs)

        # ------------------------------------------------------------------ search index

        def has_ann_index(self) -> bool:
            """Whether the vector column has an ANN index."""
            return self._lance is not None and any(
                self.vector_column_name in index.columns for index in self.table.list_indices()
            )

        def optimize_for_search(self) -> None:
            """After a bulk ingest or later additions: build the ANN index once the table holds ``ann_min_rows``
            rows, or build it again with the rows added since once they are ``rows_per_partition`` or more; each
            time the table's fragments (one per write) are merged first. LanceDB scans unindexed rows on each
            query: fewer cost about one more probed partition, while building again takes a while (30-50 s at 10^5
            rows), which a sync of a few documents should not pay. With the ANN index come B-tree indexes on
            ``id`` and the document id, so that reads and deletes by id do not scan the table (a read of 60 ids:
            200 ms scanning 1.3 million rows, 20 ms through the index)."""
            if self._lance is None:
                return
            indices = list(self.table.list_indices())
            indexed = {column for index in indices for column in index.columns}
            if self.vector_column_name in indexed:
                vector = [i for i in indices if self.vector_column_name in i.columns]
                # not LanceDB's optimize(), which folds the rows into the index it has: the index it rewrote found
                # fewer of the exact nearest rows (recall@8 1.0 -> 0.91 at 10^5 rows, 0.84 -> 0.44 at 10^6), where
                # an index built again keeps them (benchmarks/scale.md)
                build = any(getattr(i, "num_unindexed_rows", 0) >= self.rows_per_partition for i in vector)
            else:
                build = self.table.count_rows() >= self.ann_min_rows
            if build:
                self._merge_fragments()
                self._build_indexes()
            elif self.vector_column_name in indexed:
                from lancedb.index import BTree

                for column in ("id", self.doc_id_key):
                    if column not in indexed:  # a table indexed before these existed gets them on its next write
                        self._writable().create_index(column, config=BTree())

        def _merge_fragments(self) -> None:
            """Merge the table's fragments into one (a query visits each: 10^5 rows in 100 fragments, top-8 p50 31
            -> 18 ms). The files they leave are removed at once from a table no index names yet (a new ingest's:
            no reader can be on an older version), else after LanceDB's usual 7 days."""
            table = self._writable()
            table.to_lance().optimize.compact_files()
            table.checkout_latest()
            table.cleanup_old_versions(timedelta(days=7) if self._stamped else timedelta(0))

        def _build_indexes(self) -> None:
            """(Re)build the ANN index and the B-tree indexes on the node and document ids."""
            from lancedb.index import BTree, IvfHnswSq

            table = self._writable()
            partitions = max(1, round(table.count_rows() / self.rows_per_partition))
            config = IvfHnswSq(distance_type="cosine", num_partitions=partitions)
            table.create_index(self.vector_column_name, config=config, replace=True)
            for column in ("id", self.doc_id_key):
                table.create_index(column, config=BTree(), replace=True)

    return KGPlusLanceDBVectorStore


_CLASS: type | None = None


def store_class() -> type:
    """``KGPlusLanceDBVectorStore``, defined on first use (its base class comes with the ``lancedb`` extra)."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _make_class()
    return _CLASS


def is_pack_store(vector_store: Any) -> bool:
    """Whether ``vector_store`` is this module's store (checked without importing lancedb)."""
    return _CLASS is not None and isinstance(vector_store, _CLASS)


def installed() -> bool:
    """Whether the ``lancedb`` extra is installed (nothing is imported)."""
    import importlib.util

    modules = ("lancedb", "lance", "llama_index.vector_stores.lancedb")
    return all(importlib.util.find_spec(name) is not None for name in modules)


def new_store(persist_dir: str | Path, **kwargs: Any) -> Any:
    """A store on a new, empty table in ``persist_dir/lancedb`` (the table is created by the first add)."""
    folder = Path(persist_dir) / TABLE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    return store_class()(uri=str(folder), table_name=f"nodes_{uuid.uuid4().hex[:16]}", **kwargs)


def store_record(vector_store: Any, persist_dir: Path) -> dict[str, Any]:
    """What ``ingest.json`` records of the store, after :meth:`optimize_for_search`: its table and version (the
    folder relative to ``persist_dir`` when inside it)."""
    vector_store.optimize_for_search()
    if not vector_store.has_table():
        raise InputDataError("The LanceDB vector store holds no table: add nodes before persisting the index.")
    folder = Path(str(vector_store.uri)).resolve()
    try:
        uri = str(folder.relative_to(persist_dir.resolve()))
    except ValueError:
        uri = str(folder)
    return {"type": STORE_TYPE, "uri": uri, "table": vector_store.table.name, "version": vector_store.table.version}


def open_store(persist_dir: Path, record: dict[str, Any]) -> Any:
    """The store of an index folder, at the version its ``ingest.json`` names (``record``)."""
    import lancedb

    if record.get("type") != STORE_TYPE:
        raise InputDataError(
            f"{persist_dir}: ingest.json names a vector store of type {record.get('type')!r}, which this version "
            "cannot open: upgrade llama-index-kgplus or re-run `kgplus ingest`."
        )
    try:
        folder = persist_dir / str(record["uri"])
        table, version = str(record["table"]), int(record["version"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputDataError(f"{persist_dir}: ingest.json names no readable LanceDB table ({exc}).") from exc
    try:
        connection = lancedb.connect(str(folder))
        opened = connection.open_table(table)
    except (OSError, ValueError, RuntimeError) as exc:
        raise InputDataError(
            f"{persist_dir}: cannot open its LanceDB table {folder / table} ({type(exc).__name__}: {exc}): re-run "
            f"`kgplus ingest DOCS --index {persist_dir} --vector-store lancedb`."
        ) from exc
    return store_class()(uri=str(folder), table_name=table, connection=connection, table=opened, version=version)


def table_path(persist_dir: Path, record: dict[str, Any]) -> Path:
    """The folder of the table that ``record`` (of ``ingest.json``) names."""
    return persist_dir / str(record.get("uri", TABLE_DIR)) / f"{record.get('table')}.lance"


def drop_other_tables(persist_dir: Path, keep: dict[str, Any] | None) -> None:
    """Remove the tables of ``persist_dir/lancedb`` that the stamp's ``keep`` record does not name (all of them when
    it names another kind of store): those of replaced indexes and of ingests that never finished."""
    folder = persist_dir / TABLE_DIR
    if not folder.is_dir():
        return
    kept = table_path(persist_dir, keep).resolve() if keep and keep.get("type") == STORE_TYPE else None
    for path in folder.iterdir():
        if path.name.endswith(".lance") and path.resolve() != kept:
            shutil.rmtree(path, ignore_errors=True)
