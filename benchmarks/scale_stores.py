"""Embedded, on-disk vector stores side by side at 10^4-10^6 passages (issue 40, step 1).

Each candidate is measured in fresh processes, one phase per process:

* ``build``: ingest N vectors (384-d float32) with their ~100-word passage and an integer ``grp`` field, in batches
  of ``--batch`` through the store's own API, then whatever the store needs to be queryable (index build, flush,
  save); throughput = N / (ingest + index build + save). Peak RSS of that process.
* the store's files are then evicted from the page cache (fsync + ``posix_fadvise(DONTNEED)`` on its files only, so
  other users of the machine keep their cache), and
* ``query`` (a fresh process): import time, open time (connect/load) and the first query (cold), then
  ``--queries`` single-threaded top-8 queries (p50/p95) and recall@8 against exact inner-product search computed
  with numpy; a filtered query (``grp == 3``): whether it works, its p50 and recall@8 against the exact filtered
  top-8; deleting 1% of the rows by id (time, and whether a deleted row can still be found by its own vector).
  Peak RSS of that process.
* ``llama`` (separate): throughput of the LlamaIndex integration's ``VectorStore.add`` with ready ``TextNode``
  objects carrying embeddings (node construction is not timed).

Libraries without storage of their own (faiss, usearch, hnswlib) keep the passages in a SQLite side table, as the
pack would have to; their figures include it.

Vectors are synthetic stand-ins, not model outputs (the real model at 100-155 embeddings/s would take hours at
10^6): unit vectors drawn from a two-level Gaussian mixture (64 topics, 4,096 clusters) with a decaying spectrum in
a random rotation and a shared mean direction, so that, as with sentence embeddings, the space is anisotropic and
clustered, neighbours are near but not trivial to separate, and ANN recall is meaningful. Queries come from the same
distribution and are not in the corpus. Passages are 100-word windows over the shared SQuAD and 2Wiki texts.

Usage (a venv with the candidates installed; data is cached under ``--cache``)::

    python benchmarks/scale_stores.py run --store lancedb --n 100000
    python benchmarks/scale_stores.py llama --store lancedb --n 10000
    python benchmarks/scale_stores.py table           # markdown table of all recorded runs

Stores: lancedb, chroma, qdrant, milvus, duckdb, duckdb-vss (needs duckdb==1.5.5 and duckdb-extension-vss==1.5.5,
which conflict with llama-index-vector-stores-duckdb's duckdb<1.4: run it from another venv), sqlite-vec, faiss,
usearch, hnswlib.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np

DIM = 384
TOPK = 8
SEED = 40
BENCH_DATA = Path(os.environ.get("KGPLUS_BENCH_DATA", "/work/shared/bench-data"))


# ----------------------------------------------------------------------------------------------------- data


def _generator_params():
    rng = np.random.default_rng(SEED)
    rot, _ = np.linalg.qr(rng.standard_normal((DIM, DIM)))
    spectrum = (np.arange(1, DIM + 1) ** -0.6).astype(np.float32)
    spectrum /= np.sqrt((spectrum**2).sum())
    mean = rng.standard_normal(DIM).astype(np.float32)
    mean /= np.linalg.norm(mean)
    topics = (rng.standard_normal((64, DIM)) * spectrum) @ rot
    topic_of = rng.integers(0, 64, 4096)
    clusters = topics[topic_of] + 0.6 * (rng.standard_normal((4096, DIM)) * spectrum) @ rot
    return rot.astype(np.float32), spectrum, mean, clusters.astype(np.float32)


def _draw(rng, n, params):
    rot, spectrum, mean, clusters = params
    c = clusters[rng.integers(0, len(clusters), n)]
    x = 0.5 * mean + c + 0.55 * ((rng.standard_normal((n, DIM)).astype(np.float32) * spectrum) @ rot)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def vectors_file(cache: Path, n: int) -> Path:
    """Raw float32 file of at least n vectors; each block of 100k has its own seed, so prefixes agree."""
    path = cache / "vectors.f32"
    have = path.stat().st_size // (4 * DIM) if path.exists() else 0
    if have >= n:
        return path
    params = _generator_params()
    block = 100_000
    with open(path, "ab") as fh:
        for start in range(have - have % block, n, block):
            if start < have:  # partial block written before: rewrite it whole
                fh.truncate(start * 4 * DIM)
            fh.write(_draw(np.random.default_rng((SEED, start)), block, params).tobytes())
    return path


def read_vectors(path: Path, start: int, count: int) -> np.ndarray:
    return np.fromfile(path, dtype=np.float32, count=count * DIM, offset=start * 4 * DIM).reshape(count, DIM)


def queries(cache: Path, nq: int) -> np.ndarray:
    path = cache / f"queries-{nq}.npy"
    if not path.exists():
        np.save(path, _draw(np.random.default_rng((SEED, 999_999_999)), nq, _generator_params()))
    return np.load(path)


def group_of(ids: np.ndarray) -> np.ndarray:
    return (ids * 2654435761 % 16).astype(np.int64)


def ground_truth(cache: Path, n: int, nq: int) -> dict:
    """Exact top-8 by inner product (the vectors are unit: cosine), plain and with grp == 3."""
    path = cache / f"gt-{n}-{nq}.json"
    if path.exists():
        return json.loads(path.read_text())
    q = queries(cache, nq)
    vf = vectors_file(cache, n)
    best = np.full((nq, TOPK), -np.inf, np.float32)
    best_ids = np.zeros((nq, TOPK), np.int64)
    fbest = np.full((nq, TOPK), -np.inf, np.float32)
    fbest_ids = np.zeros((nq, TOPK), np.int64)
    for start in range(0, n, 100_000):
        cnt = min(100_000, n - start)
        s = q @ read_vectors(vf, start, cnt).T
        ids = np.arange(start, start + cnt)
        for sc, bi, bs, mask in ((s, best_ids, best, None), (s, fbest_ids, fbest, group_of(ids) == 3)):
            sub = sc if mask is None else np.where(mask[None, :], sc, -np.inf)
            top = np.argpartition(-sub, TOPK, axis=1)[:, :TOPK]
            cand = np.concatenate([bs, np.take_along_axis(sub, top, 1)], 1)
            cand_ids = np.concatenate([bi, ids[top]], 1)
            order = np.argsort(-cand, 1)[:, :TOPK]
            bs[:] = np.take_along_axis(cand, order, 1)
            bi[:] = np.take_along_axis(cand_ids, order, 1)
    gt = {"plain": best_ids.tolist(), "grp3": fbest_ids.tolist()}
    path.write_text(json.dumps(gt))
    return gt


_WORDS: list[str] = []


def passages(start: int, count: int) -> list[str]:
    """~100-word windows over the shared SQuAD articles and 2Wiki passages, each prefixed with its id."""
    if not _WORDS:
        for name in ("longdocs-squad/docs.jsonl", "multihop-2wiki/corpus.jsonl"):
            p = BENCH_DATA / name
            if p.exists():
                for line in p.read_text().splitlines():
                    _WORDS.extend(json.loads(line).get("text", "").split())
        if not _WORDS:
            _WORDS.extend(("lorem ipsum dolor sit amet consectetur adipiscing elit " * 20).split())
    n = len(_WORDS)
    out = []
    for i in range(start, start + count):
        o = (i * 7919) % n
        w = _WORDS[o : o + 100] if o + 100 <= n else _WORDS[o:] + _WORDS[: 100 - (n - o)]
        out.append(f"[p{i}] " + " ".join(w))
    return out


# --------------------------------------------------------------------------------------------------- stores


class SideText:
    """SQLite table of passages and metadata for the libraries that store vectors only."""

    def __init__(self, path: Path):
        self.db = sqlite3.connect(path / "passages.sqlite")
        self.db.execute("create table if not exists p (id integer primary key, text text, grp integer)")
        self.db.execute("create index if not exists p_grp on p(grp)")

    def add(self, ids, texts, grps):
        self.db.executemany("insert into p values (?,?,?)", zip(ids.tolist(), texts, grps.tolist()))

    def ids_in_group(self, g):
        return np.array([r[0] for r in self.db.execute("select id from p where grp=?", (g,))], np.int64)

    def delete(self, ids):
        self.db.executemany("delete from p where id=?", [(int(i),) for i in ids])
        self.db.commit()

    def close(self):
        self.db.commit()
        self.db.close()


class Store:
    name = ""
    params = ""

    def __init__(self, path: Path):
        self.path = path

    # build phase
    def create(self, n: int): ...
    def add(self, ids: np.ndarray, vecs: np.ndarray, texts: list[str], grps: np.ndarray): ...
    def finish(self): ...

    # query phase
    def open(self): ...
    def query(self, q: np.ndarray, k: int) -> list[int]: ...
    def query_grp(self, q: np.ndarray, k: int, g: int) -> list[int]:
        raise NotImplementedError

    def delete(self, ids: np.ndarray): ...

    # LlamaIndex integration: return a VectorStore for an empty path
    def llama_store(self, n: int):
        raise NotImplementedError


class LanceStore(Store):
    name = "lancedb"
    params = (
        "IVF_HNSW_SQ cosine (N/4096 partitions, m=20, ef_construction=300), nprobes 20, ef 64;"
        " compacted and old versions pruned after ingest; scalar indexes on id and grp"
    )

    def create(self, n):
        import lancedb
        import pyarrow as pa

        self.pa = pa
        self.db = lancedb.connect(str(self.path))
        self.schema = pa.schema(
            [
                ("id", pa.int64()),
                ("vector", pa.list_(pa.float32(), DIM)),
                ("text", pa.string()),
                ("grp", pa.int64()),
            ]
        )
        self.tbl = self.db.create_table("p", schema=self.schema)
        self.n = n

    def add(self, ids, vecs, texts, grps):
        pa = self.pa
        vec = pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM)
        self.tbl.add(pa.Table.from_arrays([pa.array(ids), vec, pa.array(texts), pa.array(grps)], schema=self.schema))

    def finish(self):
        from datetime import timedelta

        # compact the per-batch fragments and drop the superseded versions (kept 7 days by default)
        self.tbl.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
        parts = max(1, self.n // 4096)
        self.tbl.create_index(metric="cosine", index_type="IVF_HNSW_SQ", num_partitions=parts)
        self.tbl.create_scalar_index("id")
        self.tbl.create_scalar_index("grp", index_type="BITMAP")

    def open(self):
        import lancedb

        self.tbl = lancedb.connect(str(self.path)).open_table("p")

    def _search(self, q, k):
        return self.tbl.search(q).limit(k).nprobes(20).ef(64).select(["id"])

    def query(self, q, k):
        return self._search(q, k).to_arrow()["id"].to_pylist()

    def query_grp(self, q, k, g):
        return self._search(q, k).where(f"grp = {g}", prefilter=True).to_arrow()["id"].to_pylist()

    def delete(self, ids):
        self.tbl.delete("id IN (" + ",".join(map(str, ids.tolist())) + ")")

    def llama_store(self, n):
        from llama_index.vector_stores.lancedb import LanceDBVectorStore

        return LanceDBVectorStore(uri=str(self.path), table_name="p", mode="overwrite")


class ChromaStore(Store):
    name = "chroma"
    params = "HNSW cosine (defaults M=16, ef_construction=100, ef_search=100)"

    def create(self, n):
        import chromadb

        self.client = chromadb.PersistentClient(path=str(self.path))
        self.col = self.client.create_collection("passages", metadata={"hnsw:space": "cosine"})

    def add(self, ids, vecs, texts, grps):
        step = self.client.get_max_batch_size()
        for s in range(0, len(ids), step):
            sl = slice(s, s + step)
            self.col.add(
                ids=[str(i) for i in ids[sl]],
                embeddings=vecs[sl],
                documents=texts[sl],
                metadatas=[{"grp": int(g)} for g in grps[sl]],
            )

    def open(self):
        import chromadb

        self.col = chromadb.PersistentClient(path=str(self.path)).get_collection("passages")

    def query(self, q, k, where=None):
        r = self.col.query(query_embeddings=[q], n_results=k, include=[], where=where)
        return [int(i) for i in r["ids"][0]]

    def query_grp(self, q, k, g):
        return self.query(q, k, where={"grp": g})

    def delete(self, ids):
        self.col.delete(ids=[str(i) for i in ids])

    def llama_store(self, n):
        import chromadb
        from llama_index.vector_stores.chroma import ChromaVectorStore

        col = chromadb.PersistentClient(path=str(self.path)).create_collection(
            "passages", metadata={"hnsw:space": "cosine"}
        )
        return ChromaVectorStore(chroma_collection=col)


class QdrantStore(Store):
    name = "qdrant"
    params = "local mode (path=...), cosine; exact numpy search in-process (local mode has no HNSW)"

    def create(self, n):
        from qdrant_client import QdrantClient, models

        self.m = models
        self.client = QdrantClient(path=str(self.path))
        self.client.create_collection(
            "p", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
        )

    def add(self, ids, vecs, texts, grps):
        m = self.m
        payloads = [{"text": t, "grp": int(g)} for t, g in zip(texts, grps)]
        self.client.upsert("p", points=m.Batch(ids=ids.tolist(), vectors=vecs.tolist(), payloads=payloads))

    def finish(self):
        self.client.close()

    def open(self):
        from qdrant_client import QdrantClient, models

        self.m = models
        self.client = QdrantClient(path=str(self.path))

    def query(self, q, k, flt=None):
        r = self.client.query_points("p", query=q, limit=k, query_filter=flt, with_payload=False)
        return [p.id for p in r.points]

    def query_grp(self, q, k, g):
        m = self.m
        return self.query(q, k, m.Filter(must=[m.FieldCondition(key="grp", match=m.MatchValue(value=g))]))

    def delete(self, ids):
        self.client.delete("p", points_selector=self.m.PointIdsList(points=ids.tolist()))

    def llama_store(self, n):
        from llama_index.vector_stores.qdrant import QdrantVectorStore
        from qdrant_client import QdrantClient

        return QdrantVectorStore("p", client=QdrantClient(path=str(self.path)), batch_size=5000)


class MilvusStore(Store):
    name = "milvus"
    params = "Milvus Lite file (pymilvus MilvusClient), HNSW M=16 efConstruction=200, ef 64, COSINE"

    def _client(self):
        from pymilvus import MilvusClient

        return MilvusClient(str(self.path / "milvus.db"))

    def create(self, n):
        from pymilvus import DataType

        self.path.mkdir(parents=True, exist_ok=True)
        self.client = c = self._client()
        schema = c.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
        schema.add_field("text", DataType.VARCHAR, max_length=4096)
        schema.add_field("grp", DataType.INT64)
        ip = c.prepare_index_params()
        ip.add_index("vector", index_type="HNSW", metric_type="COSINE", params={"M": 16, "efConstruction": 200})
        c.create_collection("p", schema=schema, index_params=ip)

    def add(self, ids, vecs, texts, grps):
        rows = [{"id": int(i), "vector": v, "text": t, "grp": int(g)} for i, v, t, g in zip(ids, vecs, texts, grps)]
        self.client.insert("p", rows)

    def finish(self):
        self.client.flush("p")
        self.client.load_collection("p")
        self.client.close()

    def open(self):
        self.client = self._client()
        self.client.load_collection("p")

    def query(self, q, k, flt=""):
        r = self.client.search("p", data=[q.tolist()], limit=k, filter=flt, search_params={"params": {"ef": 64}})
        return [h["id"] for h in r[0]]

    def query_grp(self, q, k, g):
        return self.query(q, k, f"grp == {g}")

    def delete(self, ids):
        self.client.delete("p", ids=ids.tolist())
        self.client.flush("p")

    def llama_store(self, n):
        from llama_index.vector_stores.milvus import MilvusVectorStore

        self.path.mkdir(parents=True, exist_ok=True)
        return MilvusVectorStore(
            uri=str(self.path / "milvus.db"), dim=DIM, overwrite=True, similarity_metric="COSINE", batch_size=5000
        )


class DuckStore(Store):
    name = "duckdb"
    params = "FLOAT[384] column, exact scan with array_cosine_distance (no index)"
    vss = False

    def create(self, n):
        import duckdb

        self.path.mkdir(parents=True, exist_ok=True)
        self.con = duckdb.connect(str(self.path / "p.duckdb"))
        self._load_ext()
        self.con.execute(f"create table p (id bigint primary key, vec float[{DIM}], text varchar, grp bigint)")

    def _load_ext(self):
        if self.vss:
            import duckdb
            import duckdb_extension_vss  # ships the extension binary for its duckdb version: load it by path

            ext = Path(duckdb_extension_vss.__file__).parent / "extensions" / f"v{duckdb.__version__}"
            self.con.execute(f"load '{ext / 'vss.duckdb_extension'}'")
            self.con.execute("set hnsw_enable_experimental_persistence = true")

    def add(self, ids, vecs, texts, grps):
        import pyarrow as pa

        vec = pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM)
        batch = pa.table({"id": ids, "vec": vec, "text": texts, "grp": grps})  # noqa: F841
        self.con.execute("insert into p select * from batch")

    def finish(self):
        if self.vss:
            self.con.execute("create index p_hnsw on p using hnsw (vec) with (metric = 'cosine')")
        self.con.execute("checkpoint")
        self.con.close()

    def open(self):
        import duckdb

        self.con = duckdb.connect(str(self.path / "p.duckdb"))
        self._load_ext()

    def query(self, q, k, where=""):
        sql = f"select id from p {where} order by array_cosine_distance(vec, ?::float[{DIM}]) limit {k}"
        return [r[0] for r in self.con.execute(sql, [q.tolist()]).fetchall()]

    def query_grp(self, q, k, g):
        return self.query(q, k, f"where grp = {int(g)}")

    def delete(self, ids):
        self.con.execute("delete from p where id in (select unnest(?))", [ids.tolist()])
        self.con.execute("checkpoint")

    def llama_store(self, n):
        from llama_index.vector_stores.duckdb import DuckDBVectorStore

        self.path.mkdir(parents=True, exist_ok=True)
        return DuckDBVectorStore(database_name="p.duckdb", persist_dir=str(self.path), embed_dim=DIM)


class DuckVssStore(DuckStore):
    name = "duckdb-vss"
    params = "duckdb 1.5.5 + duckdb-extension-vss 1.5.5, HNSW (experimental persistence), cosine, defaults"
    vss = True


class SqliteVecStore(Store):
    name = "sqlite-vec"
    params = "vec0 virtual table, float[384] cosine, grp metadata column, +text auxiliary column; exact scan"

    def _con(self):
        import sqlite_vec

        try:  # Python builds without loadable-extension support (pyenv's, macOS') need pysqlite3-binary
            import pysqlite3 as sq
        except ImportError:
            sq = sqlite3
        con = sq.connect(str(self.path / "p.sqlite"))
        con.enable_load_extension(True)
        sqlite_vec.load(con)
        con.enable_load_extension(False)
        return con

    def create(self, n):
        self.path.mkdir(parents=True, exist_ok=True)
        self.con = self._con()
        self.con.execute(
            f"create virtual table p using vec0(id integer primary key, embedding float[{DIM}] distance_metric=cosine,"
            " grp integer, +text text)"
        )

    def add(self, ids, vecs, texts, grps):
        self.con.executemany(
            "insert into p(id, embedding, grp, text) values (?,?,?,?)",
            zip(ids.tolist(), (v.tobytes() for v in vecs), grps.tolist(), texts),
        )
        self.con.commit()

    def finish(self):
        self.con.close()

    def open(self):
        self.con = self._con()

    def query(self, q, k, extra=""):
        sql = f"select id from p where embedding match ? and k = {k} {extra} order by distance"
        return [r[0] for r in self.con.execute(sql, (q.tobytes(),))]

    def query_grp(self, q, k, g):
        return self.query(q, k, f"and grp = {int(g)}")

    def delete(self, ids):
        self.con.executemany("delete from p where id = ?", [(int(i),) for i in ids])
        self.con.commit()


class FaissStore(Store):
    name = "faiss"
    params = "IndexIDMap2(IndexHNSWFlat M=32, efConstruction 40 default), inner product, efSearch 64; SQLite text"

    def create(self, n):
        import faiss

        self.faiss = faiss
        self.path.mkdir(parents=True, exist_ok=True)
        self.index = faiss.IndexIDMap2(faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT))
        self.side = SideText(self.path)

    def add(self, ids, vecs, texts, grps):
        self.index.add_with_ids(vecs, ids)
        self.side.add(ids, texts, grps)

    def finish(self):
        self.faiss.write_index(self.index, str(self.path / "index.faiss"))
        self.side.close()

    def open(self):
        import faiss

        self.faiss = faiss
        self.index = faiss.read_index(str(self.path / "index.faiss"))
        self.side = SideText(self.path)

    def query(self, q, k, sel=None):
        faiss = self.faiss
        params = faiss.SearchParametersHNSW(efSearch=64)
        if sel is not None:
            params = faiss.SearchParametersHNSW(efSearch=64, sel=sel)
        _, idx = self.index.search(q[None, :], k, params=params)
        return [int(i) for i in idx[0] if i >= 0]

    def query_grp(self, q, k, g):
        # the group's ids come from the side table; faiss filters by id selector during the HNSW walk
        sel = self.faiss.IDSelectorBatch(self.side.ids_in_group(g))
        return self.query(q, k, sel)

    def delete(self, ids):
        self.index.remove_ids(ids)  # raises for HNSW: removal is not implemented there
        self.side.delete(ids)

    def llama_store(self, n):
        import faiss
        from llama_index.vector_stores.faiss import FaissVectorStore

        return FaissVectorStore(faiss_index=faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT))


class UsearchStore(Store):
    name = "usearch"
    params = "HNSW cos f32 (defaults connectivity 16, expansion_add 128, expansion_search 64), opened as a view (mmap); SQLite text"

    def create(self, n):
        from usearch.index import Index

        self.path.mkdir(parents=True, exist_ok=True)
        self.index = Index(ndim=DIM, metric="cos", dtype="f32")
        self.side = SideText(self.path)

    def add(self, ids, vecs, texts, grps):
        self.index.add(ids, vecs, threads=2)
        self.side.add(ids, texts, grps)

    def finish(self):
        self.index.save(str(self.path / "index.usearch"))
        self.side.close()

    def open(self):
        from usearch.index import Index

        self.index = Index.restore(str(self.path / "index.usearch"), view=True)
        self.side = SideText(self.path)

    def query(self, q, k):
        return [int(x) for x in self.index.search(q, k, threads=1).keys]

    def delete(self, ids):
        # a view (mmap) is read-only: a delete loads the index into memory, removes, and saves it again
        from usearch.index import Index

        self.index = Index.restore(str(self.path / "index.usearch"), view=False)
        self.index.remove(ids)
        self.index.save(str(self.path / "index.usearch"))
        self.side.delete(ids)


class HnswlibStore(Store):
    name = "hnswlib"
    params = "HNSW cosine M=16 ef_construction=200, ef 64; whole index loaded into memory; SQLite text"

    def create(self, n):
        import hnswlib

        self.path.mkdir(parents=True, exist_ok=True)
        self.index = hnswlib.Index(space="cosine", dim=DIM)
        self.index.init_index(max_elements=n, ef_construction=200, M=16, allow_replace_deleted=True)
        self.side = SideText(self.path)

    def add(self, ids, vecs, texts, grps):
        self.index.add_items(vecs, ids, num_threads=2)
        self.side.add(ids, texts, grps)

    def finish(self):
        self.index.save_index(str(self.path / "index.hnsw"))
        self.side.close()

    def open(self):
        import hnswlib

        self.index = hnswlib.Index(space="cosine", dim=DIM)
        self.index.load_index(str(self.path / "index.hnsw"), allow_replace_deleted=True)
        self.index.set_ef(64)
        self.index.set_num_threads(1)
        self.side = SideText(self.path)

    def query(self, q, k, flt=None):
        labels, _ = self.index.knn_query(q, k=k, filter=flt)
        return [int(x) for x in labels[0]]

    def query_grp(self, q, k, g):
        allowed = set(self.side.ids_in_group(g).tolist())
        return self.query(q, k, lambda i: i in allowed)  # a Python callback per visited node

    def delete(self, ids):
        for i in ids:
            self.index.mark_deleted(int(i))
        self.index.save_index(str(self.path / "index.hnsw"))
        self.side.delete(ids)


STORES = {
    c.name: c
    for c in (
        LanceStore,
        ChromaStore,
        QdrantStore,
        MilvusStore,
        DuckStore,
        DuckVssStore,
        SqliteVecStore,
        FaissStore,
        UsearchStore,
        HnswlibStore,
    )
}
MODULES = {
    "lancedb": ["lancedb", "pylance", "llama-index-vector-stores-lancedb"],
    "chroma": ["chromadb", "llama-index-vector-stores-chroma"],
    "qdrant": ["qdrant-client", "llama-index-vector-stores-qdrant"],
    "milvus": ["pymilvus", "milvus-lite", "llama-index-vector-stores-milvus"],
    "duckdb": ["duckdb", "llama-index-vector-stores-duckdb"],
    "duckdb-vss": ["duckdb", "duckdb-extension-vss"],
    "sqlite-vec": ["sqlite-vec", "pysqlite3-binary"],
    "faiss": ["faiss-cpu", "llama-index-vector-stores-faiss"],
    "usearch": ["usearch"],
    "hnswlib": ["hnswlib"],
}
IMPORTS = {
    "lancedb": "lancedb",
    "chroma": "chromadb",
    "qdrant": "qdrant_client",
    "milvus": "pymilvus",
    "duckdb": "duckdb",
    "duckdb-vss": "duckdb",
    "sqlite-vec": "sqlite_vec",
    "faiss": "faiss",
    "usearch": "usearch.index",
    "hnswlib": "hnswlib",
}


# --------------------------------------------------------------------------------------------------- phases


def peak_rss_mb() -> float:
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(self_kb / 1024, 1)


def child_rss_mb() -> float:
    """Current RSS of helper processes a store spawned (Milvus Lite's server), if any."""
    try:
        import psutil
    except ImportError:
        return 0.0
    kids = psutil.Process().children(recursive=True)
    return round(sum(k.memory_info().rss for k in kids) / 2**20, 1)


def versions(store: str) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for m in MODULES[store] + ["llama-index-core", "numpy"]:
        try:
            out[m] = version(m)
        except PackageNotFoundError:
            pass
    return out


def phase_build(a) -> dict:
    cache = Path(a.cache)
    vf = vectors_file(cache, a.n)
    st = STORES[a.store](Path(a.path))
    t0 = time.perf_counter()
    st.create(a.n)
    t_add = 0.0
    for s in range(0, a.n, a.batch):
        cnt = min(a.batch, a.n - s)
        ids = np.arange(s, s + cnt, dtype=np.int64)
        vecs, texts, grps = read_vectors(vf, s, cnt), passages(s, cnt), group_of(ids)
        t = time.perf_counter()
        st.add(ids, vecs, texts, grps)
        t_add += time.perf_counter() - t
    t = time.perf_counter()
    st.finish()
    t_finish = time.perf_counter() - t
    total = time.perf_counter() - t0  # includes reading vectors and making passages (small)
    return {
        "add_s": round(t_add, 2),
        "finish_s": round(t_finish, 2),
        "build_total_s": round(total, 2),
        "ingest_vps": round(a.n / (t_add + t_finish), 1),
        "build_rss_mb": peak_rss_mb(),
        "build_child_rss_mb": child_rss_mb(),
    }


def phase_query(a) -> dict:
    t0 = time.perf_counter()
    __import__(IMPORTS[a.store])
    t_import = time.perf_counter() - t0
    cache = Path(a.cache)
    q = queries(cache, a.queries)
    gt = ground_truth(cache, a.n, a.queries)
    st = STORES[a.store](Path(a.path))
    out: dict = {"import_s": round(t_import, 3)}
    t = time.perf_counter()
    st.open()
    out["open_s"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    first = st.query(q[0], TOPK)
    out["first_query_s"] = round(time.perf_counter() - t, 3)
    assert len(first) == TOPK, first
    lat, hits = [], 0
    for i in range(len(q)):
        t = time.perf_counter()
        got = st.query(q[i], TOPK)
        lat.append(time.perf_counter() - t)
        hits += len(set(got) & set(gt["plain"][i]))
    lat_ms = np.array(lat) * 1000
    out.update(
        p50_ms=round(float(np.percentile(lat_ms, 50)), 2),
        p95_ms=round(float(np.percentile(lat_ms, 95)), 2),
        recall8=round(hits / (TOPK * len(q)), 4),
    )
    # filtered search (grp == 3, 1/16 of the rows)
    try:
        lat, hits, wrong, nf = [], 0, 0, min(100, len(q))
        for i in range(nf):
            t = time.perf_counter()
            got = st.query_grp(q[i], TOPK, 3)
            lat.append(time.perf_counter() - t)
            hits += len(set(got) & set(gt["grp3"][i]))
            wrong += int((group_of(np.array(got, dtype=np.int64)) != 3).sum())
        out.update(
            filter="yes" if wrong == 0 else f"wrong rows: {wrong}",
            filter_p50_ms=round(float(np.percentile(np.array(lat) * 1000, 50)), 2),
            filter_recall8=round(hits / (TOPK * nf), 4),
        )
    except NotImplementedError:
        out["filter"] = "no API"
    except Exception as e:  # noqa: BLE001
        out["filter"] = f"fails: {type(e).__name__}: {str(e)[:120]}"
    # delete 1% of the rows by id, then look the deleted rows up by their own vectors
    dele = np.arange(7, a.n, 100, dtype=np.int64)
    try:
        t = time.perf_counter()
        st.delete(dele)
        out["delete_s"] = round(time.perf_counter() - t, 3)
        vf = vectors_file(cache, a.n)
        found = sum(int(int(i) in st.query(read_vectors(vf, int(i), 1)[0], TOPK)) for i in dele[:20])
        out["delete"] = "yes" if found == 0 else f"{found}/20 deleted rows still returned"
    except Exception as e:  # noqa: BLE001
        out["delete"] = f"fails: {type(e).__name__}: {str(e)[:300]}"
    out["query_rss_mb"] = peak_rss_mb()
    out["query_child_rss_mb"] = child_rss_mb()
    return out


def phase_llama(a) -> dict:
    from llama_index.core.schema import TextNode

    cache = Path(a.cache)
    vf = vectors_file(cache, a.n)
    st = STORES[a.store](Path(a.path))
    store = st.llama_store(a.n)
    t_add = 0.0
    for s in range(0, a.n, a.batch):
        cnt = min(a.batch, a.n - s)
        ids = np.arange(s, s + cnt, dtype=np.int64)
        vecs, texts, grps = read_vectors(vf, s, cnt), passages(s, cnt), group_of(ids)
        nodes = [
            TextNode(id_=str(uuid.UUID(int=i)), text=t, embedding=v.tolist(), metadata={"grp": int(g)})
            for i, t, v, g in zip(ids.tolist(), texts, vecs, grps)
        ]
        t = time.perf_counter()
        store.add(nodes)
        t_add += time.perf_counter() - t
    t = time.perf_counter()
    if a.store == "faiss":
        store.persist(str(Path(a.path) / "faiss.json"))
    if a.store == "lancedb":  # LanceDBVectorStore.add builds no ANN index: the caller does, once
        store.create_index(metric="cosine", index_type="IVF_HNSW_SQ", num_partitions=max(1, a.n // 4096))
    t_add += time.perf_counter() - t
    out = {"llama_add_vps": round(a.n / t_add, 1)}
    # queries through VectorStore.query (what a retriever calls), top-8, with the node objects it returns
    from llama_index.core.vector_stores.types import VectorStoreQuery

    q, gt = queries(cache, a.queries), ground_truth(cache, a.n, a.queries)
    lat, hits = [], 0
    try:
        for i in range(len(q)):
            t = time.perf_counter()
            r = store.query(VectorStoreQuery(query_embedding=q[i].tolist(), similarity_top_k=TOPK))
            lat.append(time.perf_counter() - t)
            # FaissVectorStore returns row positions (0, 1, ...: our ids here), the others the node ids
            got = {int(x) for x in r.ids} if a.store == "faiss" else {uuid.UUID(x).int for x in r.ids}
            hits += len(got & set(gt["plain"][i]))
        out.update(
            llama_p50_ms=round(float(np.percentile(np.array(lat) * 1000, 50)), 2),
            llama_p95_ms=round(float(np.percentile(np.array(lat) * 1000, 95)), 2),
            llama_recall8=round(hits / (TOPK * len(q)), 4),
        )
    except Exception as e:  # noqa: BLE001
        out["llama_query"] = f"fails: {type(e).__name__}: {str(e)[:120]}"
    dele = [str(uuid.UUID(int=int(i))) for i in range(7, a.n, 100)]
    try:
        t = time.perf_counter()
        store.delete_nodes(dele)
        out["llama_delete_s"] = round(time.perf_counter() - t, 3)
    except Exception as e:  # noqa: BLE001
        out["llama_delete"] = f"fails: {type(e).__name__}: {str(e)[:120]}"
    out["llama_rss_mb"] = peak_rss_mb()
    return out


def evict(path: Path) -> None:
    """Drop the store's files (only those) from the page cache so the open is read from disk."""
    for p in path.rglob("*"):
        if p.is_file():
            try:
                fd = os.open(p, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
            finally:
                os.close(fd)


def du_mb(path: Path) -> float:
    return round(sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file()) / 2**20, 1)


def child(a, phase: str, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "_" + phase, "--store", a.store, "--n", str(a.n), "--path", a.path]
    cmd += ["--cache", a.cache, "--batch", str(a.batch), "--queries", str(a.queries)]
    t = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {f"{phase}_error": f"timeout after {timeout:.0f} s"}
    wall = round(time.perf_counter() - t, 2)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        return {f"{phase}_error": f"exit {r.returncode}: " + " | ".join(tail)[:400]}
    out = json.loads(lines[-1])
    out[f"{phase}_wall_s"] = wall
    return out


def record(cache: Path, row: dict) -> None:
    with open(cache / "results.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")
    print(json.dumps(row, indent=1))


def cmd_run(a) -> None:
    cache = Path(a.cache)
    cache.mkdir(parents=True, exist_ok=True)
    vectors_file(cache, a.n)
    ground_truth(cache, a.n, a.queries)
    path = Path(a.work) / f"{a.store}-{a.n}"
    shutil.rmtree(path, ignore_errors=True)
    a.path = str(path)
    row = {"store": a.store, "n": a.n, "batch": a.batch, "queries": a.queries, "params": STORES[a.store].params}
    row["versions"] = versions(a.store)
    row["python"] = sys.version.split()[0]
    row.update(child(a, "build", a.timeout))
    if "build_error" not in row:
        row["disk_mb"] = du_mb(path)
        evict(path)
        row.update(child(a, "query", a.timeout))
    record(cache, row)
    if not a.keep:
        shutil.rmtree(path, ignore_errors=True)


def cmd_llama(a) -> None:
    cache = Path(a.cache)
    cache.mkdir(parents=True, exist_ok=True)
    vectors_file(cache, a.n)
    path = Path(a.work) / f"{a.store}-{a.n}-llama"
    shutil.rmtree(path, ignore_errors=True)
    a.path = str(path)
    row = {"store": a.store, "n": a.n, "batch": a.batch, "phase": "llama", "versions": versions(a.store)}
    row.update(child(a, "llama", a.timeout))
    row["llama_disk_mb"] = du_mb(path) if path.exists() else None
    record(cache, row)
    shutil.rmtree(path, ignore_errors=True)


def _brief(msg: str, width: int = 110) -> str:
    """An error message without source paths and links, cut to width."""
    msg = re.sub(r"Error in .*? at \S+:\d+: ", "", msg)
    msg = re.sub(r"For more info, visit \S+ ", "", msg)
    msg = re.sub(r"(\s*\|\s*)+", " | ", msg).replace("exit 1: ", "")
    return msg if len(msg) <= width else msg[: width - 3] + "..."


def cmd_table(a) -> None:
    rows = [json.loads(ln) for ln in open(Path(a.cache) / "results.jsonl") if ln.strip()]
    runs = {(r["store"], r["n"]): r for r in rows if r.get("phase") != "llama"}  # the latest run wins
    llama = {(r["store"], r["n"]): r for r in rows if r.get("phase") == "llama"}
    head = (
        "| store | N | ingest vec/s: writes / with index+save | open + 1st query s (import s) | p50 / p95 ms |"
        " recall@8 | disk MB | peak RSS MB build / query | delete 1% | filter grp=3 (p50 ms, recall@8) |"
    )
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for (store, n), r in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if "build_error" in r:
            print(f"| {store} | {n:,} | fails: {_brief(r['build_error'])} |" + " |" * 7)
            continue
        ing = f"{n / r['add_s']:,.0f} / {r['ingest_vps']:,.0f}"
        if "query_error" in r:
            print(f"| {store} | {n:,} | {ing} | fails: {_brief(r['query_error'])} |" + " |" * 6)
            continue
        opn = f"{r['open_s'] + r['first_query_s']:.2f} ({r['import_s']:.2f})"
        rss = (
            f"{r['build_rss_mb'] + r.get('build_child_rss_mb', 0):,.0f} /"
            f" {r['query_rss_mb'] + r.get('query_child_rss_mb', 0):,.0f}"
        )
        dele = f"{r['delete_s']:.2f} s" if r.get("delete") == "yes" else _brief(r.get("delete", "-"), 90)
        flt = r.get("filter", "-")
        if "filter_p50_ms" in r:
            flt = f"{flt} ({r['filter_p50_ms']}, {r['filter_recall8']})"
        print(
            f"| {store} | {n:,} | {ing} | {opn} | {r['p50_ms']} / {r['p95_ms']} |"
            f" {r['recall8']} | {r['disk_mb']:,.0f} | {rss} | {dele} | {flt} |"
        )
    print()
    head = "| LlamaIndex integration | N | add vec/s | query p50 / p95 ms | recall@8 | delete_nodes 1% | disk MB |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for (store, n), r in sorted(llama.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        name = next((m for m in r["versions"] if m.startswith("llama-index-vector")), store)
        name = f"{name} {r['versions'].get(name, '')}"
        if "llama_error" in r:
            print(f"| {name} | {n:,} | fails: {_brief(r['llama_error'])} |" + " |" * 4)
            continue
        q = r.get("llama_query") or f"{r.get('llama_p50_ms', '-')} / {r.get('llama_p95_ms', '-')}"
        rec = r.get("llama_recall8", "-")
        dele = f"{r['llama_delete_s']:.2f} s" if "llama_delete_s" in r else _brief(r.get("llama_delete", "-"), 90)
        print(f"| {name} | {n:,} | {r['llama_add_vps']:,.0f} | {q} | {rec} | {dele} | {r['llama_disk_mb']} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=["run", "llama", "table", "_build", "_query", "_llama"])
    ap.add_argument("--store", choices=sorted(STORES))
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--queries", type=int, default=256)
    ap.add_argument("--cache", default=os.environ.get("KGPLUS_SCALE_CACHE", "/work/wt40-cache"))
    ap.add_argument("--work", default=os.environ.get("KGPLUS_SCALE_WORK", "/work/wt40-cache/stores"))
    ap.add_argument("--path")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--keep", action="store_true", help="keep the store's files after the run")
    a = ap.parse_args()
    if a.cmd.startswith("_"):
        fn = {"_build": phase_build, "_query": phase_query, "_llama": phase_llama}[a.cmd]
        print(json.dumps(fn(a)), flush=True)
    else:
        {"run": cmd_run, "llama": cmd_llama, "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    main()
