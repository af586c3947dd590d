"""`kgplus query/retrieve --glossary FILE --mode ...` on the bundled sample docs and glossary (real models)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama_index_kgplus import load_corpus, sample
from llama_index_kgplus.cli import main

GLOSSARY = str(sample.sample_glossary_path())
QUESTION = "How do I write a list comprehension with a condition?"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("glossary-cli") / "index"
    assert main(["ingest", str(sample.SAMPLE_DOCS), "--index", str(path)]) == 0
    return path


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.mark.model  # the CLI loads the real embedding model
def test_retrieve_with_glossary_in_original_mode_needs_no_llm(index_dir, capsys):
    capsys.readouterr()
    code = main(
        [
            "retrieve",
            QUESTION,
            "--index",
            str(index_dir),
            "--glossary",
            GLOSSARY,
            "--mode",
            "original",
            "--top-k",
            "3",
            "--json",
        ]
    )
    assert code == 0
    [record] = json_lines(capsys.readouterr().out)
    assert record["original_query"] == record["rewritten_query"] == QUESTION
    assert record["glossary_terms"][0] == "list comprehension"
    assert record["fallback_reason"] is None and record["retrieval_mode"] == "original"
    ids = {d.id_ for d in load_corpus(sample.SAMPLE_DOCS)}
    assert len(record["sources"]) == 3
    for src in record["sources"]:
        assert src["id"] in ids and src["level"] == 0 and src["text"] and isinstance(src["score"], float)


@pytest.mark.model  # the CLI loads the real embedding model
def test_without_glossary_the_record_is_unchanged(index_dir, capsys):
    capsys.readouterr()
    assert main(["retrieve", QUESTION, "--index", str(index_dir), "--top-k", "2", "--json"]) == 0
    [record] = json_lines(capsys.readouterr().out)
    assert record["rewritten_query"] is None and record["glossary_terms"] == []
    assert "fallback_reason" not in record


@pytest.mark.model  # the CLI loads the real embedding model
def test_questions_file_gives_one_line_each(index_dir, tmp_path, capsys):
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"question": "What is a virtual environment?"}\n{"question": "How do I raise an exception?"}\n',
        encoding="utf-8",
    )
    capsys.readouterr()
    args = [
        "retrieve",
        "--questions",
        str(questions),
        "--index",
        str(index_dir),
        "--glossary",
        GLOSSARY,
        "--mode",
        "original",
    ]
    assert main(args) == 0
    records = json_lines(capsys.readouterr().out)
    assert [r["original_query"] for r in records] == ["What is a virtual environment?", "How do I raise an exception?"]
    assert "virtual environment" in records[0]["glossary_terms"]


def test_bad_glossary_is_one_clear_error(index_dir, tmp_path, capsys):
    bad = tmp_path / "g.json"
    bad.write_text('{"terms": [\n {"term": "a"}]}', encoding="utf-8")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:  # rejected while parsing the arguments, before any model loads
        main(["retrieve", QUESTION, "--index", str(index_dir), "--glossary", str(bad)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Loading" not in err
    assert "error: argument --glossary: " in err and "g.json:2:2: terms[0] ('a'): missing key(s) 'explanation'" in err


def test_bad_mode_is_rejected(index_dir, capsys):
    with pytest.raises(SystemExit):
        main(["retrieve", QUESTION, "--index", str(index_dir), "--glossary", GLOSSARY, "--mode", "both"])
    assert "invalid choice: 'both'" in capsys.readouterr().err


@pytest.mark.slow
def test_query_with_glossary_and_the_local_llm(index_dir, capsys):
    capsys.readouterr()
    args = [
        "query",
        QUESTION,
        "--index",
        str(index_dir),
        "--glossary",
        GLOSSARY,
        "--top-k",
        "1",
        "--json",
        "--llm",
        "qwen2.5-coder-0.5b",
    ]
    assert main(args) == 0
    [record] = json_lines(capsys.readouterr().out)
    assert set(record) >= {"answer", "original_query", "rewritten_query", "glossary_terms", "sources"}
    assert record["answer"].strip() and record["retrieval_mode"] == "fused"
    if record["fallback_reason"] is not None:
        assert record["rewritten_query"] == QUESTION
    assert len(record["sources"]) == 1  # fused keeps as many as one retrieval returns
