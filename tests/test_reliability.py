"""What the pack guarantees under bad input and faults: one-line errors before any model loads, caches that hold
data and never code, and state files that a ``kill -9`` leaves old or new, never broken or mixed."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _corpora import sample_head

from llama_index_kgplus.cli import main
from llama_index_kgplus.errors import InputDataError

PACKAGE = Path(__file__).resolve().parents[1] / "llama_index_kgplus"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    lines = [
        {"id": "venv", "title": "Virtual environments", "text": "A virtual environment keeps the packages of one project apart. Create it with python -m venv."},
        {"id": "gil", "title": "GIL", "text": "The global interpreter lock lets one thread run Python bytecode at a time."},
        {"id": "dict", "title": "Dictionaries", "text": "A dictionary maps keys to values. Keys must be hashable."},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- the catalogue of bad input


def _catalogue(tmp: Path, corpus: Path) -> list[tuple[list[str], str]]:
    """(command line, expected message) for bad input refused before any model loads."""
    a_file = tmp / "a-file.txt"
    a_file.write_text("x")
    other = tmp / "other-files"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    read_only = tmp / "read-only"
    read_only.mkdir()
    read_only.chmod(stat.S_IRUSR | stat.S_IXUSR)
    deep = tmp / "deep.json"
    deep.write_text('{"terms": ' + "[" * 100_000 + "]" * 100_000 + "}")
    questions = tmp / "q.jsonl"
    questions.write_text('{"question": ["what", "is"]}\n')
    dataset = tmp / "dataset.jsonl"
    dataset.write_text('{"question": "q?", "answers": ["x"]}\n')
    bad_docs = tmp / "bad.jsonl"
    bad_docs.write_text('{"id": "a", "text": {"body": "x"}}\n')
    index = str(tmp / "index")
    return [
        (["ingest", str(corpus), "--index", str(a_file)], "is a file; give a folder"),
        (["ingest", str(corpus), "--index", "/"], "is a folder of other files (it has no docstore.json)"),
        (["ingest", str(corpus), "--index", str(other)], "is a folder of other files"),
        (["ingest", str(corpus), "--index", str(read_only / "index")], "is not writable"),
        (["ingest", str(corpus), "--index", index, "--chunk-size", "0"], "--chunk-size: takes a number of at least 1, not 0"),
        (["ingest", str(corpus), "--index", index, "--chunk-size", "64", "--chunk-overlap", "64"], "--chunk-overlap (64) must be smaller than --chunk-size (64)"),
        (["ingest", str(corpus), "--index", index, "--chunk-overlap", "-1"], "--chunk-overlap: takes a number of at least 0, not -1"),
        (["ingest", str(bad_docs), "--index", index], ':1: "text" must be a string, not an object'),
        (["retrieve", "q", "--index", index, "--top-k", "0"], "--top-k: takes a number of at least 1, not 0"),
        (["retrieve", "q", "--index", index, "--top-k", "-3"], "--top-k: takes a number of at least 1, not -3"),
        (["retrieve", "q", "--index", index, "--top-k", "many"], "--top-k: 'many' is not a whole number"),
        (["retrieve", "--questions", str(questions), "--index", index], ':1: "question" must be a string, not a list'),
        (["retrieve", "q", "--index", index, "--glossary", str(deep)], "nested too deeply"),
        (["retrieve", "q", "--index", index, "--retrieval", "graph", "--damping", "1.5"], "--damping: takes a number from 0 up to (not including) 1"),
        (["kg", "paths", "a and b", "--store", "neo4j://[::1"], "is not a valid URI (Invalid IPv6 URL)"),
        (["kg", "paths", "a and b", "--store", "ladybug:///tmp/kg.lbug?mode=ro"], "take no ?query or #fragment"),
        (["kg", "paths", "a and b", "--store", f"ladybug://{tmp}/missing/kg.lbug"], "does not exist"),
        (["graphrag", "query", "q", "--store", str(tmp / "gr"), "--level", "-1"], "--level: takes a number of at least 0, not -1"),
        (["eval", "--dataset", str(questions), "--pipelines", "baseline", "--out", str(tmp / "ev"), "--top-k", "0"], "--top-k: takes a number of at least 1"),
        (["retrieve", "q", "--index", str(tmp / "no-index")], "holds no index: build one with `kgplus ingest"),
        (["eval", "--dataset", str(dataset), "--pipelines", "baseline", "--out", str(tmp / "ev"), "--corpus", str(tmp / "nope.jsonl")], "nope.jsonl does not exist"),
        (["eval", "--dataset", str(dataset), "--pipelines", "baseline", "--out", str(other), "--corpus", str(corpus)], "--out"),
        (["query", "q", "--index", str(other)], "holds no index: build one with `kgplus ingest"),
    ]  # fmt: skip


def _one_line_error(argv: list[str], capsys) -> str:
    """The one-line error of ``kgplus ARGV`` (exit 2, no traceback)."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "unexpected" not in err, (argv, err)
    return err


def test_bad_input_gets_one_line_and_exit_2_before_any_model_loads(tmp_path, corpus, capsys, monkeypatch):
    from llama_index_kgplus.llm import _local

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded before the input was checked")

    monkeypatch.setattr(_local, "local_embed_model", no_model)
    monkeypatch.setattr(_local, "local_llm", no_model)
    for argv, expected in _catalogue(tmp_path, corpus):
        assert expected in _one_line_error(argv, capsys), argv
    assert not (tmp_path / "missing").exists()  # a mistyped store path creates nothing


def test_an_unexpected_error_is_one_line_with_a_hint_and_debug_shows_the_traceback(monkeypatch, capsys):
    from llama_index_kgplus.cli import _setup

    def broken(args):
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setattr(_setup, "_doctor", broken)  # registered when the parser is built
    assert main(["doctor"]) == 1
    err = capsys.readouterr().err
    assert (
        err == "kgplus: unexpected error: ZeroDivisionError: division by zero (re-run with --debug for the traceback)\n"
    )
    with pytest.raises(ZeroDivisionError):
        main(["doctor", "--debug"])


# ----------------------------------------------------------------------------- caches hold data, never code


def test_no_pickle_of_anything_read_from_disk_in_the_package():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(
                r"\bpickle\.loads?\(|\bimport pickle\b|allow_pickle\s*=\s*True|\bjoblib\.load\(|\bdill\b", line
            ):
                offenders.append(f"{path.relative_to(PACKAGE)}:{lineno}: {line.strip()}")
    assert offenders == []


class _Payload:
    def __reduce__(self):
        return (os.system, ("touch /tmp/kgplus-pwned",))


def test_a_planted_cache_never_runs_code_and_stored_text_never_becomes_a_path(tmp_path, caplog):
    from llama_index_kgplus.kg import KnowledgeGraph, import_kg
    from llama_index_kgplus.kg._graph import manifest_key

    nodes, rels = tmp_path / "nodes.csv", tmp_path / "rels.csv"
    nodes.write_text("cid:ID,name,:LABEL\nA,alpha,T\nB,beta,T\n")
    rels.write_text(":START_ID,:END_ID,:TYPE\nA,B,TREATS\n")
    uri = f"ladybug://{tmp_path / 'kg.lbug'}"
    import_kg(uri, nodes, rels)
    Path("/tmp/kgplus-pwned").unlink(missing_ok=True)
    with KnowledgeGraph.open(uri) as kg:
        # a hostile manifest: the import id tries to walk out of the cache folder
        manifest = kg.manifest.model_copy(update={"import_id": "x/../../../../tmp/att/planted"})
        kg.dialect.write_meta(kg.store, manifest_key("Ent"), manifest.model_dump_json())
        kg.refresh()
        cache = kg.matcher_cache_path()
        assert cache.parent == kg.cache_dir and re.fullmatch(r"entity-matcher-[0-9a-f]{32}\.json", cache.name)
        # planted files: a pickle under the old name and a JSON of the right shape with code-like payloads
        (kg.cache_dir / "entity-matcher-x.pkl").write_bytes(pickle.dumps(_Payload()))
        cache.write_text(json.dumps({"format": "kgplus-entity-matcher/2", "import_id": manifest.import_id,
                                     "params": {"min_length": 1, "ambiguous": "all"}, "n_entities": 1,
                                     "matcher": {"format": "kgplus-phrase-matcher/2",
                                                 "entries": [["alpha", [{"__reduce__": "os.system"}]]]}}))  # fmt: skip
        assert [m.cid for m in kg.entity_matcher().find("alpha and beta")] == ["A", "B"]  # rebuilt from the store
        assert "Rebuilding the entity dictionary" in caplog.text
        assert json.loads(cache.read_text())["import_id"] == manifest.import_id
    assert not Path("/tmp/kgplus-pwned").exists()
    assert not (tmp_path / "att").exists() and not Path("/tmp/att/planted").exists()


# ----------------------------------------------------------------------------- crash consistency of an index

_CRASH_AFTER_REPLACES = textwrap.dedent(
    """
    import os, signal, sys
    from llama_index_kgplus import load_corpus
    from llama_index_kgplus import build_index
    from llama_index_kgplus.llm import embed_model_from_spec

    limit, calls = int(sys.argv[3]), [0]
    real_replace = os.replace

    def replace_then_die(src, dst):
        if calls[0] == limit:
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9 between two renames of the persist
        calls[0] += 1
        real_replace(src, dst)

    os.replace = replace_then_die
    build_index(load_corpus(sys.argv[1]), sys.argv[2], embed_model=embed_model_from_spec(),
                chunk_size=int(sys.argv[4]), show_progress=False)
    """
)


def _retrieved_ids(index_dir: Path, embed_model) -> set[str]:
    from llama_index_kgplus import load_index

    index = load_index(index_dir, embed_model=embed_model)
    return {n.node_id for n in index.as_retriever(similarity_top_k=50).retrieve("virtual environment")}


@pytest.mark.parametrize(
    ("kill_after", "survivor"),
    [(0, "old"), (1, "new"), (3, "new"), (5, "new")],  # rename 0 seals the staging folder, the others move files
)
def test_kill_9_during_a_re_ingest_leaves_the_old_or_the_new_index(tmp_path, corpus, embed_model, kill_after, survivor):
    from llama_index_kgplus import build_index, load_corpus, load_index

    index_dir = tmp_path / "index"
    old = build_index(load_corpus(corpus), index_dir, embed_model=embed_model, chunk_size=512, show_progress=False)
    old_ids = set(old.docstore.docs)
    script = tmp_path / "crash.py"
    script.write_text(_CRASH_AFTER_REPLACES)
    run = subprocess.run([sys.executable, str(script), str(corpus), str(index_dir), str(kill_after), "64"],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert run.returncode == -9, run.stderr[-2000:]
    index = load_index(index_dir, embed_model=embed_model)  # finishes or drops the interrupted persist
    ids = set(index.docstore.docs)
    assert ids == old_ids if survivor == "old" else (ids and not ids & old_ids)  # never a mix
    assert _retrieved_ids(index_dir, embed_model) <= ids and _retrieved_ids(index_dir, embed_model)
    assert not (index_dir / ".ingest-staging").exists()


def test_index_files_from_another_ingest_are_refused(tmp_path, corpus, embed_model):
    from llama_index_kgplus import build_index, load_corpus, load_index
    from llama_index_kgplus.hierarchy import HierarchicalRetriever
    from llama_index_kgplus.hierarchy._retriever import write_manifest

    docs = load_corpus(corpus)
    first = build_index(docs, tmp_path / "a", embed_model=embed_model, show_progress=False)
    write_manifest(tmp_path / "a", list(first.docstore.docs.values()))
    build_index(docs, tmp_path / "b", embed_model=embed_model, show_progress=False)
    (tmp_path / "a" / "default__vector_store.json").write_bytes(
        (tmp_path / "b" / "default__vector_store.json").read_bytes()
    )
    with pytest.raises(InputDataError, match="is not the file the last ingest wrote"):
        load_index(tmp_path / "a", embed_model=embed_model)
    # a re-ingest removes the old hierarchy.json with the old index; one copied back in is refused
    stale = (tmp_path / "a" / "hierarchy.json").read_bytes()
    build_index(docs, tmp_path / "a", embed_model=embed_model, show_progress=False)
    assert not (tmp_path / "a" / "hierarchy.json").exists()
    (tmp_path / "a" / "hierarchy.json").write_bytes(stale)
    with pytest.raises(InputDataError, match="belongs to another ingest of this index"):
        HierarchicalRetriever.from_persist_dir(tmp_path / "a", embed_model=embed_model)
    (tmp_path / "a" / "hierarchy.json").write_text("[1, 2")
    with pytest.raises(InputDataError, match="is not valid JSON"):
        HierarchicalRetriever.from_persist_dir(tmp_path / "a", embed_model=embed_model)


# ---------------------------------------------------------- crash consistency of an ingest with its graph and hierarchy

# A process killed (kill -9) just before the NTH rename of a file named NAME: every file of an index reaches its
# place by a rename, so these are the moments where the folder changes. Then `kgplus ARGS...` (or, with
# `entity-graph DIR`, one document deleted from the entity graph of the index in DIR, persisted again).
_KILL_AT_RENAME = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from llama_index_kgplus.cli import main

    name, nth, seen = sys.argv[1], int(sys.argv[2]), [0]
    real_replace = os.replace

    def replace_or_die(src, dst):
        if Path(dst).name == name:
            seen[0] += 1
            if seen[0] == nth:
                os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst)

    os.replace = replace_or_die
    if sys.argv[3] == "entity-graph":
        from llama_index_kgplus import EntityGraph

        graph = EntityGraph.load(sys.argv[4])
        graph.delete_ref_doc("Teutberga")
        graph.persist(sys.argv[4])
    else:
        sys.exit(main(sys.argv[3:]))
    """
)


def _ingest_argv(corpus: Path, index_dir: Path) -> list[str]:
    return ["ingest", str(corpus), "--index", str(index_dir), "--entities", "titles", "--hierarchy", "semantic",
            "--summarizer", "extractive"]  # fmt: skip


@pytest.fixture(scope="module")
def multihop_index(tmp_path_factory, embed_model) -> tuple[Path, Path]:
    """The first 30 passages of the multi-hop sample ingested with title entities and semantic summaries, and a
    corpus of the first 10 to ingest again over it."""
    folder = tmp_path_factory.mktemp("multihop")
    corpus, again = sample_head(folder / "30.jsonl", 30), sample_head(folder / "10.jsonl", 10)
    assert main(_ingest_argv(corpus, folder / "index")) == 0
    return again, folder / "index"


def _whole_index(index_dir: Path, embed_model) -> set[str]:
    """The node ids of the index in ``index_dir``, checked to load with its own entity graph and hierarchy."""
    from llama_index_kgplus import EntityGraph, load_index
    from llama_index_kgplus.hierarchy._retriever import manifest_root_ids

    index = load_index(index_dir, embed_model=embed_model)  # finishes or drops an interrupted switch
    graph = EntityGraph.load(index_dir, index_id=index.index_id)
    assert graph.index_id == index.index_id and set(graph.passage_ids) <= set(index.docstore.docs)
    assert manifest_root_ids(index_dir, index.docstore)  # hierarchy.json of this index: its roots are in it
    return set(index.docstore.docs)


@pytest.mark.parametrize(
    ("name", "nth", "survivor"),
    [
        ("entity_graph.npz", 1, "old"),  # the new entity graph written
        ("hierarchy.json", 1, "old"),  # the new hierarchy written
        ("ingest.json", 1, "old"),  # the seal of the new index
        ("docstore.json", 1, "new"),  # the switch begun
        ("ingest.json", 2, "new"),  # the switch's last rename
    ],
)
def test_kill_9_during_a_re_ingest_with_entities_and_hierarchy_leaves_a_whole_index(
    tmp_path, multihop_index, embed_model, capsys, name, nth, survivor
):
    import shutil

    corpus, built = multihop_index
    index_dir = tmp_path / "index"
    shutil.copytree(built, index_dir)
    old_ids = _whole_index(index_dir, embed_model)
    script = tmp_path / "kill.py"
    script.write_text(_KILL_AT_RENAME)
    run = subprocess.run([sys.executable, str(script), name, str(nth), *_ingest_argv(corpus, index_dir)],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert run.returncode == -9, run.stderr[-2000:]
    ids = _whole_index(index_dir, embed_model)
    assert ids == old_ids if survivor == "old" else (ids and not ids & old_ids)  # never a mix
    assert not (index_dir / ".ingest-staging").exists()
    capsys.readouterr()
    for retrieval in ("graph", "evidence"):
        assert main(["retrieve", "Who was Teutberga married to?", "--index", str(index_dir), "--json",
                     "--retrieval", retrieval]) == 0  # fmt: skip
        sources = json.loads(capsys.readouterr().out)["sources"]
        assert sources and "Teutberga" in {s["id"] for s in sources}, retrieval


@pytest.mark.parametrize(
    ("name", "nth", "survivor"),
    [
        ("entity_graph.npz", 1, "old"),
        ("ingest.json", 1, "old"),
        ("entity_graph.npz", 2, "new"),
        ("ingest.json", 2, "new"),
    ],
)
def test_kill_9_while_the_entity_graph_of_an_index_is_persisted_again(
    tmp_path, multihop_index, embed_model, name, nth, survivor
):
    """A file of the index written on its own joins it as an ingest's files do: staged (rename 1), sealed with the
    stamp of the index (ingest.json 1), moved into place (rename 2) and the stamp with it (ingest.json 2)."""
    import shutil

    from llama_index_kgplus import EntityGraph

    index_dir = shutil.copytree(multihop_index[1], tmp_path / "index")
    ids = _whole_index(index_dir, embed_model)
    script = tmp_path / "kill.py"
    script.write_text(_KILL_AT_RENAME)
    run = subprocess.run([sys.executable, str(script), name, str(nth), "entity-graph", str(index_dir)],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert run.returncode == -9, run.stderr[-2000:]
    assert _whole_index(index_dir, embed_model) == ids  # the same index, its stamp matching its files
    doc_ids = set(EntityGraph.load(index_dir).passage_doc_ids)
    assert ("Teutberga" in doc_ids) == (survivor == "old") and len(doc_ids) == 30 - (survivor == "new")


# ----------------------------------------------------------------------------- one writer per index

_HOLD_WRITER_LOCK = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from llama_index_kgplus._lock import writer_lock

    with writer_lock(sys.argv[1], "kgplus ingest"):
        Path(sys.argv[2]).touch()
        time.sleep(600)
    """
)


def _wait_for(path: Path, proc: subprocess.Popen, seconds: float = 300) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
        time.sleep(0.05)


def test_a_second_writer_is_refused_naming_the_first_and_a_killed_writer_leaves_no_lock(
    tmp_path, corpus, capsys, monkeypatch
):
    from llama_index_kgplus import EntityGraph, GraphRAGIndex, _indexing, build_index, load_corpus
    from llama_index_kgplus._files import sha256_file
    from llama_index_kgplus._indexing import check_index_files
    from llama_index_kgplus._lock import writer_lock
    from llama_index_kgplus.graphrag._testing import RuleBasedGraphRAGLLM
    from llama_index_kgplus.hierarchy._retriever import write_manifest

    index_dir, held = tmp_path / "index", tmp_path / "held"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_WRITER_LOCK, str(index_dir), str(held)],
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        _wait_for(held, holder)
        busy = f"{index_dir} is being written by process {holder.pid} (kgplus ingest): one writer per folder"
        # refused at once, before any model loads (a fast-tier test fails if one does)
        for argv in (["ingest", str(corpus), "--index", str(index_dir)],
                     ["graphrag", "index", str(corpus), "--store", str(index_dir)]):  # fmt: skip
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and busy in err, err
        docs = load_corpus(corpus)
        for write in (
            lambda: build_index(docs, index_dir),
            lambda: EntityGraph().persist(index_dir),
            lambda: write_manifest(index_dir, []),
            lambda: GraphRAGIndex.from_defaults(index_dir, llm=RuleBasedGraphRAGLLM(), show_progress=False).build(docs),
        ):
            with pytest.raises(InputDataError, match=re.escape(busy)):
                write()
        assert sorted(p.name for p in index_dir.iterdir()) == [".kgplus-writer.lock"]  # nothing written
        # a reader leaves the staging folder of a live writer alone, and waits for one it is moving into place
        staging = index_dir / ".ingest-staging"
        staging.mkdir()
        (staging / "docstore.json").write_text("{}")
        assert check_index_files(index_dir) is None and (staging / "docstore.json").is_file()
        (staging / "ingest.json").write_text(
            json.dumps({"ingest_id": "new", "files": {"docstore.json": sha256_file(staging / "docstore.json")}})
        )
        monkeypatch.setattr(_indexing, "_SWITCH_WAIT", 0.5)
        with pytest.raises(InputDataError, match="is being switched to a new index by another process"):
            check_index_files(index_dir)
        assert (staging / "ingest.json").is_file()
    finally:
        holder.kill()  # kill -9: the lock goes with the process
        holder.wait()
    assert check_index_files(index_dir)["ingest_id"] == "new"  # the dead writer's sealed index, moved into place
    assert not staging.exists()
    with writer_lock(index_dir, "the next writer"):
        pass


def test_the_writer_lock_belongs_to_the_call_chain_that_took_it(tmp_path, monkeypatch):
    import asyncio
    import threading

    from llama_index_kgplus._lock import writer_lock
    from llama_index_kgplus._sync import run_sync

    async def write_again() -> str:
        with writer_lock(tmp_path, "inner"):
            return "taken again"

    async def from_a_running_loop() -> str:
        return run_sync(write_again())  # runs in a worker thread, in a copy of this context

    refused: list[str] = []

    def other_thread(folder: Path = tmp_path) -> None:
        try:
            with writer_lock(folder, "other"):
                refused.append("not refused")
        except InputDataError as exc:
            refused.append(str(exc))

    with writer_lock(tmp_path, "outer"):
        assert run_sync(write_again()) == "taken again"
        assert asyncio.run(from_a_running_loop()) == "taken again"
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert f"is being written by this process (pid {os.getpid()}, outer)" in refused[0]
    with writer_lock(tmp_path / "new" / "folder", "a writer that writes nothing"):
        assert (tmp_path / "new" / "folder").is_dir()
    assert not (tmp_path / "new").exists()  # an unused folder is not left behind
    # ~ is expanded as for the write it guards: the lock of ~/index is the one persist_index("~/index") takes
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with writer_lock("~/index", "home"):
        assert (tmp_path / "index" / ".kgplus-writer.lock").is_file() and not (tmp_path / "~").exists()
        thread = threading.Thread(target=other_thread, args=(tmp_path / "index",))
        thread.start()
        thread.join()
    assert f"{tmp_path / 'index'} is being written by this process (pid {os.getpid()}, home)" in refused[1]


# `kgplus ingest` in a process of its own, paused (holding the lock, nothing switched yet) at its first rename
# until the file RELEASE appears
_PAUSED_INGEST = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from llama_index_kgplus.cli import main

    paused, release = Path(sys.argv[1]), Path(sys.argv[2])
    real_replace = os.replace

    def pause_then_replace(src, dst):
        os.replace = real_replace
        paused.touch()
        while not release.exists():
            time.sleep(0.05)
        real_replace(src, dst)

    os.replace = pause_then_replace
    sys.exit(main(sys.argv[3:]))
    """
)


def test_two_concurrent_ingests_into_one_index_one_is_refused_and_nothing_is_lost(tmp_path, corpus, embed_model):
    from llama_index_kgplus import build_index, load_corpus, load_index

    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "other", "title": "Other", "text": "Another corpus entirely."}) + "\n")
    index_dir, paused, release = tmp_path / "index", tmp_path / "paused", tmp_path / "release"
    build_index(load_corpus(other), index_dir, embed_model=embed_model, show_progress=False)  # both re-ingest
    script = tmp_path / "paused.py"
    script.write_text(_PAUSED_INGEST)
    first = subprocess.Popen([sys.executable, str(script), str(paused), str(release), "ingest", str(corpus),
                              "--index", str(index_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    cli = [sys.executable, "-m", "llama_index_kgplus.cli", "ingest", str(other), "--index", str(index_dir)]
    try:
        _wait_for(paused, first)
        second = subprocess.run(cli, capture_output=True, text=True, timeout=300)
        assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
        assert f"is being written by process {first.pid} (kgplus ingest)" in second.stderr
        release.touch()
        assert first.wait(timeout=300) == 0, first.communicate()[1][-2000:]
    finally:
        first.kill()
        first.communicate()

    def doc_ids() -> set[str]:
        index = load_index(index_dir, embed_model=embed_model)
        return {n.metadata["doc_id"] for n in index.docstore.docs.values()}

    assert doc_ids() == {"venv", "gil", "dict"}  # the first writer's corpus, whole
    assert subprocess.run(cli, capture_output=True, text=True, timeout=300).returncode == 0  # its lock went with it
    assert doc_ids() == {"other"}


# ----------------------------------------------------------------------------- crash consistency of a graph import

_KILL_DURING_IMPORT = textwrap.dedent(
    """
    import os, signal, sys
    from llama_index_kgplus.graph_stores._dialect_ladybug import LadybugDialect
    from llama_index_kgplus.kg import import_kg

    real = getattr(LadybugDialect, sys.argv[4])

    def write_then_die(self, *args, **kwargs):
        real(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)  # kill -9 with the new graph half written

    setattr(LadybugDialect, sys.argv[4], write_then_die)
    import_kg(sys.argv[1], sys.argv[2], sys.argv[3], replace=True)
    """
)


def _toy_graph(folder: Path, names: tuple[str, str]) -> tuple[Path, Path]:
    folder.mkdir(exist_ok=True)
    nodes, rels = folder / "nodes.csv", folder / "rels.csv"
    nodes.write_text(f"cid:ID,name,:LABEL\nA,{names[0]},T\nB,{names[1]},T\n")
    rels.write_text(":START_ID,:END_ID,:TYPE\nA,B,TREATS\n")
    return nodes, rels


def _paths(uri: str, text: str) -> list[str]:
    from llama_index_kgplus.kg import KGPathFinder, KnowledgeGraph

    with KnowledgeGraph.open(uri) as kg:
        return [p.text for p in KGPathFinder.from_defaults(kg).find(text).paths]


@pytest.mark.parametrize("killed_in", ["write_nodes", "write_relationships", "write_meta"])
def test_kill_9_during_kg_import_replace_keeps_the_old_graph(tmp_path, killed_in):
    from llama_index_kgplus.kg import import_kg

    uri = f"ladybug://{tmp_path / 'kg.lbug'}"
    import_kg(uri, *_toy_graph(tmp_path / "old", ("alpha", "beta")))
    assert _paths(uri, "alpha and beta") == ["alpha -[TREATS]-> beta"]
    new_nodes, new_rels = _toy_graph(tmp_path / "new", ("gamma", "delta"))
    script = tmp_path / "kill.py"
    script.write_text(_KILL_DURING_IMPORT)
    run = subprocess.run([sys.executable, str(script), uri, str(new_nodes), str(new_rels), killed_in],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == -9, run.stderr[-2000:]
    assert _paths(uri, "alpha and beta") == ["alpha -[TREATS]-> beta"]  # the old graph, whole
    import_kg(uri, new_nodes, new_rels, replace=True)
    assert _paths(uri, "gamma and delta") == ["gamma -[TREATS]-> delta"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".kg.lbug")) == []


def test_a_failed_import_changes_nothing(tmp_path, monkeypatch):
    from llama_index_kgplus.graph_stores._dialect_ladybug import LadybugDialect
    from llama_index_kgplus.kg import import_kg

    uri = f"ladybug://{tmp_path / 'kg.lbug'}"
    new = _toy_graph(tmp_path / "new", ("gamma", "delta"))

    def fail(self, *args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(LadybugDialect, "write_relationships", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        import_kg(uri, *new)
    assert list(tmp_path.glob("*.lbug*")) == [] and list(tmp_path.glob(".kg.lbug*")) == []  # no empty store left
    monkeypatch.undo()
    import_kg(uri, *_toy_graph(tmp_path / "old", ("alpha", "beta")))
    monkeypatch.setattr(LadybugDialect, "write_relationships", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        import_kg(uri, *new, replace=True)
    assert _paths(uri, "alpha and beta") == ["alpha -[TREATS]-> beta"]


def test_a_manifest_with_wrong_types_is_a_clear_error(tmp_path, capsys):
    from llama_index_kgplus.kg import KnowledgeGraph, import_kg
    from llama_index_kgplus.kg._graph import manifest_key

    uri = f"ladybug://{tmp_path / 'kg.lbug'}"
    import_kg(uri, *_toy_graph(tmp_path / "g", ("alpha", "beta")))
    with KnowledgeGraph.open(uri) as kg:
        record = json.loads(kg.manifest.model_dump_json())
        kg.dialect.write_meta(kg.store, manifest_key("Ent"), json.dumps({**record, "rel_types": 7, "counts": "x"}))
    assert main(["kg", "paths", "alpha and beta", "--store", uri]) == 2
    err = capsys.readouterr().err
    assert "manifest of the knowledge graph 'Ent'" in err and "rel_types" in err and len(err.splitlines()) == 1


def test_store_paths_with_spaces_percent_signs_and_hashes(tmp_path):
    from llama_index_kgplus.graph_stores._uri import GraphStoreURI, ladybug_uri
    from llama_index_kgplus.kg import import_kg

    path = tmp_path / "my graphs #1 (100%)" / "kg.lbug"
    uri = ladybug_uri(path)
    assert GraphStoreURI.parse(uri).path == path
    import_kg(uri, *_toy_graph(tmp_path / "g", ("alpha", "beta")))
    assert path.is_file() and _paths(uri, "alpha and beta") == ["alpha -[TREATS]-> beta"]


# ----------------------------------------------------------------------------- limits: files read into memory


def _without_hanging(run, fifos: list[Path], seconds: float = 20.0):
    """``run()`` in a daemon thread; fails (and unblocks a reader left on one of ``fifos``) if it does not end."""
    import threading

    result: dict[str, object] = {}

    def target():
        try:
            result["value"] = run()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            result["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for fifo in fifos:  # a writer that closes at once gives the blocked reader end-of-file
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail(f"blocked on a FIFO for {seconds} s")
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result.get("value")


def test_fifos_devices_and_sockets_are_refused_before_they_are_opened(tmp_path, capsys):
    import socket

    from llama_index_kgplus.tables import SQLTables

    fifos = {name: tmp_path / name for name in ("docs.jsonl", "glossary.json", "questions.jsonl", "nodes.csv", "t.csv")}
    for fifo in fifos.values():
        os.mkfifo(fifo)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    sock_path = tmp_path / "s.jsonl"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    relationships = tmp_path / "rels.csv"
    relationships.write_text(":START_ID,:END_ID,:TYPE\n1,1,R\n")
    index = str(tmp_path / "index")
    cases = [
        (["ingest", str(fifos["docs.jsonl"]), "--index", index], "is a named pipe (FIFO), not a regular file"),
        (["ingest", str(sock_path), "--index", index], "is a socket, not a regular file"),
        (["retrieve", "q", "--index", index, "--glossary", str(fifos["glossary.json"])], "is a named pipe (FIFO)"),
        (["retrieve", "q", "--index", index, "--glossary", str(zero)], "zero.json is a character device"),
        (["retrieve", "q", "--index", index, "--glossary", "/dev/zero"], "/dev/zero is a character device"),
        (["retrieve", "--questions", str(fifos["questions.jsonl"]), "--index", index], "is a named pipe (FIFO)"),
        (["kg", "import", "--nodes", str(fifos["nodes.csv"]), "--relationships", str(relationships),
          "--store", f"ladybug://{tmp_path}/kg.lbug"], "nodes.csv is a named pipe (FIFO)"),
    ]  # fmt: skip
    try:
        for argv, expected in cases:
            err = _without_hanging(lambda argv=argv: _one_line_error(argv, capsys), list(fifos.values()))
            assert expected in err, (argv, err)
        with pytest.raises(InputDataError, match=r"Table 't': .*t.csv is a named pipe \(FIFO\)"):
            _without_hanging(lambda: SQLTables().add("t", fifos["t.csv"]), [fifos["t.csv"]])
    finally:
        server.close()
    assert not (tmp_path / "index").exists()


def test_a_file_over_the_size_limit_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    from llama_index_kgplus.tables import SQLTables

    monkeypatch.setenv("KGPLUS_MAX_FILE_MB", "1")
    big = "x" * (3 << 19)  # 1.5 MB
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "a", "text": big}) + "\n")
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "big.txt").write_text(big)
    glossary = tmp_path / "glossary.json"
    glossary.write_text(json.dumps({"terms": [{"term": "x", "explanation": big}]}))
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": big}) + "\n")
    index = str(tmp_path / "index")
    for argv in (
        ["ingest", str(docs), "--index", index],
        ["ingest", str(folder), "--index", index],
        ["retrieve", "q", "--index", index, "--glossary", str(glossary)],
        ["retrieve", "--questions", str(questions), "--index", index],
    ):
        err = _one_line_error(argv, capsys)
        # a JSONL corpus is read a line at a time (it may stream into LanceDB): its one line is what is too big
        assert re.search(r"is (a line of )?1.5 MB, over the 1 MB limit on (files|what is) read into memory", err), err
        assert "KGPLUS_MAX_FILE_MB" in err, err
    table = tmp_path / "t.csv"
    table.write_text("a,b\n" + "1,2\n" * 400_000)
    with pytest.raises(InputDataError, match=r"t.csv is 1.5 MB, over the 1 MB limit"):
        SQLTables().add("t", table)
    monkeypatch.setenv("KGPLUS_MAX_FILE_MB", "many")
    assert "must be a positive number of megabytes" in _one_line_error(["ingest", str(docs), "--index", index], capsys)


def test_an_empty_questions_file_is_an_error_not_a_silent_success(tmp_path, capsys):
    questions = tmp_path / "q.jsonl"
    for content in ("", "\n\n"):
        questions.write_text(content)
        err = _one_line_error(["retrieve", "--questions", str(questions), "--index", str(tmp_path / "i")], capsys)
        assert f"Questions file {questions} is empty" in err
        err = _one_line_error(
            ["kg", "ask", "--questions", str(questions), "--store", f"ladybug://{tmp_path}/kg"], capsys
        )
        assert "is empty" in err


def test_a_10_mb_single_line_document_is_split_without_the_regex_timeout(monkeypatch):
    """NLTK gives every regular expression 5 s; 10 MB in one line took longer. The limit is lowered here so that a
    1 MB line shows the same failure in a fraction of the time."""
    import nltk.redos
    from llama_index.core import Document
    from llama_index.core.embeddings import MockEmbedding

    from llama_index_kgplus._indexing import build_index
    from llama_index_kgplus._text import split_sentences

    monkeypatch.setattr(nltk.redos, "DEFAULT_TIMEOUT", 0.3)
    words = ("alpha", "beta", "gamma", "delta.", "Epsilon", "zeta,", "eta")
    text = " ".join(words[i * 7919 % 7] for i in range(160_000))  # about 1 MB, no line break
    index = build_index(
        [Document(text=text, id_="long")], None, embed_model=MockEmbedding(embed_dim=4), show_progress=False
    )
    chunks = [n.get_content() for n in index.docstore.docs.values()]
    assert len(chunks) > 100 and sum(len(c) for c in chunks) >= len(text)
    sentences = split_sentences(text)
    assert len(sentences) > 10_000 and sentences[0].startswith("alpha")


# ----------------------------------------------------------------------------- the user's broken files, named


def test_broken_table_files_are_input_errors_naming_the_file(tmp_path):
    from llama_index_kgplus.tables import SQLTables

    files = {
        "corrupt.parquet": b"PAR1" + bytes(range(256)) * 8,
        "corrupt.sqlite": b"SQLite format 3\x00" + b"\x07garbage" * 300,
        "corrupt.duckdb": b"\x00" * 8 + b"DUCK" + bytes(range(256)) * 40,
        "binary.csv": bytes(range(256)) * 12,
    }
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InputDataError) as caught:
            SQLTables().add("t", path)
        message = str(caught.value)
        assert message.startswith(f"Table 't' from {path}: ") and "\n" not in message, message
        assert "DUCKDB_INTERNAL" not in message, message


def test_a_number_too_long_to_read_is_an_input_error(tmp_path, capsys):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": ' + "9" * 5000 + ', "text": "x"}\n')
    err = _one_line_error(["ingest", str(docs), "--index", str(tmp_path / "index")], capsys)
    assert "docs.jsonl:1: a number is too long to read" in err and "write it as a string" in err
    glossary = tmp_path / "g.json"
    glossary.write_text('{"terms": [{"term": "x", "explanation": "y", "metadata": {"n": ' + "9" * 5000 + "}}]}")
    err = _one_line_error(["retrieve", "q", "--index", str(tmp_path / "index"), "--glossary", str(glossary)], capsys)
    assert "g.json: a number is too long to read" in err


@pytest.mark.parametrize("url", ["http://[::1/v1", "http://127.0.0.1:99999/v1"])
def test_a_bad_server_url_in_a_model_spec_is_a_setup_error(url):
    from llama_index_kgplus.errors import KGPlusSetupError
    from llama_index_kgplus.llm._specs import parse_model_spec

    with pytest.raises(KGPlusSetupError, match=r"server is not a valid URL \((Invalid IPv6 URL|Port out of range)"):
        parse_model_spec(f"openai-like:model@{url}")


def test_a_garbage_graphrag_state_is_an_input_error_naming_it(tmp_path, capsys):
    from llama_index_kgplus.graphrag._state import GraphRAGState

    store = tmp_path / "gr"
    store.mkdir()
    state = store / "state.sqlite"
    state.write_bytes(bytes(range(256)) * 20)
    err = _one_line_error(["graphrag", "query", "q", "--store", str(store)], capsys)
    assert f"{state} is not a readable GraphRAG state file (file is not a database)" in err
    import sqlite3

    state.unlink()
    with sqlite3.connect(state) as db:
        db.execute("CREATE TABLE photos (id INTEGER)")
    with pytest.raises(InputDataError, match="it holds other tables: photos"):
        GraphRAGState(state)
    with sqlite3.connect(state) as db:
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["photos"]  # nothing written to it


def test_a_full_disk_is_a_one_line_error(monkeypatch, capsys):
    """A full disk cannot be made here, so the write that meets it is replaced by one raising ENOSPC."""
    import errno

    from llama_index_kgplus.cli import _setup

    def full(args):
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "/data/index/docstore.json")
        except OSError as exc:
            raise RuntimeError("persisting failed") from exc

    monkeypatch.setattr(_setup, "_doctor", full)
    err = _one_line_error(["doctor"], capsys)
    assert "the disk is full writing /data/index/docstore.json: free some space and re-run" in err


# ----------------------------------------------------------------------------- large inputs show progress


def test_a_glossary_of_100_000_terms_loads_and_embeds_with_a_progress_bar(tmp_path, capsys):
    """10^5 terms gave no output in 300 s: loading validated every entry twice, and a query formatted and counted
    the tokens of every entry. Now loading is one pass, the entries are embedded behind a progress bar, and a query
    formats only the entries it selects."""
    import time

    from llama_index.core.embeddings import MockEmbedding

    from llama_index_kgplus import Glossary
    from llama_index_kgplus.glossary import GlossaryTermSelector

    n = 100_000
    terms = [
        {"term": f"term{i}", "explanation": f"Explanation {i}.", "aliases": [f"alias {i}"], "see_also": [f"term{(i + 1) % n}"]}
        for i in range(n)
    ]  # fmt: skip
    path = tmp_path / "glossary.json"
    path.write_text(json.dumps({"terms": terms}))
    counted: list[str] = []

    def tokenizer(text: str) -> list[str]:
        counted.append(text)
        return text.split()

    start = time.perf_counter()
    glossary = Glossary.load(path)
    assert len(glossary.entries) == n and glossary.get("alias 77").term == "term77"
    selector = GlossaryTermSelector.from_defaults(
        glossary,
        embed_model=MockEmbedding(embed_dim=4, embed_batch_size=2_000),
        tokenizer=tokenizer,
        cache_embeddings=False,
    )
    selection = selector.select("What do term5 and alias 7 mean?")
    elapsed = time.perf_counter() - start
    assert {e.entry.term for e in selection.entries} >= {"term5", "term7"}
    assert f"{n}/{n}" in capsys.readouterr().err  # the progress bar of the embedding
    assert len(counted) < 100  # the entries selected, not every entry
    assert elapsed < 60, elapsed  # 10 s on a busy machine (most of it the mock embedding); a hang guard
