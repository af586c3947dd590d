"""``kgplus route`` and ``kgplus ask``: the JSON contracts, over real sources (the bundled UMLS graph imported into
an embedded store, the bundled tables, an ingested index) and the real models."""

from __future__ import annotations

import json

import pytest

from llama_index_kgplus._sample import SAMPLE_STOCKS_TABLE
from llama_index_kgplus.cli import main
from llama_index_kgplus.sample import SAMPLE_DOCS, SAMPLE_WEATHER_TABLE

TABLES = ["--table", f"weather={SAMPLE_WEATHER_TABLE}", "--table", f"stocks={SAMPLE_STOCKS_TABLE}"]


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.mark.model
def test_route_prints_the_contract_for_every_question(kg_store, tmp_path, capsys):
    questions = tmp_path / "q.jsonl"
    asked = [
        "What was the total precipitation in 2014?",
        "How is a virus related to a disease or syndrome?",
        "What are the main themes of the whole collection?",
    ]
    questions.write_text("".join(json.dumps({"question": q}) + "\n" for q in asked))
    assert main(["route", "--questions", str(questions), "--kg-store", kg_store, *TABLES]) == 0
    records = _lines(capsys.readouterr().out)
    assert [r["question"] for r in records] == asked
    for record in records:
        assert {"question", "route", "engine", "scores", "reason"} <= set(record)
        assert set(record["scores"]) == {"local", "multihop", "global", "kg", "sql"}
    sql, kg, whole = records
    assert (sql["route"], sql["engine"], sql["fallback"]) == ("sql", "text_to_sql", None)
    assert "column precipitation" in sql["features"]["table terms"]
    assert (kg["route"], kg["engine"]) == ("kg", "kg_paths")
    assert kg["features"]["knowledge-graph entities"] == ["virus", "disease or syndrome"]
    # no GraphRAG store given: the route stays "global", another engine would answer, and the record says so
    assert whole["route"] == "global" and whole["engine"] in {"kg_paths", "text_to_sql"}
    assert "no global engine is configured" in whole["fallback"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["route", "Q?"], "Give at least one source"),
        (["route", "Q?", "--table", "weather"], "give NAME=PATH"),
        (["route", "Q?", "--table", "1w=x.csv"], "give NAME=PATH"),
        (["route", "Q?", "--table", "w=/no/such.csv"], "no file at /no/such.csv"),
        (["route", "Q?", "--table", f"w={SAMPLE_WEATHER_TABLE}", "--table", f"w={SAMPLE_STOCKS_TABLE}"], "already"),
        (["route", "Q?", "--graphrag", "/tmp"], "holds no GraphRAG index"),
        (["route", "Q?", "--index", "/no/such/index"], "index"),
        (["ask"], "Give either a QUESTION or --questions"),
    ],
)
def test_bad_sources_fail_in_one_line_before_any_model_loads(args, message, cli_error):
    assert message in cli_error(args)


@pytest.mark.slow
def test_ask_answers_table_and_document_questions(tmp_path, capsys):
    index = tmp_path / "index"
    assert main(["ingest", str(SAMPLE_DOCS), "--index", str(index)]) == 0
    questions = tmp_path / "q.jsonl"
    asked = ["How many days of snow were there in 2012?", "How do I create a virtual environment?"]
    questions.write_text("".join(json.dumps({"question": q}) + "\n" for q in asked))
    capsys.readouterr()
    args = [
        "ask",
        "--questions",
        str(questions),
        "--index",
        str(index),
        *TABLES,
        "--llm",
        "qwen2.5-coder-0.5b",
        "--top-k",
        "2",
    ]
    args += ["--context-budget", "256"]
    assert main(args) == 0
    table, local = _lines(capsys.readouterr().out)
    for record in (table, local):
        assert {"answer", "route", "engine", "sources", "usage"} <= set(record) and record["answer"]
        assert record["usage"]["llm_calls"] >= 1
    assert (table["route"], table["engine"]) == ("sql", "text_to_sql")
    assert table["sql"].startswith("SELECT") and table["refused"] is None and table["rows"] == [[21]]
    assert table["sources"][0]["text"].startswith("SQL: SELECT")
    assert (local["route"], local["engine"]) == ("local", "vector_index") and "sql" not in local
    assert "tutorial/venv" in {s["id"] for s in local["sources"]}


@pytest.mark.model
def test_ask_answers_a_global_question_from_a_graphrag_store(tmp_path, capsys):
    """The rule-based stand-in LLM of ``graphrag.testing`` builds the store and answers (no language model
    needed to test that the route reaches GraphRAG's global search and its sources come back)."""
    rule_llm = "llama_index_kgplus.graphrag._testing:RuleBasedGraphRAGLLM"
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        json.dumps({"id": "a", "title": "Rivers", "text": "The Amazon River crosses Brazil. Brazil borders Peru."})
        + "\n"
        + json.dumps({"id": "b", "title": "Peru", "text": "Peru lies on the Pacific. Lima is the capital of Peru."})
        + "\n"
    )
    store = tmp_path / "graphrag"
    assert main(["graphrag", "index", str(corpus), "--store", str(store), "--llm", rule_llm, "--quiet"]) == 0
    capsys.readouterr()
    question = "What are the main themes across all of these documents about Peru and Brazil?"
    assert main(["ask", question, "--graphrag", str(store), "--llm", rule_llm, "--json"]) == 0
    [record] = _lines(capsys.readouterr().out)
    assert (record["route"], record["engine"]) == ("global", "graphrag_global")
    assert record["answer"] and record["sources"] and record["usage"]["llm_calls"] >= 1
    assert {s["id"] for s in record["sources"]} <= {"a", "b"}
