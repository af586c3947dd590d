"""Fuzz tests of every parser of user files and URIs: whatever the input, the parser returns or raises one of
the pack's own errors (with a message), never anything else.

Two generators per parser: a seeded mutation fuzzer (10^4 inputs: valid files with bytes flipped, tokens
inserted, lines repeated or cut, values swapped for other JSON types) and Hypothesis (structure-aware inputs,
fewer of them, shrunk to a minimal example when one fails). ``KGPLUS_FUZZ_EXAMPLES`` scales both."""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llama_index_kgplus.errors import KGPlusError

MUTATIONS = int(os.environ.get("KGPLUS_FUZZ_EXAMPLES", 10_000))
fuzz = settings(max_examples=max(10, MUTATIONS // 20), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])  # fmt: skip

_TMP = Path(tempfile.mkdtemp(prefix="kgplus-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))

# JSON values of every type, nested a little; text with separators, quotes, controls and non-ASCII
_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)


def _records(keys: tuple[str, ...]) -> st.SearchStrategy[str]:
    """JSONL text: objects with the parser's own keys (and others) holding any JSON value, plus noise lines."""
    record = st.dictionaries(st.sampled_from(keys) | _text, _json | _text, max_size=len(keys) + 1)
    line = record.map(lambda r: json.dumps(r, ensure_ascii=False)) | _json.map(json.dumps) | _text
    return st.lists(line, max_size=5).map("\n".join)


def _write(name: str, content: str | bytes) -> Path:
    path = _TMP / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    return path


def _parses_or_says_why(parse, *args) -> None:
    try:
        parse(*args)
    except KGPlusError as exc:
        assert str(exc).strip()


@fuzz
@given(_records(("id", "title", "text")) | st.binary(max_size=60).map(bytes))
def test_corpus_jsonl(content):
    from llama_index_kgplus import load_corpus

    _parses_or_says_why(load_corpus, _write("corpus.jsonl", content))


@fuzz
@given(_records(("question", "id", "ground_truth", "answers", "gold_ids")))
def test_eval_dataset_jsonl(content):
    from llama_index_kgplus.evaluation import load_dataset

    _parses_or_says_why(load_dataset, _write("dataset.jsonl", content))


@fuzz
@given(_records(("question", "text")))
def test_questions_jsonl(content):
    from llama_index_kgplus.cli._index import _read_questions

    _parses_or_says_why(lambda p: list(_read_questions(p)), _write("questions.jsonl", content))


_glossary_entry = st.dictionaries(
    st.sampled_from(("term", "explanation", "aliases", "see_also", "metadata")) | _text,
    _json | st.sampled_from(("GIL", "gil", "head", "HEAD", " ", "")),
    max_size=5,
)


@fuzz
@given(
    st.dictionaries(st.sampled_from(("terms",)) | _text, st.lists(_glossary_entry, max_size=4) | _json, max_size=2).map(
        json.dumps
    )
    | _text
)
def test_glossary_json(content):
    from llama_index_kgplus.glossary import Glossary

    _parses_or_says_why(Glossary.load, _write("glossary.json", content))


_csv_cell = st.sampled_from(("GIL", "gil", "a|b", '"q"', "", " ", "x,y", "\n", "metadata.k")) | _text


def _csv(header: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    row = st.lists(_csv_cell, min_size=0, max_size=5).map(",".join)
    return st.tuples(st.lists(header, min_size=1, max_size=5).map(",".join), st.lists(row, max_size=4)).map(
        lambda hr: "\n".join([hr[0], *hr[1]])
    )


@fuzz
@given(_csv(st.sampled_from(("term", "explanation", "aliases", "see_also", "metadata.source")) | _text))
def test_glossary_csv(content):
    from llama_index_kgplus.glossary import Glossary

    _parses_or_says_why(Glossary.load, _write("glossary.csv", content))


_kg_header = st.sampled_from(
    ("cid:ID", "name", ":LABEL", "n:int", "f:float", "b:boolean", "tags:string[]", "xs:int[]", ":START_ID",
     ":END_ID", ":TYPE", "relname", "cid", "synonym", "id:ID(Ent)")
) | _text  # fmt: skip
_kg_cell = st.sampled_from(("C1", "C2", "C3", "1", "x", "a;b", "a;b,c", "true", "1.5", "", "T")) | _text


@fuzz
@given(
    st.lists(st.lists(_kg_header, min_size=1, max_size=4), min_size=3, max_size=3),
    st.lists(st.lists(st.lists(_kg_cell, max_size=4), max_size=3), min_size=3, max_size=3),
)
def test_kg_csv(headers, rows):
    from llama_index_kgplus.kg._csv import read_kg_csv

    paths = [
        _write(name, "\n".join([",".join(h), *(",".join(r) for r in body)]))
        for name, h, body in zip(("nodes.csv", "rels.csv", "syn.csv"), headers, rows)
    ]
    _parses_or_says_why(read_kg_csv, *paths)


@fuzz
@given(
    st.sampled_from(("ladybug://", "ladybug:///", "falkordb://", "neo4j://", "bolt+s://", "", "http://")).flatmap(
        lambda scheme: st.text(max_size=30).map(lambda rest: scheme + rest)
    )
    | st.text(max_size=40)
)
def test_graph_store_uri(uri):
    from llama_index_kgplus.graph_stores._uri import GraphStoreURI

    _parses_or_says_why(GraphStoreURI.parse, uri)


# ----------------------------------------------------------------------------- mutation fuzzing, 10^4 per parser

_TOKENS = ['"', "'", ",", ";", "|", ":", "\\", "\n", "\r\n", "\t", "\x00", "\u2028", "\ufeff", "é", "\U0001f600",
           "{", "}", "[", "]", "null", "true", "1e999", "-0", "NaN", "[[[[", '{"a":', ":ID", ":LABEL", ":TYPE",
           "string[]", "int", "%", "%ff", "?", "#", "[::1", "//", "/../"]  # fmt: skip
_VALUES = [None, True, 0, -1, 1.5, "", " ", "x", [], ["a", 1], {}, {"k": [None]}, "GIL", "head", "HEAD"]


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 4)):
        pos = rng.randint(0, len(text))
        kind = rng.randrange(6)
        if kind == 0:
            text = text[:pos] + rng.choice(_TOKENS) + text[pos:]
        elif kind == 1:
            text = text[:pos] + text[pos + rng.randint(1, 8) :]
        elif kind == 2 and text:
            text = text[:pos] + chr(rng.randrange(1, 0x3000)) + text[pos + 1 :]
        elif kind == 3:
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind == 4:
            text = text[: rng.randint(0, len(text))]
        else:
            text = _swap_json_value(rng, text)
    return text


def _swap_json_value(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    try:
        record = json.loads(lines[i])
    except ValueError:
        return text
    if isinstance(record, dict) and record:
        record[rng.choice(list(record))] = rng.choice(_VALUES)
        lines[i] = json.dumps(record)
    return "\n".join(lines)


def _jsonl(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _glossary_parse(path: Path):
    from llama_index_kgplus.glossary import Glossary

    return Glossary.load(path)


def _corpus_parse(path: Path):
    from llama_index_kgplus import load_corpus

    return load_corpus(path)


def _dataset_parse(path: Path):
    from llama_index_kgplus.evaluation import load_dataset

    return load_dataset(path)


def _questions_parse(path: Path):
    from llama_index_kgplus.cli._index import _read_questions

    return list(_read_questions(path))


SEEDS = {
    "corpus.jsonl": (_corpus_parse, _jsonl({"id": "a", "title": "A", "text": "One."}, {"id": 2, "text": "Two."})),
    "dataset.jsonl": (_dataset_parse, _jsonl({"question": "q?", "answers": ["x"], "gold_ids": ["a"], "id": "1"},
                                             {"question": "r?", "ground_truth": "y"})),
    "questions.jsonl": (_questions_parse, _jsonl({"question": "q?"}, {"question": "r?"})),
    "glossary.json": (_glossary_parse, json.dumps({"terms": [
        {"term": "GIL", "explanation": "The lock.", "aliases": ["global lock"], "see_also": ["head"]},
        {"term": "head", "explanation": "A branch tip."}, {"term": "HEAD", "explanation": "Current branch."}]})),
    "glossary.csv": (_glossary_parse, "term,explanation,aliases,see_also,metadata.source\n"
                                      'GIL,"The lock, held",global lock|gil lock,head,docs\nhead,A tip.,,,\n'),
}  # fmt: skip

KG_SEEDS = (
    "cid:ID,name,:LABEL,n:int,tags:string[]\nC1,aspirin,Drug,1,a;b\nC2,headache,Disease,2,\nC3,pain,Disease,,c\n",
    ":START_ID,:END_ID,:TYPE,relname\nC1,C2,TREATS,treats\nC2,C3,ISA,isa\n",
    "cid,synonym\nC1,ASA\nC2,cephalalgia\n",
)


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_mutated_files(name):
    parse, seed = SEEDS[name]
    rng = random.Random(name)
    path = _TMP / f"mutated-{name}"
    parse(_write(path.name, seed))  # the seed itself is valid
    for _ in range(MUTATIONS):
        _parses_or_says_why(parse, _write(path.name, _mutate(rng, seed)))


def test_mutated_kg_csv():
    from llama_index_kgplus.kg._csv import read_kg_csv

    rng = random.Random(0)
    paths = [_TMP / n for n in ("m-nodes.csv", "m-rels.csv", "m-syn.csv")]
    for path, seed in zip(paths, KG_SEEDS):
        _write(path.name, seed)
    read_kg_csv(*paths)
    for _ in range(MUTATIONS):
        which = rng.randrange(3)
        _write(paths[which].name, _mutate(rng, KG_SEEDS[which]))
        _parses_or_says_why(read_kg_csv, *paths)
        _write(paths[which].name, KG_SEEDS[which])


def test_mutated_store_uris():
    from llama_index_kgplus.graph_stores._uri import GraphStoreURI

    rng = random.Random(0)
    seeds = ("ladybug:///data/kg.lbug", "falkordb://127.0.0.1:6379", "neo4j://localhost:7687", "bolt+s://[::1]:7687")
    for _ in range(MUTATIONS):
        _parses_or_says_why(GraphStoreURI.parse, _mutate(rng, rng.choice(seeds)))
