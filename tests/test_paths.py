"""One rule for paths (docs/guarantees.md): every file the pack reads or writes is inside what the user named.

Tables read exactly the registered file (a name with ``*``, ``?`` or ``[`` is not a pattern; a DuckDB file's
views cannot read other files), and the SQL a model writes cannot reach any other file: a stub model server on
127.0.0.1 answers malicious SQL (the stub stands in for a served model, which cannot run here in the fast tier).
``~`` is expanded once; manifests that name files outside their folder are refused; symlinks out of a folder
the pack writes into are refused, and skipped with a warning in a corpus folder."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import logging
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from llama_index_kgplus.cli import main
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.tables import SQLTables

# ----------------------------------------------------------------------------- a stub model server


class _ModelStub(http.server.BaseHTTPRequestHandler):
    """OpenAI's chat wire format: the SQL prompt gets ``{"sql": SQL}`` with the class's ``sql``, any other prompt
    a short answer."""

    sql = ""

    def do_POST(self):  # noqa: N802 (the http.server name)
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = " ".join(str(m.get("content")) for m in request.get("messages", []))
        content = json.dumps({"sql": self.sql, "reason": ""}) if "Reply with JSON" in prompt else "An answer."
        body = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": request.get("model", "m"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def _model_answering(sql: str):
    """A stub model server on 127.0.0.1 whose SQL is ``sql``; yields its ``openai-like:`` spec."""
    handler = type("Stub", (_ModelStub,), {"sql": sql})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"openai-like:m@http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def _mock_embed_model(tmp_path_factory, monkeypatch):
    """``kgplus ask`` routes with an embedding model: a mock one through a module factory spec (no model here)."""
    folder = tmp_path_factory.mktemp("models")
    (folder / "kgplus_paths_models.py").write_text(
        "from llama_index.core.embeddings import MockEmbedding\n\ndef embed():\n    return MockEmbedding(embed_dim=8)\n"
    )
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("KGPLUS_EMBED_MODEL", "kgplus_paths_models:embed")


def _ask_json(capsys, *argv: str) -> dict:
    assert main(["ask", *argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- tables


@pytest.fixture
def csv_folder(tmp_path) -> Path:
    """A folder whose registered file is literally named ``*.csv``, beside two CSVs that must never be read."""
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "*.csv").write_text("v\nNAMED-FILE\n")
    (folder / "a.csv").write_text("v\nSECRET-A\n")
    (folder / "b.csv").write_text("v\nSECRET-B\n")
    return folder


def test_a_table_file_named_like_a_glob_is_read_alone(csv_folder):
    tables = SQLTables()
    tables.add("x", csv_folder / "*.csv")
    assert tables.run("SELECT v FROM x").rows == [("NAMED-FILE",)]


@pytest.mark.parametrize("name", ["q?.csv", "[ab].csv", "b[1].csv"])
def test_pattern_characters_in_a_table_name_are_plain_characters(csv_folder, name):
    (csv_folder / name).write_text("v\nNAMED-FILE\n")
    (csv_folder / "q1.csv").write_text("v\nSECRET-Q\n")
    (csv_folder / "b1.csv").write_text("v\nSECRET-B1\n")
    tables = SQLTables()
    tables.add("x", csv_folder / name)
    assert tables.run("SELECT v FROM x").rows == [("NAMED-FILE",)]


def test_a_sqlite_table_named_with_a_question_mark_is_that_file(tmp_path):
    for name, value in (("a", "SECRET"), ("a?b#c.db", "NAMED-FILE")):  # `file:a?b#c.db` would open `a`
        with sqlite3.connect(tmp_path / name) as db:
            db.execute("CREATE TABLE t (v TEXT)")
            db.execute("INSERT INTO t VALUES (?)", (value,))
    tables = SQLTables()
    tables.add("x", tmp_path / "a?b#c.db")
    assert tables.run("SELECT v FROM x").rows == [("NAMED-FILE",)]


def test_a_duckdb_table_file_is_read_alone(tmp_path, csv_folder):
    duckdb = pytest.importorskip("duckdb")
    secret = csv_folder / "a.csv"
    with duckdb.connect(str(tmp_path / "plain.duckdb")) as db:
        db.execute("CREATE TABLE t AS SELECT 'NAMED-FILE' AS v, DATE '2014-01-02' AS d")
    (tmp_path / "q?[x].duckdb").write_bytes((tmp_path / "plain.duckdb").read_bytes())
    with duckdb.connect(str(tmp_path / "leaky.duckdb")) as db:
        db.execute("CREATE TABLE t AS SELECT 1 AS v")
        db.execute(f"CREATE VIEW leak AS SELECT * FROM read_csv('{secret}')")  # a planted view reading a file
    tables = SQLTables()
    tables.add("plain", tmp_path / "plain.duckdb")
    tables.add("odd", tmp_path / "q?[x].duckdb")
    with pytest.raises(InputDataError, match=r"Table 'leak' from .*leaky.duckdb: Permission Error"):
        tables.add("leak", tmp_path / "leaky.duckdb")
    assert tables.run("SELECT v, d FROM plain").rows == tables.run("SELECT v, d FROM odd").rows
    assert tables.run("SELECT v FROM plain").rows == [("NAMED-FILE",)]
    assert "leak" not in tables.names


def test_ask_reads_only_the_named_table_file(csv_folder, capsys):
    with _model_answering("SELECT v FROM x ORDER BY v") as spec:
        record = _ask_json(capsys, "Which values?", "--table", f"x={csv_folder}/*.csv", "--llm", spec)
    assert record["rows"] == [["NAMED-FILE"]] and record["refused"] is None


MALICIOUS_SQL = [
    "SELECT * FROM read_csv('{secret}')",
    "SELECT * FROM read_csv_auto('{folder}/*.csv')",
    "SELECT * FROM '{secret}'",
    'SELECT * FROM "{secret}"',
    "SELECT * FROM glob('{folder}/*')",
    "SELECT read_text('{secret}')",
    "SELECT * FROM read_blob('{secret}')",
    "SELECT * FROM query('SELECT * FROM read_csv(''{secret}'')')",
    "SELECT * FROM sniff_csv('{secret}')",
    "SELECT * FROM x UNION ALL SELECT * FROM read_csv('{secret}')",
    "WITH s AS (SELECT * FROM read_csv('{secret}')) SELECT * FROM s",
    "COPY x TO '{out}'",
    "COPY (SELECT * FROM x) TO '{out}' (FORMAT csv)",
    "ATTACH '{out}' AS o",
    "ATTACH '{secret}' AS s (TYPE sqlite)",
    "SELECT * FROM x; COPY x TO '{out}'",
    "INSTALL httpfs",
    "SET enable_external_access = true",
    "SELECT * FROM parquet_scan('{secret}')",
    "SELECT getenv('HOME')",
]


@pytest.mark.parametrize("sql", MALICIOUS_SQL)
def test_sql_from_a_model_reaches_no_other_file(csv_folder, tmp_path, capsys, sql):
    out = tmp_path / "written.csv"
    sql = sql.format(secret=csv_folder / "a.csv", folder=csv_folder, out=out)
    with _model_answering(sql) as spec:
        record = _ask_json(capsys, "Which values?", "--table", f"x={csv_folder}/*.csv", "--llm", spec)
    shown = json.dumps(record)
    assert "SECRET" not in shown
    assert record["refused"] or record["rows"] in ([], [["NAMED-FILE"]])
    assert not out.exists()


def test_a_tilde_path_is_checked_and_read_in_the_home_folder(tmp_path, monkeypatch, capsys):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    (work / "~").mkdir(parents=True)
    (home / "t.csv").write_text("v\nIN-HOME\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    tables = SQLTables()
    tables.add("x", "~/t.csv")
    assert tables.sources["x"] == home / "t.csv"
    assert tables.run("SELECT v FROM x").rows == [("IN-HOME",)]
    (work / "~" / "t.csv").write_text("v\nIN-WORK\n")  # what the check used to look at
    with _model_answering("SELECT v FROM x") as spec:
        record = _ask_json(capsys, "Which values?", "--table", "x=~/t.csv", "--llm", spec)
    assert record["rows"] == [["IN-HOME"]]


def test_a_tilde_index_folder_is_the_one_in_the_home_folder(tmp_path, monkeypatch):
    from llama_index.core import Document
    from llama_index.core.embeddings import MockEmbedding

    from llama_index_kgplus import build_index, load_index

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    embed = MockEmbedding(embed_dim=8)
    build_index([Document(text="Alpha beta gamma.", id_="d")], "~/idx", embed_model=embed, show_progress=False)
    assert (tmp_path / "home" / "idx" / "docstore.json").is_file()
    assert not (tmp_path / "~").exists()
    assert load_index("~/idx", embed_model=embed).docstore.docs


# ----------------------------------------------------------------------------- manifests of the index folder


@pytest.fixture
def index_dir(tmp_path) -> Path:
    from llama_index.core import Document
    from llama_index.core.embeddings import MockEmbedding

    from llama_index_kgplus import build_index

    folder = tmp_path / "outside" / "index"
    docs = [Document(text="Alpha beta gamma.", id_="a"), Document(text="Delta epsilon.", id_="b")]
    build_index(docs, folder, embed_model=MockEmbedding(embed_dim=8), show_progress=False)
    return folder


def _stage(index_dir: Path, files: dict) -> None:
    staging = index_dir / ".ingest-staging"
    staging.mkdir()
    (staging / "ingest.json").write_text(json.dumps({"ingest_id": "x", "index_id": None, "files": files}))


@pytest.mark.parametrize("name", ["../docstore.json", "../../victim.txt", "sub/../../docstore.json"])
def test_a_staging_stamp_naming_files_outside_the_index_moves_nothing(index_dir, capsys, name):
    victim = index_dir.parent / Path(name).name
    victim.write_text("precious")
    if name == "../../victim.txt":
        (index_dir.parent.parent / "victim.txt").write_text("precious too")
    before = {p.name: p.read_bytes() for p in index_dir.iterdir() if p.is_file()}
    _stage(index_dir, {name: "0" * 64})
    status = main(["retrieve", "alpha", "--index", str(index_dir)])
    assert victim.read_text() == "precious"
    if name == "../../victim.txt":
        assert (index_dir.parent.parent / "victim.txt").read_text() == "precious too"
    assert {p.name: p.read_bytes() for p in index_dir.iterdir() if p.is_file()} == before
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1
    assert f"names {name!r}, which is not a file of" in err and "delete" in err


def test_an_index_stamp_naming_a_file_outside_the_index_is_refused(index_dir, tmp_path):
    from llama_index_kgplus._indexing import require_index

    secret = tmp_path / "hostname"
    secret.write_text("a host\n")
    stamp_path = index_dir / "ingest.json"
    stamp = json.loads(stamp_path.read_text())
    for name in (str(secret), "../hostname"):
        stamp["files"] = {**stamp["files"], name: hashlib.sha256(secret.read_bytes()).hexdigest()}
        stamp_path.write_text(json.dumps(stamp))
        with pytest.raises(InputDataError, match=r"names .*hostname.*, which is not a file of .*re-run `kgplus ingest"):
            require_index(index_dir)
        del stamp["files"][name]


def test_an_index_file_linking_out_of_the_index_is_refused(index_dir, tmp_path):
    from llama_index_kgplus._indexing import require_index

    moved = tmp_path / "docstore.json"
    os.replace(index_dir / "docstore.json", moved)
    (index_dir / "docstore.json").symlink_to(moved)
    with pytest.raises(InputDataError, match="a symbolic link out of"):
        require_index(index_dir)


def test_a_staging_folder_linking_out_of_the_index_is_never_written_through(index_dir, tmp_path):
    from llama_index.core import Document
    from llama_index.core.embeddings import MockEmbedding

    from llama_index_kgplus import build_index

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "docstore.json").write_text("precious")
    (index_dir / ".ingest-staging").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(InputDataError, match=r"\.ingest-staging is a symbolic link to .*elsewhere.*remove the link"):
        build_index(
            [Document(text="New.", id_="n")], index_dir, embed_model=MockEmbedding(embed_dim=8), show_progress=False
        )
    assert [p.name for p in elsewhere.iterdir()] == ["docstore.json"]
    assert (elsewhere / "docstore.json").read_text() == "precious"


def test_a_graphrag_store_file_linking_out_of_the_store_is_refused(tmp_path):
    from llama_index.core.llms import MockLLM

    from llama_index_kgplus.graphrag import GraphRAGIndex

    store = tmp_path / "store"
    store.mkdir()
    victim = tmp_path / "victim.sqlite"
    victim.write_bytes(b"")
    (store / "state.sqlite").symlink_to(victim)
    with pytest.raises(InputDataError, match=r"state\.sqlite is a symbolic link to .*victim\.sqlite"):
        GraphRAGIndex.from_defaults(store, llm=MockLLM())


def test_eval_outputs_linking_out_of_the_folder_are_refused(tmp_path):
    from llama_index_kgplus.evaluation._report import write_report

    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.md"
    victim.write_text("precious")
    (out / "summary.md").symlink_to(victim)
    with pytest.raises(InputDataError, match="summary.md is a symbolic link"):
        write_report([], ["baseline"], out)
    assert victim.read_text() == "precious"


# ----------------------------------------------------------------------------- corpus folders


def test_a_corpus_symlink_out_of_the_folder_is_skipped_with_a_warning(tmp_path, caplog):
    from llama_index_kgplus import load_corpus

    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "kept.txt").write_text("Kept text.")
    (corpus / "sub" / "inner.txt").write_text("Inner text.")
    (corpus / "alias.txt").symlink_to(corpus / "sub" / "inner.txt")  # inside the folder: read
    outside = tmp_path / "secret.txt"
    outside.write_text("SECRET")
    (corpus / "leak.txt").symlink_to(outside)
    (corpus / "leakdir").symlink_to(tmp_path, target_is_directory=True)
    with caplog.at_level(logging.WARNING):
        docs = load_corpus(corpus)
    assert sorted(d.id_ for d in docs) == ["alias", "kept", "sub/inner"]
    assert not any("SECRET" in d.text for d in docs)
    assert "leak.txt: it is a symbolic link to" in caplog.text


def test_a_fifo_in_a_corpus_folder_is_skipped_with_a_warning_not_read(tmp_path, caplog):
    from llama_index_kgplus import load_corpus

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "kept.txt").write_text("Kept text.")
    os.mkfifo(corpus / "pipe.txt")  # opened for reading, it would block until a writer came
    with caplog.at_level(logging.WARNING):
        docs = load_corpus(corpus)
    assert [d.id_ for d in docs] == ["kept"]
    assert "pipe.txt: it is not a regular file" in caplog.text


# ----------------------------------------------------------------------------- the helpers


@pytest.mark.parametrize("name", ["../x", "/etc/hostname", "a/b", "", ".", "..", "a\x00b", 5, None])
def test_member_refuses_anything_but_a_plain_file_name(tmp_path, name):
    from llama_index_kgplus._paths import member

    with pytest.raises(InputDataError, match="which is not a file of"):
        member(tmp_path, name, what="m.json", fix="fix it")


def test_member_and_inside_follow_symlinks(tmp_path):
    from llama_index_kgplus._paths import inside, member

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ok").write_text("")
    (tmp_path / "in" / "link").symlink_to(tmp_path / "in" / "ok")
    (tmp_path / "in" / "out").symlink_to(tmp_path)
    assert member(tmp_path / "in", "link", what="m", fix="f") == tmp_path / "in" / "link"
    assert inside(tmp_path / "in", "new", fix="f") == tmp_path / "in" / "new"
    with pytest.raises(InputDataError, match="a symbolic link out of"):
        member(tmp_path / "in", "out", what="m", fix="f")
    with pytest.raises(InputDataError, match="nothing is written through it: f."):
        inside(tmp_path / "in", "out/x", fix="f")


def test_user_path_expands_the_home_folder_once(monkeypatch, tmp_path):
    from llama_index_kgplus._paths import user_path

    monkeypatch.setenv("HOME", str(tmp_path))
    assert user_path("~/a/b") == tmp_path / "a" / "b"
    assert user_path("a/~/b") == Path("a/~/b")
    assert user_path(Path("rel")) == Path("rel")
