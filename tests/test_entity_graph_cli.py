"""`kgplus ingest --entities ...` and `kgplus retrieve|query --retrieval graph` on the bundled 2WikiMultihopQA
sample (real embedding model, real spaCy pipeline), and the bad inputs of the multi-hop issue."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from llama_index_kgplus import sample
from llama_index_kgplus.cli import main
from llama_index_kgplus.entity_graph import EntityGraph
from llama_index_kgplus.entity_graph._graph import GRAPH_FILE

QUESTIONS = [json.loads(line) for line in sample.SAMPLE_MULTIHOP_QUESTIONS.read_text(encoding="utf-8").splitlines()]


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def titles_index(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("multihop") / "index"
    assert main(["ingest", str(sample.SAMPLE_MULTIHOP_DOCS), "--index", str(path), "--entities", "titles"]) == 0
    return path


def test_ingest_writes_the_graph_beside_the_index(titles_index, capsys):
    graph = EntityGraph.load(titles_index)
    assert graph.n_passages >= 120 and graph.n_entities == 120
    assert (titles_index / GRAPH_FILE).is_file() and (titles_index / "docstore.json").is_file()


@pytest.mark.model  # the CLI loads the real embedding model
def test_retrieve_graph_finds_every_supporting_passage(titles_index, tmp_path, capsys):
    questions = write_jsonl(tmp_path / "q.jsonl", [{"question": q["question"]} for q in QUESTIONS])
    capsys.readouterr()
    assert (
        main(
            [
                "retrieve",
                "--questions",
                str(questions),
                "--index",
                str(titles_index),
                "--retrieval",
                "graph",
                "--top-k",
                "8",
            ]
        )
        == 0
    )
    records = json_lines(capsys.readouterr().out)
    assert len(records) == len(QUESTIONS)
    complete = sum(all(g in [s["id"] for s in r["sources"]] for g in q["gold_ids"]) for q, r in zip(QUESTIONS, records))
    assert complete >= len(QUESTIONS) - 1  # the benchmark's 1.00 on the full corpus, with a little slack
    lothair = records[0]
    assert lothair["original_query"] == QUESTIONS[0]["question"] and len(lothair["sources"]) == 8
    source = next(s for s in lothair["sources"] if s["id"] == "Ermengarde of Tours")
    assert set(source) >= {"id", "score", "text", "level", "doc_ids", "why"}
    assert source["why"]["question_entities"] == ["Lothair II"]
    assert source["why"]["path"][0] == {"seed": {"entity": "Lothair II"}, "by": "question"}


@pytest.mark.model  # the CLI loads the real embedding model
def test_retrieve_graph_prints_why_each_source_was_chosen(titles_index, capsys):
    capsys.readouterr()
    assert (
        main(
            ["retrieve", QUESTIONS[0]["question"], "--index", str(titles_index), "--retrieval", "graph", "--top-k", "3"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "[Lothair II]" in out and "why: question entity Lothair II" in out


def test_sentence_seeds_option(capsys):
    from llama_index_kgplus.cli import _entities
    from llama_index_kgplus.cli._parser import build_parser

    def parsed(*options):
        return _entities.settings(build_parser().parse_args(["retrieve", "q", "--index", "i", *options]))

    assert parsed("--retrieval", "graph", "--sentence-seeds", "0")["sentence_seeds"] == 0
    assert "sentence_seeds" not in parsed("--retrieval", "graph")  # the retriever's default
    with pytest.raises(SystemExit):
        parsed("--sentence-seeds", "-1")
    assert "--sentence-seeds" in capsys.readouterr().err


def test_the_walk_line_names_the_kind_of_seed():
    from llama_index_kgplus.cli._index import _walk_text

    step = {"from": {"entity": "Ermengarde of Tours"}, "edge": "MENTIONS (about)", "to": {"doc_id": "Ermengarde"}}
    path = [{"seed": {"entity": "Ermengarde of Tours"}, "by": "sentence"}, step]
    assert _walk_text({"path": path}) == "sentence entity Ermengarde of Tours -MENTIONS (about)- [Ermengarde]"
    assert _walk_text({"path": [{"seed": {"doc_id": "Lothair II"}, "by": "dense"}]}) == "dense hit [Lothair II]"
    assert _walk_text({"path": []}) == "dense hit"


@pytest.mark.model  # the CLI loads the real embedding model
def test_graph_retrieval_composes_with_the_glossary_engine(titles_index, tmp_path, capsys):
    glossary = tmp_path / "glossary.json"
    glossary.write_text(json.dumps({"terms": [{"term": "queen consort", "explanation": "The wife of a king."}]}))
    capsys.readouterr()
    assert (
        main(
            [
                "retrieve",
                "Who was the queen consort of Lothair II?",
                "--index",
                str(titles_index),
                "--retrieval",
                "graph",
                "--glossary",
                str(glossary),
                "--mode",
                "original",
                "--json",
            ]
        )
        == 0
    )
    [record] = json_lines(capsys.readouterr().out)
    assert record["glossary_terms"] == ["queen consort"]
    assert record["sources"][0]["id"] == "Lothair II" and "why" in record["sources"][0]


@pytest.mark.model  # the CLI loads the real embedding model
def test_ner_and_titles_sources_together(tmp_path, capsys):
    pytest.importorskip("spacy")
    index = tmp_path / "index"
    assert main(["ingest", str(sample.SAMPLE_MULTIHOP_DOCS), "--index", str(index), "--entities", "titles,ner"]) == 0
    assert "entity graph (titles,ner)" in capsys.readouterr().out
    graph = EntityGraph.load(index)
    assert graph.n_entities > 120 and {"titles", "ner"} <= set(graph.entities.entities["lothair ii"].sources)


@pytest.mark.model  # the CLI loads the real embedding model
def test_ingest_copies_the_graph_into_a_graph_store(tmp_path, capsys):
    from llama_index_kgplus import open_graph_store

    uri = f"ladybug://{tmp_path / 'entities.lbug'}"
    corpus = write_jsonl(
        tmp_path / "c.jsonl",
        [json.loads(line) for line in sample.SAMPLE_MULTIHOP_DOCS.read_text(encoding="utf-8").splitlines()[:6]],
    )
    assert (
        main(["ingest", str(corpus), "--index", str(tmp_path / "index"), "--entities", "titles", "--entity-store", uri])
        == 0
    )
    assert "entity graph copied to ladybug://" in capsys.readouterr().out
    rows = open_graph_store(uri).structured_query(
        "MATCH (c:Chunk)-[:MENTIONS]->(e:Entity {name: $name}) RETURN count(c) AS n", param_map={"name": "Lothair II"}
    )
    assert rows[0]["n"] >= 2  # its own passage and Teutberga's


# ----------------------------------------------------------------------------------------------- bad input


def test_unknown_entity_source_lists_the_valid_ones(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["ingest", str(sample.SAMPLE_MULTIHOP_DOCS), "--index", str(tmp_path / "i"), "--entities", "titles,wiki"])
    assert exc.value.code == 2
    assert "Unknown entity source(s) 'wiki': choose from titles, kg, glossary, ner, llm" in capsys.readouterr().err
    assert not (tmp_path / "i").exists()


def test_sources_that_need_a_file_say_so(tmp_path, capsys):
    for sources, needs in (("kg", "--kg-store"), ("glossary", "--glossary FILE")):
        assert (
            main(["ingest", str(sample.SAMPLE_MULTIHOP_DOCS), "--index", str(tmp_path / "i"), "--entities", sources])
            == 2
        )
        assert needs in capsys.readouterr().err
    assert not (tmp_path / "i").exists()


@pytest.mark.model  # the CLI loads the real embedding model
def test_graph_retrieval_on_an_index_without_entities(tmp_path, capsys):
    index = tmp_path / "plain"
    assert main(["ingest", str(sample.SAMPLE_MULTIHOP_DOCS), "--index", str(index)]) == 0
    capsys.readouterr()
    assert main(["retrieve", "Who?", "--index", str(index), "--retrieval", "graph"]) == 2
    err = capsys.readouterr().err
    assert "built without --entities" in err and "kgplus ingest DOCS --index" in err and "--entities SOURCES" in err


@pytest.mark.model  # the CLI loads the real embedding model
def test_graph_of_another_index_is_refused_with_the_fix(titles_index, tmp_path, capsys):
    other = tmp_path / "other"
    shutil.copytree(titles_index, other)
    (other / "ingest.json").unlink()  # as if written by plain LlamaIndex, whose files are not checked
    (other / "index_store.json").write_text(
        (other / "index_store.json").read_text().replace(EntityGraph.load(titles_index).index_id, "another-index-id")
    )
    capsys.readouterr()
    assert main(["retrieve", "Who?", "--index", str(other), "--retrieval", "graph"]) == 2
    assert "belongs to another index" in capsys.readouterr().err  # (another version: test_entity_graph.py)


@pytest.mark.model  # the CLI loads the real embedding model
def test_graph_of_an_older_entity_pipeline_is_refused_with_the_ingest_command(titles_index, tmp_path, capsys):
    old = tmp_path / "old"
    shutil.copytree(titles_index, old)
    (old / "ingest.json").unlink()  # the seal would refuse the edited file first
    with np.load(old / GRAPH_FILE) as data:
        arrays = dict(data)
    header = json.loads(bytes(arrays["header"]))
    header["entity_pipeline"]["version"] = 0
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(old / GRAPH_FILE, **arrays)
    capsys.readouterr()
    assert main(["retrieve", "Who?", "--index", str(old), "--retrieval", "graph"]) == 2
    err = capsys.readouterr().err.strip()
    assert "older entity pipeline" in err and f"kgplus ingest DOCS --index {old} --entities titles`" in err
    assert len(err.splitlines()) == 1


def test_bad_graph_setting_is_one_clear_error(titles_index, capsys):
    with pytest.raises(SystemExit) as exit_info:  # refused by the argument parser, before any model loads
        main(["retrieve", "Who?", "--index", str(titles_index), "--retrieval", "graph", "--damping", "1.5"])
    assert exit_info.value.code == 2
    assert "argument --damping: takes a number from 0 up to (not including) 1, not 1.5" in capsys.readouterr().err


@pytest.mark.model  # the CLI loads the real embedding model
def test_awkward_corpora_still_link(tmp_path, capsys):
    long_title = "The " + " ".join(["Very"] * 60) + " Long Title"
    corpus = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"id": "a", "title": "Paris", "text": "Paris is the capital of France. It hosts the Louvre."},
            {
                "id": "b",
                "title": "Paris",
                "text": "Paris is a 1926 film. Its star visits the Louvre.",
            },  # a repeated title
            {"id": "c", "title": 'Das "Boot" (film)', "text": 'Das "Boot" was directed by Wolfgang Petersen in Paris.'},
            {"id": "d", "title": "Yeşim Ustaoğlu", "text": "Yeşim Ustaoğlu is a Turkish director; see Das Boot."},
            {"id": "e", "title": long_title, "text": f"{long_title} is a made-up name about the Louvre."},
            {"id": "f", "text": "A passage without a title that names Yeşim Ustaoğlu."},  # no title entity
        ],
    )
    index = tmp_path / "index"
    assert main(["ingest", str(corpus), "--index", str(index), "--entities", "titles"]) == 0
    graph = EntityGraph.load(index)
    assert graph.entities.entities["paris"].sources == {"titles": {"a", "b"}}
    assert len(graph.entities) == 4  # Paris once, Das "Boot", Yeşim Ustaoğlu, the long title
    capsys.readouterr()
    assert (
        main(
            [
                "retrieve",
                "Who directed Das Boot?",
                "--index",
                str(index),
                "--retrieval",
                "graph",
                "--top-k",
                "2",
                "--json",
            ]
        )
        == 0
    )
    [record] = json_lines(capsys.readouterr().out)
    assert record["sources"][0]["id"] == "c"
    assert main(["retrieve", "What is in the museum?", "--index", str(index), "--retrieval", "graph", "--json"]) == 0
    [record] = json_lines(capsys.readouterr().out)  # no entity in the question: dense hits, spread by the walk
    assert record["sources"] and all(s["why"]["question_entities"] == [] for s in record["sources"])


@pytest.mark.model  # the CLI loads the real embedding model
def test_a_corpus_without_titles_gives_an_empty_source_and_still_retrieves(tmp_path, capsys):
    corpus = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"id": f"p{i}", "text": t}
            for i, t in enumerate(
                ["Lothair II was king of Lotharingia.", "Ermengarde of Tours was the wife of Lothair I."]
            )
        ],
    )
    index = tmp_path / "index"
    assert main(["ingest", str(corpus), "--index", str(index), "--entities", "titles"]) == 0
    assert "entity graph (titles): 0 entities" in capsys.readouterr().out
    assert (
        main(["retrieve", "Who was the wife of Lothair I?", "--index", str(index), "--retrieval", "graph", "--json"])
        == 0
    )
    assert json_lines(capsys.readouterr().out)[0]["sources"][0]["id"] == "p1"


@pytest.mark.model  # the CLI loads the real embedding model
def test_similar_entities_and_the_new_retrieval_options_from_the_cli(tmp_path, capsys):
    pytest.importorskip("llama_index.retrievers.bm25")
    path = tmp_path / "index"
    docs = str(sample.SAMPLE_MULTIHOP_DOCS)
    assert main(["ingest", docs, "--index", str(path), "--entities", "titles", "--similar-entities", "0.7"]) == 0
    similar = {r for r in EntityGraph.load(path).entities.relationships if r[2] == "SIMILAR_TO"}
    assert similar and all(a != b for a, b, _ in similar)
    capsys.readouterr()
    question = QUESTIONS[0]["question"]
    options = ["--retrieval", "graph", "--top-k", "8", "--first-stage", "hybrid", "--entity-embedding-top-k", "1"]
    questions = write_jsonl(tmp_path / "q.jsonl", [{"question": question}])
    assert main(["retrieve", "--questions", str(questions), "--index", str(path), *options]) == 0
    (record,) = json_lines(capsys.readouterr().out)
    assert {"Lothair II", "Ermengarde of Tours"} <= {s["id"] for s in record["sources"]}
    with pytest.raises(SystemExit):
        main(["ingest", docs, "--index", str(tmp_path / "other"), "--entities", "titles", "--similar-entities", "2"])
    assert "takes a cosine from -1 to 1, not 2" in capsys.readouterr().err
