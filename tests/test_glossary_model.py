"""Glossary loading and validation: JSON, CSV, dict; every bad-input case names the position of the problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llama_index.core.bridge.pydantic import ValidationError

from llama_index_kgplus import InputDataError, sample
from llama_index_kgplus.glossary import Glossary, GlossaryEntry
from llama_index_kgplus.glossary._entry import plural_forms
from llama_index_kgplus.glossary._model import load_glossary

GOOD = {
    "terms": [
        {"term": "GIL", "explanation": "The global interpreter lock.", "aliases": ["global interpreter lock"]},
        {"term": "decorator", "explanation": "A function returning another function.", "see_also": ["GIL"]},
        {"term": "list comprehension", "explanation": "A compact way to build a list.", "metadata": {"url": "x"}},
    ]
}


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


# ----------------------------------------------------------------------------- good input


def test_sample_glossary_loads_with_all_terms():
    glossary = Glossary.load(sample.sample_glossary_path())
    raw = json.loads(sample.sample_glossary_path().read_text(encoding="utf-8"))
    assert len(glossary) == len(raw["terms"]) == 128
    assert glossary.terms == [t["term"] for t in raw["terms"]]
    assert glossary["gil"].term == "GIL"
    assert "Global Interpreter Lock" in glossary


def test_json_round_trip_keeps_every_field(tmp_path: Path):
    path = write(tmp_path, "g.json", json.dumps(GOOD))
    glossary = load_glossary(path)
    assert glossary.source == str(path)
    assert glossary["global interpreter lock"].term == "GIL"
    assert glossary["decorator"].see_also == ["GIL"]
    assert glossary["list comprehension"].metadata == {"url": "x"}
    out = tmp_path / "out.json"
    glossary.save(out)
    assert Glossary.from_json(out).to_dict() == GOOD


def test_utf8_bom_is_accepted(tmp_path: Path):
    path = write(tmp_path, "g.json", b"\xef\xbb\xbf" + json.dumps(GOOD).encode())
    assert len(Glossary.load(path)) == 3


def test_csv_with_aliases_see_also_and_metadata(tmp_path: Path):
    path = write(
        tmp_path,
        "g.csv",
        "term,explanation,aliases,see_also,metadata.source\n"
        'GIL,"The lock, global.",global interpreter lock|big lock,,faq\n'
        "\n"
        'decorator,"A function\nover two lines.",,GIL,\n',
    )
    glossary = Glossary.load(path)
    assert glossary.terms == ["GIL", "decorator"]
    assert glossary["big lock"].metadata == {"source": "faq"}
    assert glossary["decorator"].explanation == "A function\nover two lines."
    assert glossary["decorator"].see_also == ["GIL"]


def test_from_dict_and_direct_construction():
    assert Glossary.from_dict(GOOD).get("decorator").explanation.startswith("A function")
    entry = GlossaryEntry(term="  lambda ", explanation=" An anonymous function. ")
    assert (entry.term, entry.explanation) == ("lambda", "An anonymous function.")
    assert entry.to_text() == "- lambda: An anonymous function."


def test_match_whole_words_aliases_and_plurals():
    glossary = Glossary.from_dict(GOOD)
    found = glossary.match("Decorators vs the Global Interpreter Lock; listing? list comprehensions!")
    assert [e.term for e in found] == ["decorator", "GIL", "list comprehension"]
    assert glossary.match("undecorated gilded") == []


def test_plural_forms():
    assert plural_forms("class") == ["classes"]
    assert plural_forms("dictionary") == ["dictionaries"]
    assert plural_forms("key function") == ["key functions"]
    assert plural_forms("GIL") == [] and plural_forms("__slots__") == [] and plural_forms("...") == []


def test_plural_that_is_a_term_points_only_to_that_term():
    glossary = Glossary.from_dict(
        {"terms": [{"term": "type", "explanation": "a"}, {"term": "types", "explanation": "the module"}]}
    )
    assert [e.term for e in glossary.match("types")] == ["types"]


# ----------------------------------------------------------------------------- bad JSON input


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            '{"terms": [\n  {"term": "a", "explanation": "x"},\n  {"term": "b"}\n]}',
            r"g\.json:3:3: terms\[1\] \('b'\): missing key\(s\) 'explanation'",
        ),
        ('{"terms": [\n {"explanation": "x"}]}', r"g\.json:2:2: terms\[0\]: missing key\(s\) 'term'"),
        ('{"terms": [{"term": "a", "explanation": "  "}]}', r"g\.json:1:12: terms\[0\] \('a'\): empty 'explanation'"),
        ('{"terms": [{"term": "", "explanation": "x"}]}', r"terms\[0\]: empty 'term'"),
        ('{"terms": [{"term": "a", "explanation": 3}]}', r"'explanation' must be a string, not int"),
        ('{"terms": [{"term": "a", "explanation": "x", "alias": ["b"]}]}', r"unknown key\(s\) \['alias'\]"),
        (
            '{"terms": [{"term": "a", "explanation": "x", "aliases": "b"}]}',
            r"'aliases' must be a list of non-empty strings",
        ),
        (
            '{"terms": [{"term": "a", "explanation": "x", "aliases": [""]}]}',
            r"'aliases' must be a list of non-empty strings",
        ),
        ('{"terms": [{"term": "a", "explanation": "x", "metadata": 1}]}', r"'metadata' must be an object"),
        ('{"terms": ["a"]}', r"terms\[0\]: each term must be an object"),
        ('{"terms": []}', r"g\.json:1:1: terms: the glossary has no terms"),
        ('{"terms": {"a": 1}}', r'"terms" must be a list, not dict'),
        ('[{"term": "a", "explanation": "x"}]', r'top level: expected an object with a "terms" list'),
        ('{"terms": [], "extra": 1}', r"unknown key\(s\) \['extra'\]"),
        (
            '{"terms": [\n{"term": "a", "explanation": "x", "see_also": ["zzz"]}]}',
            r"g\.json:2:1: terms\[0\] \('a'\): see_also names 'zzz', which is not a term",
        ),
    ],
)
def test_bad_json_records(tmp_path: Path, content: str, expected: str):
    with pytest.raises(InputDataError, match=expected):
        Glossary.load(write(tmp_path, "g.json", content))


def test_duplicate_terms_name_both_positions(tmp_path: Path):
    content = '{"terms": [\n  {"term": "Lambda", "explanation": "x"},\n  {"term": "Lambda ", "explanation": "y"}\n]}'
    with pytest.raises(InputDataError) as err:
        Glossary.load(write(tmp_path, "g.json", content))
    message = str(err.value)
    assert "g.json:3:3: terms[1] ('Lambda')" in message
    assert "duplicate term 'Lambda'" in message and "already defined by 'Lambda' at" in message
    assert "g.json:2:3: terms[0]" in message


def test_alias_clashing_with_another_term(tmp_path: Path):
    content = json.dumps(
        {"terms": [{"term": "GIL", "explanation": "x"}, {"term": "lock", "explanation": "y", "aliases": ["GIL"]}]}
    )
    with pytest.raises(InputDataError, match=r"terms\[1\] \('lock'\): duplicate term 'GIL'.*'GIL'"):
        Glossary.load(write(tmp_path, "g.json", content))


def test_terms_differing_only_in_case_are_distinct_and_matched_as_written():
    """git's glossary defines both ``head`` and ``HEAD``; every other term still matches ignoring case."""
    glossary = Glossary.from_dict({"terms": [
        {"term": "head", "explanation": "A named reference to the commit at the tip of a branch."},
        {"term": "HEAD", "explanation": "The current branch.", "see_also": ["head"]},
        {"term": "branch", "explanation": "A line of development."},
    ]})  # fmt: skip
    assert [e.term for e in glossary.match("Where does HEAD point?")] == ["HEAD"]
    assert [e.term for e in glossary.match("Each head of a BRANCH")] == ["head", "branch"]
    assert [e.term for e in glossary.match("Move the heads")] == ["head"]
    assert glossary["HEAD"].term == "HEAD" and glossary["head"].term == "head" and glossary["Branch"].term == "branch"
    assert glossary.get("Head") is None  # two entries differ from it only in case


def test_invalid_json_gives_line_and_column(tmp_path: Path):
    content = '{"terms": [\n  {"term": "a", "explanation": "x"},\n  {"term": "b" "explanation": "y"}\n]}'
    with pytest.raises(InputDataError, match=r"g\.json:3:16: invalid JSON: Expecting ',' delimiter"):
        Glossary.load(write(tmp_path, "g.json", content))


def test_trailing_garbage_is_invalid_json(tmp_path: Path):
    with pytest.raises(InputDataError, match=r"g\.json:2:1: invalid JSON: Extra data"):
        Glossary.load(write(tmp_path, "g.json", json.dumps(GOOD) + "\n}"))


def test_wrong_encoding_gives_line_and_column(tmp_path: Path):
    content = '{"terms": [\n {"term": "caf\xe9", "explanation": "x"}]}'.encode("latin-1")
    with pytest.raises(InputDataError, match=r"g\.json:2:15: not UTF-8 text \(byte 0xe9.*re-encode the file as UTF-8"):
        Glossary.load(write(tmp_path, "g.json", content))


def test_utf16_file_is_named(tmp_path: Path):
    with pytest.raises(InputDataError, match="UTF-16 encoded.*save it as UTF-8"):
        Glossary.load(write(tmp_path, "g.json", json.dumps(GOOD).encode("utf-16")))


@pytest.mark.parametrize("content", ["", "  \n"])
def test_empty_file(tmp_path: Path, content: str):
    with pytest.raises(InputDataError, match="is empty"):
        Glossary.load(write(tmp_path, "g.json", content))


def test_missing_file_and_unknown_suffix(tmp_path: Path):
    with pytest.raises(InputDataError, match="does not exist"):
        Glossary.load(tmp_path / "nope.json")
    with pytest.raises(InputDataError, match="unknown glossary format '.yaml'"):
        Glossary.load(write(tmp_path, "g.yaml", "terms: []"))


# ----------------------------------------------------------------------------- bad CSV input


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("name,explanation\nGIL,x\n", r"g\.csv:1: the header \['name', 'explanation'\] lacks column\(s\) term"),
        ("term,explanation,alias\nGIL,x,y\n", r"g\.csv:1: unknown column\(s\) \['alias'\]"),
        ("term,explanation,term\nGIL,x,y\n", r"g\.csv:1: column\(s\) \['term'\] appear more than once"),
        ("term,explanation\nGIL,x\nlock,\n", r"g\.csv:3: row 2 \('lock'\): empty 'explanation'"),
        ("term,explanation\nGIL,x\n,y\n", r"g\.csv:3: row 2: empty 'term'"),
        ("term,explanation\nGIL,x,extra\n", r"g\.csv:2: 3 fields, the header has 2"),
        (
            "term,explanation\nGIL,x\n\nGIL,y\n",
            r"g\.csv:4: row 2 \('GIL'\): duplicate term 'GIL'.*already defined by 'GIL' at .*g\.csv:2: row 1",
        ),
        (
            "term,explanation,aliases\nGIL,x,a||b\n",
            r"g\.csv:2: row 1 \('GIL'\): 'aliases' must be a list of non-empty strings",
        ),
        ("term,explanation,see_also\nGIL,x,lock\n", r"g\.csv:2: row 1 \('GIL'\): see_also names 'lock'"),
        ("term,explanation\n", r"g\.csv: the glossary has no terms \(only a header\)"),
        ('term,explanation\nGIL,"x\n', r"g\.csv:\d+: invalid CSV"),
    ],
)
def test_bad_csv(tmp_path: Path, content: str, expected: str):
    with pytest.raises(InputDataError, match=expected):
        Glossary.from_csv(write(tmp_path, "g.csv", content))


def test_csv_wrong_encoding(tmp_path: Path):
    with pytest.raises(InputDataError, match=r"g\.csv:2:4: not UTF-8"):
        Glossary.load(write(tmp_path, "g.csv", "term,explanation\ncaf\xe9,x\n".encode("cp1252")))


# ----------------------------------------------------------------------------- dict and model


def test_dict_errors_name_the_entry():
    with pytest.raises(InputDataError, match=r"<dict>: terms\[1\] \('b'\): empty 'explanation'"):
        Glossary.from_dict({"terms": [{"term": "a", "explanation": "x"}, {"term": "b", "explanation": ""}]})
    with pytest.raises(InputDataError, match=r"mine: terms\[1\] \('A'\): duplicate term 'A'"):
        Glossary.from_dict({"terms": [{"term": "A", "explanation": "x"}, {"term": "A", "explanation": "y"}]}, "mine")


def test_direct_construction_validates_too():
    with pytest.raises(ValidationError, match=r"entries\[1\] \('A'\): duplicate term 'A'"):
        Glossary(entries=[GlossaryEntry(term="A", explanation="x"), GlossaryEntry(term="A", explanation="y")])
    with pytest.raises(ValidationError, match="explanation is empty"):
        GlossaryEntry(term="a", explanation=" ")
