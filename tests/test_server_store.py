"""A server vector store tested for real (issue 40): PostgreSQL with pgvector, started on 127.0.0.1 by the fixture
(``pgserver``'s bundled programs), through LlamaIndex's ``PGVectorStore``, with the real embedding model on
five pages of the bundled sample: the same top hits as the default store, ``ingest.json`` naming the store without its password, a
document deleted from the table, and the folder reopened with the store (refused without it or with another)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

if importlib.util.find_spec("pgserver") is None:  # the server (dev), found without importing it
    pytest.skip(
        "pgserver (PostgreSQL with pgvector) is not installed: dev has it on x86_64 Linux with Python <= 3.12",
        allow_module_level=True,
    )
pytest.importorskip("llama_index.vector_stores.postgres")  # the `postgres` extra (in dev)

import sqlalchemy  # noqa: E402
from _kill import KILL_AFTER_ADD  # noqa: E402
from llama_index.core import Document  # noqa: E402
from llama_index.vector_stores.postgres import PGVectorStore  # noqa: E402

from llama_index_kgplus import InputDataError, build_index, load_corpus, load_index, sample  # noqa: E402
from llama_index_kgplus._indexing import PackVectorStoreIndex, index_size, persist_index  # noqa: E402
from llama_index_kgplus._sqlitedoc import SQLiteDocumentStore  # noqa: E402
from llama_index_kgplus._streaming import RESUME_FILE  # noqa: E402
from llama_index_kgplus._testing import postgres_server  # noqa: E402

#: the test server's password (not a secret): it must appear in no file of the index folder
PASSWORD = "kgplus-test-password"
QUESTIONS = {
    "How do I create a virtual environment and install packages with pip?": "tutorial/venv",
    "Why is 0.1 + 0.2 not exactly 0.3 with floating point numbers?": "tutorial/floatingpoint",
    "How do I handle an exception with try and except?": "tutorial/errors",
    "How do I define a class and inherit from another class?": "tutorial/classes",
}
#: five pages of the sample (about half of it, ~90 chunks): the four the questions are about and one more
SUBSET = (*QUESTIONS.values(), "tutorial/inputoutput")
DELETED = "tutorial/venv"
DIM = 384  # all-MiniLM-L6-v2


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    with postgres_server(tmp_path_factory.mktemp("postgres"), PASSWORD) as server:
        yield server


def pg_store(server, table: str = "kgplus") -> PGVectorStore:
    return PGVectorStore.from_params(
        host=server.host, port=server.port, database=server.database, user=server.user, password=server.password,
        table_name=table, embed_dim=DIM,
    )  # fmt: skip


def table_name(store: PGVectorStore) -> str:
    """The server table behind ``store`` (PGVectorStore prefixes its table name with ``data_``)."""
    return f"{store.schema_name}.data_{store.table_name}"


def rows(store: PGVectorStore, doc_id: str | None = None) -> int:
    """The rows of the store's table (of one document), counted by SQL on the server."""
    table = table_name(store)
    where = " WHERE metadata_->>'doc_id' = :doc" if doc_id else ""
    with store.client.connect() as connection:
        return connection.execute(sqlalchemy.text(f"SELECT count(*) FROM {table}{where}"), {"doc": doc_id}).scalar()


def table_contents(store: PGVectorStore) -> list[tuple[str, str]]:
    """Every row's document and text, sorted (a duplicate row shows twice)."""
    with store.client.connect() as connection:
        found = connection.execute(sqlalchemy.text(f"SELECT metadata_->>'doc_id', text FROM {table_name(store)}"))
        return sorted((doc, text) for doc, text in found)


def stamp(folder: Path) -> dict:
    return json.loads((folder / "ingest.json").read_text(encoding="utf-8"))


def hits(index, question: str, k: int = 5) -> list[tuple[str, str, float]]:
    return [(h.node.ref_doc_id, h.node.get_content(), h.score) for h in index.as_retriever(similarity_top_k=k).retrieve(question)]  # fmt: skip


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return [doc for doc in load_corpus(sample.SAMPLE_DOCS) if doc.doc_id in SUBSET]


@pytest.fixture(scope="module")
def pg_index(postgres, docs, embed_model, tmp_path_factory):
    """Five pages of the sample ingested into a pgvector table, its folder beside."""
    folder = tmp_path_factory.mktemp("pg") / "index"
    store = pg_store(postgres)
    index = build_index(docs, folder, embed_model=embed_model, vector_store=store, show_progress=False)
    return folder, index, store


def test_same_top_hits_as_the_default_store(pg_index, docs, embed_model):
    _, index, store = pg_index
    assert rows(store) == len(index.docstore.docs) > 50  # every chunk is a row of the server's table
    default = build_index(docs, None, embed_model=embed_model, show_progress=False)  # LlamaIndex's JSON store
    for question, expected in QUESTIONS.items():
        got, want = hits(index, question), hits(default, question)
        assert [(doc, text) for doc, text, _ in got] == [(doc, text) for doc, text, _ in want], question
        assert [s for *_, s in got] == pytest.approx([s for *_, s in want], abs=1e-4)  # cosine, float4 on the server
        assert got[0][0] == expected


def test_ingest_json_names_the_store_without_its_password(pg_index, postgres):
    folder, _, _ = pg_index
    assert stamp(folder)["vector_store"] == {
        "type": "server", "class": "PGVectorStore", "schema_name": "public", "table_name": "kgplus",
        "embed_dim": DIM, "server": f"postgresql+psycopg2://***@127.0.0.1:{postgres.port}/postgres",
    }  # fmt: skip
    # the docstore and index store: the folder's SQLite file, as for LanceDB; no JSON vectors beside
    assert stamp(folder)["docstore"]["type"] == "sqlite"
    assert not any((folder / name).exists() for name in ("default__vector_store.json", "docstore.json"))
    assert not [p for p in folder.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]


def test_reopens_with_the_store(pg_index, postgres, embed_model):
    folder, built, _ = pg_index
    index = load_index(folder, embed_model=embed_model, vector_store=pg_store(postgres))
    assert isinstance(index, PackVectorStoreIndex) and isinstance(index.vector_store, PGVectorStore)
    assert isinstance(index.docstore, SQLiteDocumentStore)
    question = next(iter(QUESTIONS))
    assert hits(index, question) == hits(built, question)


async def test_async_retrieval_reads_the_same_table(pg_index, postgres, embed_model):
    folder, built, _ = pg_index
    index = load_index(folder, embed_model=embed_model, vector_store=pg_store(postgres))  # asyncpg, its own engine
    question = next(iter(QUESTIONS))
    found = await index.as_retriever(similarity_top_k=3).aretrieve(question)
    assert [h.node.get_content() for h in found] == [text for _, text, _ in hits(built, question, 3)]


def test_reopening_without_the_store_or_with_another_is_refused_in_one_line(pg_index, postgres, embed_model, tmp_path):
    folder, _, _ = pg_index
    with pytest.raises(InputDataError) as error:
        load_index(folder, embed_model=embed_model)
    message = str(error.value)
    assert "keeps its vectors in PGVectorStore table 'kgplus'" in message and "vector_store=PGVectorStore" in message
    assert "table_name='kgplus', embed_dim=384" in message and f"127.0.0.1:{postgres.port}" in message
    assert "\n" not in message and PASSWORD not in message
    with pytest.raises(InputDataError, match="table_name differ") as error:
        load_index(folder, embed_model=embed_model, vector_store=pg_store(postgres, "another"))
    assert "\n" not in str(error.value)
    # and a folder that keeps its vectors itself is not opened on a server's table
    json_folder = tmp_path / "json"
    build_index([Document(text="A passage about pip.", id_="one")], json_folder, embed_model=embed_model)
    with pytest.raises(InputDataError, match="keeps its vectors in the folder's JSON vector store"):
        load_index(json_folder, embed_model=embed_model, vector_store=pg_store(postgres))


@pytest.mark.model  # the CLI loads the real embedding model itself
def test_cli_names_the_fix(pg_index, cli_error):
    folder, _, _ = pg_index
    err = cli_error(["retrieve", "pip", "--index", str(folder)])
    assert "vector_store=PGVectorStore" in err and PASSWORD not in err


def test_delete_ref_doc_removes_the_rows_and_the_folder_reopens_without_them(
    pg_index, postgres, docs, embed_model, tmp_path
):
    folder = tmp_path / "index"
    subset = [d for d in docs if d.doc_id in ("tutorial/venv", "tutorial/errors", "tutorial/floatingpoint")]
    store = pg_store(postgres, "kgplus_delete")
    index = build_index(subset, folder, embed_model=embed_model, vector_store=store, show_progress=False)
    before, deleted = rows(store), rows(store, DELETED)
    node_ids = set(index.ref_doc_info[DELETED].node_ids)
    assert deleted == len(node_ids) > 0

    index.delete_ref_doc(DELETED)
    assert rows(store, DELETED) == 0 and rows(store) == before - deleted  # gone from the server's table only
    assert not node_ids & set(index.docstore.docs)  # and from the docstore (the pack's retrievers read it)
    question = next(iter(QUESTIONS))
    assert all(doc != DELETED for doc, *_ in hits(index, question, 10))

    persist_index(index, folder)
    reopened = load_index(folder, embed_model=embed_model, vector_store=pg_store(postgres, "kgplus_delete"))
    assert DELETED not in reopened.ref_doc_info and set(reopened.ref_doc_info) == {d.doc_id for d in subset} - {DELETED}
    assert all(doc != DELETED for doc, *_ in hits(reopened, question, 10))


# A process that streams the five pages into INDEX and a pgvector table, one page per batch, and kills itself
# (kill -9) when the third page's rows are in the table but not yet in the folder's docstore.
_KILL_MID_INGEST = KILL_AFTER_ADD + textwrap.dedent(
    """
    import json, sys
    from llama_index.vector_stores.postgres import PGVectorStore
    from llama_index_kgplus import build_index, load_corpus, sample
    from llama_index_kgplus.llm import embed_model_from_spec

    index, pages, params = sys.argv[1], sys.argv[2].split(","), json.loads(os.environ["KGPLUS_TEST_PG"])
    kill_after_add(PGVectorStore, 3)
    docs = [doc for doc in load_corpus(sample.SAMPLE_DOCS) if doc.doc_id in pages]
    build_index(docs, index, embed_model=embed_model_from_spec(), vector_store=PGVectorStore.from_params(**params),
                batch_size=1, show_progress=False)
    """
)


def test_kill_9_mid_ingest_into_the_server_table_resumes_without_duplicates(
    pg_index, postgres, docs, embed_model, tmp_path, caplog
):
    folder, table = tmp_path / "index", "kgplus_resume"
    params = {"host": postgres.host, "port": postgres.port, "database": postgres.database, "user": postgres.user,
              "password": postgres.password, "table_name": table, "embed_dim": DIM}  # fmt: skip
    script = tmp_path / "kill.py"
    script.write_text(_KILL_MID_INGEST, encoding="utf-8")
    run = subprocess.run([sys.executable, str(script), str(folder), ",".join(d.doc_id for d in docs)],
                         env={**os.environ, "KGPLUS_TEST_PG": json.dumps(params)}, capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    assert run.returncode == -9, run.stderr[-2000:]
    record = json.loads((folder / RESUME_FILE).read_text(encoding="utf-8"))
    assert len(record["batches"]) == 2 and record["pending"]  # the third page's rows are in the table, pending

    store = pg_store(postgres, table)
    index = build_index(docs, folder, embed_model=embed_model, vector_store=store, batch_size=1, show_progress=False)
    assert "resuming the interrupted ingest after its first 2 documents" in caplog.text
    assert index_size(index) == (len(docs), rows(store))
    assert table_contents(store) == table_contents(pg_index[2])  # the one-shot ingest's rows: none twice, none missing
    assert not (folder / RESUME_FILE).exists()
