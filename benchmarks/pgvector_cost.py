"""What a pgvector table costs per passage (issue 40, the cost model per 10^6 passages): LlamaIndex's
``PGVectorStore`` against the PostgreSQL 16 + pgvector server that ``pgserver`` bundles, started on 127.0.0.1 by
:func:`llama_index_kgplus._testing.postgres_server` (fsync off, as in the tests).

The synthetic 384-d vectors and ~100-word passages of ``scale_stores.py`` (the embedding model is measured
elsewhere); measures ``add`` in batches, the table's size on disk per row, exact top-8 queries (a scan), pgvector's
HNSW index build and its queries (ef_search 40 and 100) with recall@8 against the scan, and ``delete`` of one document.

    .venv/bin/python benchmarks/pgvector_cost.py --n 20000 [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import sqlalchemy
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index.vector_stores.postgres import PGVectorStore

from llama_index_kgplus._testing import postgres_server

sys.path.insert(0, str(Path(__file__).parent))
from scale_stores import _draw, _generator_params  # noqa: E402
from scale_stores import passages as scale_passages  # noqa: E402

DIM = 384


def passages(n: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """The synthetic vectors and ~100-word passages of ``scale_stores.py`` (clustered, anisotropic, like sentence
    embeddings; recall is not trivial)."""
    vectors = _draw(np.random.default_rng((40, seed)), n, _generator_params())
    return vectors, scale_passages(0, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    vectors, texts = passages(args.n, 0)
    queries, _ = passages(args.queries, 999)
    out: dict[str, float | int] = {"n": args.n}
    with tempfile.TemporaryDirectory() as work, postgres_server(work, "bench") as pg:
        store = PGVectorStore.from_params(
            host=pg.host, port=pg.port, database=pg.database, user=pg.user, password=pg.password,
            table_name="bench", embed_dim=DIM,
        )  # fmt: skip
        nodes = [
            TextNode(
                text=text,
                id_=f"n{i}",
                embedding=vector.tolist(),
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"doc{i // 10}")},
            )
            for i, (vector, text) in enumerate(zip(vectors, texts))
        ]
        start = time.perf_counter()
        for i in range(0, len(nodes), args.batch):
            store.add(nodes[i : i + args.batch])
        out["add_rows_per_s"] = round(args.n / (time.perf_counter() - start))
        engine = store.client

        def sql(statement: str) -> object:
            with engine.begin() as connection:
                return connection.execute(sqlalchemy.text(statement)).scalar()

        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:  # not in a transaction
            connection.execute(sqlalchemy.text("VACUUM ANALYZE public.data_bench"))
        out["table_bytes_per_row"] = round(int(sql("SELECT pg_total_relation_size('public.data_bench')")) / args.n)

        def timed_queries() -> tuple[float, list[set[str]]]:
            times, found = [], []
            for query in queries:
                begin = time.perf_counter()
                result = store.query(VectorStoreQuery(query_embedding=query.tolist(), similarity_top_k=8))
                times.append(time.perf_counter() - begin)
                found.append(set(result.ids or []))
            return statistics.median(times) * 1000, found

        out["exact_query_p50_ms"], exact = timed_queries()
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(sqlalchemy.text("SET maintenance_work_mem = '1GB'"))
            begin = time.perf_counter()
            connection.execute(
                sqlalchemy.text(
                    "CREATE INDEX bench_hnsw ON public.data_bench USING hnsw (embedding vector_cosine_ops) "
                    "WITH (m = 16, ef_construction = 64)"
                )
            )
            out["hnsw_build_s"] = round(time.perf_counter() - begin, 1)
        out["hnsw_index_bytes_per_row"] = round(int(sql("SELECT pg_relation_size('public.bench_hnsw')")) / args.n)
        for ef_search in (40, 100):  # 40: pgvector's default
            with engine.begin() as connection:
                connection.execute(sqlalchemy.text(f"ALTER DATABASE {pg.database} SET hnsw.ef_search = {ef_search}"))
            engine.dispose()  # new connections take the setting
            p50, approximate = timed_queries()
            out[f"hnsw_ef{ef_search}_query_p50_ms"] = round(p50, 2)
            recall = statistics.mean(len(a & e) / max(1, len(e)) for a, e in zip(approximate, exact))
            out[f"hnsw_ef{ef_search}_recall_at_8"] = round(recall, 4)
        count = "SELECT count(*) FROM public.data_bench WHERE metadata_->>'ref_doc_id' = 'doc7'"
        before = int(sql(count))
        begin = time.perf_counter()
        store.delete("doc7")  # a scan of the JSON metadata: no index on it
        out["delete_one_document_ms"] = round((time.perf_counter() - begin) * 1000, 1)
        out["rows_deleted"] = before - int(sql(count))
        out["exact_query_p50_ms"] = round(float(out["exact_query_p50_ms"]), 2)
        engine.dispose()
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
