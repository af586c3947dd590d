"""The streaming ingest (issue 40, item 2): into a LanceDB folder, ``build_index`` reads, splits, embeds and writes
the documents in batches; the result is the index of the one-shot ingest; a ``kill -9`` mid-ingest leaves the old
index readable, and the same ingest run again resumes after the last written batch without duplicates. Real
lancedb, the real embedding model, the first passages of the bundled multi-hop sample."""

from __future__ import annotations

import json
import operator
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lancedb")  # the `lancedb` extra (in `dev`)

from _corpora import sample_head  # noqa: E402
from _kill import KILL_AFTER_ADD  # noqa: E402

from llama_index_kgplus import InputDataError, build_index, load_corpus, load_index  # noqa: E402
from llama_index_kgplus._indexing import index_size  # noqa: E402
from llama_index_kgplus._lancedb import TABLE_DIR, new_store  # noqa: E402
from llama_index_kgplus._sqlitedoc import KV_DIR  # noqa: E402
from llama_index_kgplus._streaming import RESUME_FILE  # noqa: E402
from llama_index_kgplus.cli import main  # noqa: E402

QUESTION = "Who was Teutberga married to?"
BATCH = 4
N_DOCS = 18  # five batches, the last one short


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return sample_head(tmp_path_factory.mktemp("stream") / "docs.jsonl", N_DOCS)


@pytest.fixture(scope="module")
def one_shot(tmp_path_factory, corpus, embed_model) -> Path:
    """The index of today's one-shot ingest: every node in memory, then written (a LanceDB store passed in)."""
    folder = tmp_path_factory.mktemp("one-shot") / "index"
    store = new_store(folder)
    build_index(load_corpus(corpus), folder, embed_model=embed_model, vector_store=store, show_progress=False)
    return folder


def contents(folder: Path, embed_model) -> dict[tuple[str, str], dict]:
    """Every node of an index by (document id, text): its metadata, vector and document hash; no duplicate."""
    index = load_index(folder, embed_model=embed_model)
    docstore, rows = index.docstore, index.vector_store.get_nodes(node_ids=None)
    nodes = list(docstore.docs.values())
    assert len(rows) == len(nodes) == len({(n.ref_doc_id, n.text) for n in nodes}), "duplicate nodes"
    vectors = {row.node_id: row.embedding for row in rows}
    return {
        (n.ref_doc_id, n.text): {
            "metadata": n.metadata,
            "vector": np.asarray(vectors[n.node_id]),
            "doc_hash": docstore.get_document_hash(n.ref_doc_id),
        }
        for n in nodes
    }


def assert_same_index(folder: Path, reference: Path, embed_model) -> None:
    got, want = contents(folder, embed_model), contents(reference, embed_model)
    assert got.keys() == want.keys()
    for key, node in want.items():
        assert got[key]["metadata"] == node["metadata"] and got[key]["doc_hash"] == node["doc_hash"]
        np.testing.assert_allclose(got[key]["vector"], node["vector"], atol=1e-5)
    hits = [load_index(f, embed_model=embed_model).as_retriever(similarity_top_k=5).retrieve(QUESTION)
            for f in (folder, reference)]  # fmt: skip
    assert [(h.node.ref_doc_id, h.node.text) for h in hits[0]] == [(h.node.ref_doc_id, h.node.text) for h in hits[1]]
    assert [h.score for h in hits[0]] == pytest.approx([h.score for h in hits[1]], abs=1e-5)


def folder_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """The LanceDB tables and the SQLite docstores of an index folder."""
    return sorted((folder / TABLE_DIR).glob("*.lance")), sorted((folder / KV_DIR).glob("*.sqlite"))


def test_batched_ingest_is_the_one_shot_index_and_readers_keep_the_old_one(tmp_path, corpus, one_shot, embed_model):
    folder = tmp_path / "index"
    build_index(load_corpus(corpus)[:3], folder, embed_model=embed_model, vector_store="lancedb", show_progress=False)
    old = set(load_index(folder, embed_model=embed_model).docstore.docs)
    seen_by_reader: list[set[str]] = []

    def documents():  # a one-pass generator; a reader opens the folder while the third batch is read
        for i, doc in enumerate(load_corpus(corpus)):
            if i == 2 * BATCH:
                assert (folder / RESUME_FILE).is_file()  # two batches are written beside the old index
                seen_by_reader.append(set(load_index(folder, embed_model=embed_model).docstore.docs))
            yield doc

    index = build_index(
        documents(), folder, embed_model=embed_model, vector_store="lancedb", batch_size=BATCH, show_progress=False
    )
    assert seen_by_reader == [old]
    assert index_size(index) == (N_DOCS, len(contents(one_shot, embed_model)))
    assert_same_index(folder, one_shot, embed_model)
    assert not (folder / RESUME_FILE).exists() and [len(names) for names in folder_files(folder)] == [1, 1]


def test_load_corpus_streams_and_the_cli_ingests_in_batches(
    tmp_path, corpus, one_shot, embed_model, capsys, monkeypatch
):
    stream = load_corpus(corpus, stream=True)
    assert not isinstance(stream, list) and iter(stream) is not stream  # read anew on each iteration
    assert [d.doc_id for d in stream] == [d.doc_id for d in load_corpus(corpus)] == [d.doc_id for d in stream]
    assert operator.length_hint(stream) == N_DOCS
    bad = tmp_path / "bad.jsonl"
    bad.write_text(corpus.read_text(encoding="utf-8") + "{oops\n", encoding="utf-8")
    records = iter(load_corpus(bad, stream=True))
    assert len([next(records) for _ in range(N_DOCS)]) == N_DOCS  # the good records come before the error
    with pytest.raises(InputDataError, match=rf":{N_DOCS + 1}: invalid JSON"):
        next(records)

    # the limit on files read into memory bounds each record of a streamed corpus, not the file
    size = corpus.stat().st_size
    longest = max(len(line.encode("utf-8")) for line in corpus.read_text(encoding="utf-8").splitlines(keepends=True))
    monkeypatch.setenv("KGPLUS_MAX_FILE_MB", str((longest + 1) / (1 << 20)))
    assert longest < size and len(list(load_corpus(corpus, stream=True))) == N_DOCS
    with pytest.raises(InputDataError, match="over the 0 MB limit on files read into memory"):
        load_corpus(corpus)
    monkeypatch.setenv("KGPLUS_MAX_FILE_MB", str((longest - 1) / (1 << 20)))
    with pytest.raises(InputDataError, match=r"docs.jsonl:\d+ is a line of 0.0 MB, over the 0 MB limit"):
        list(load_corpus(corpus, stream=True))
    monkeypatch.delenv("KGPLUS_MAX_FILE_MB")

    folder = tmp_path / "cli"
    argv = ["ingest", str(corpus), "--index", str(folder), "--vector-store", "lancedb", "--batch-size", "5"]
    assert main(argv) == 0
    assert f"indexed {N_DOCS} documents as {len(contents(one_shot, embed_model))} nodes" in capsys.readouterr().out
    assert_same_index(folder, one_shot, embed_model)


# A process that runs the streaming ingest of CORPUS into INDEX and kills itself (kill -9) after N batches were
# written: "between" when the next batch's first document is read; "inside" when the next batch's nodes are in the
# table but not yet in the docstore (a half-written batch).
_KILL_MID_INGEST = KILL_AFTER_ADD + textwrap.dedent(
    """
    import sys
    from llama_index_kgplus import build_index, load_corpus
    from llama_index_kgplus._lancedb import store_class
    from llama_index_kgplus.llm import embed_model_from_spec

    corpus, index, where, n, batch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    if where == "inside":
        kill_after_add(store_class(), n + 1)

    def documents():
        for i, doc in enumerate(load_corpus(corpus)):
            if where == "between" and i == n * batch:
                os.kill(os.getpid(), signal.SIGKILL)
            yield doc

    build_index(documents(), index, embed_model=embed_model_from_spec(), vector_store="lancedb", batch_size=batch,
                show_progress=False)
    """
)


@pytest.mark.parametrize("where", ["between", "inside"])
def test_kill_9_mid_ingest_keeps_the_old_index_and_a_rerun_resumes_without_duplicates(
    tmp_path, corpus, one_shot, embed_model, caplog, where
):
    folder = tmp_path / "index"
    build_index(load_corpus(corpus)[-2:], folder, embed_model=embed_model, vector_store="lancedb", show_progress=False)
    old = contents(folder, embed_model)
    script = tmp_path / "kill.py"
    script.write_text(_KILL_MID_INGEST)
    run = subprocess.run([sys.executable, str(script), str(corpus), str(folder), where, "2", str(BATCH)],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert run.returncode == -9, run.stderr[-2000:]
    record = json.loads((folder / RESUME_FILE).read_text(encoding="utf-8"))
    assert len(record["batches"]) == 2 and record["documents"] == 2 * BATCH
    assert bool(record["pending"]) == (where == "inside")  # the batch being written names its nodes
    assert contents(folder, embed_model).keys() == old.keys()  # readers see the old index, whole
    assert [len(names) for names in folder_files(folder)] == [2, 2]  # the new table and docstore beside it

    index = build_index(load_corpus(corpus), folder, embed_model=embed_model, vector_store="lancedb",
                        batch_size=BATCH, show_progress=False)  # fmt: skip
    assert f"resuming the interrupted ingest after its first {2 * BATCH} documents" in caplog.text
    assert index_size(index)[0] == N_DOCS
    assert_same_index(folder, one_shot, embed_model)  # no duplicate, nothing missing
    assert not (folder / RESUME_FILE).exists() and [len(names) for names in folder_files(folder)] == [1, 1]


def test_an_ingest_stopped_by_an_error_resumes_unless_the_documents_or_settings_changed(
    tmp_path, corpus, embed_model, caplog
):
    folder = tmp_path / "index"
    docs = load_corpus(corpus)

    def stop() -> None:  # the corpus fails at its tenth record: two batches are written
        def failing():
            yield from docs[: 2 * BATCH + 1]
            raise InputDataError("bad record")

        with pytest.raises(InputDataError, match="bad record"):
            build_index(failing(), folder, embed_model=embed_model, vector_store="lancedb", batch_size=BATCH,
                        show_progress=False)  # fmt: skip
        assert len(json.loads((folder / RESUME_FILE).read_text(encoding="utf-8"))["batches"]) == 2

    stop()
    changed = [docs[0], docs[2], docs[1], *docs[3:10]]  # the first batch is not the interrupted ingest's
    with pytest.raises(InputDataError, match="differ from those of the interrupted ingest.*run the ingest again"):
        build_index(iter(changed), folder, embed_model=embed_model, vector_store="lancedb", batch_size=BATCH)
    assert not (folder / RESUME_FILE).exists() and not (folder / KV_DIR).exists()  # dropped, nothing in place
    stop()
    index = build_index(
        changed, folder, embed_model=embed_model, vector_store="lancedb", batch_size=BATCH, show_progress=False
    )  # a list is read again: the ingest starts over by itself
    assert "Starting over" in caplog.text and index_size(index)[0] == len(changed)
    assert {key[0] for key in contents(folder, embed_model)} == {d.doc_id for d in changed}

    stop()  # beside the index just built
    caplog.clear()
    index = build_index(
        docs,
        folder,
        embed_model=embed_model,
        vector_store="lancedb",
        batch_size=BATCH,
        chunk_size=200,
        show_progress=False,
    )  # other chunking: another ingest, nothing resumed
    assert "resuming" not in caplog.text and index_size(index)[0] == N_DOCS
    assert not (folder / RESUME_FILE).exists() and [len(names) for names in folder_files(folder)] == [1, 1]
