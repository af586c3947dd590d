"""EntityMatcher: dictionary entity recognition over the shared PhraseMatcher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama_index_kgplus import InputDataError
from llama_index_kgplus.errors import NotFittedError
from llama_index_kgplus.kg import EntityMatcher

FAMPLEX = Path("/work/shared/bench-data/kg-famplex")


def mentions(matcher, text):
    return [(m.cid, m.name, m.start, m.end, m.text) for m in matcher.find(text)]


def test_names_and_synonyms_whole_words_leftmost_longest():
    matcher = EntityMatcher.from_pairs(
        [("C1", "aspirin"), ("C2", "headache"), ("C3", "migraine"), ("C4", "migraine headache")],
        synonyms=[("C1", "ASA"), ("C1", "acetylsalicylic acid")],
    )
    text = "Is ASA (acetylsalicylic acid) good for a Migraine Headache, or for migraines? aspirinX no."
    assert mentions(matcher, text) == [
        ("C1", "aspirin", 3, 6, "ASA"),
        ("C1", "aspirin", 8, 28, "acetylsalicylic acid"),
        ("C4", "migraine headache", 41, 58, "Migraine Headache"),
    ]
    assert (matcher.n_entities_, matcher.n_names_, len(matcher)) == (4, 6, 6)


def test_ambiguous_names_give_every_entity_or_none():
    pairs = [("FPLX:SRC", "SRC"), ("HGNC:SRC", "SRC"), ("HGNC:ABL1", "ABL1")]
    assert [m.cid for m in EntityMatcher.from_pairs(pairs).find("SRC and ABL1")] == [
        "FPLX:SRC",
        "HGNC:SRC",
        "HGNC:ABL1",
    ]
    skip = EntityMatcher.from_pairs(pairs, ambiguous="skip")
    assert [m.cid for m in skip.find("SRC and ABL1")] == ["HGNC:ABL1"]


def test_min_length_drops_short_names():
    matcher = EntityMatcher.from_pairs([("A", "OR"), ("B", "olfactory receptor")], min_length=3)
    assert [m.cid for m in matcher.find("OR, the olfactory receptor")] == ["B"]
    with pytest.raises(ValueError, match="min_length"):
        EntityMatcher(min_length=0).fit([])


def test_unbuilt_matcher_says_what_to_do():
    with pytest.raises(NotFittedError, match="call fit"):
        EntityMatcher().find("x")


def test_built_from_csv_reproduces_the_bench_reference_matches():
    """The bench pairs were drawn so that a reference matcher over all names and synonyms finds exactly
    the pair's two entities in its text; ours must agree on every pair."""
    matcher = EntityMatcher.from_csv(FAMPLEX / "nodes.csv", FAMPLEX / "synonyms.csv")
    assert matcher.n_entities_ == 5402
    for line in (FAMPLEX / "pairs.jsonl").read_text().splitlines():
        pair = json.loads(line)
        assert [m.cid for m in matcher.find(pair["text"])] == [pair["lhs"], pair["rhs"]], pair["text"]


def test_save_and_load(tmp_path):
    matcher = EntityMatcher.from_pairs([("C1", "aspirin")], [("C1", "ASA")], min_length=2)
    matcher.save(tmp_path / "m.json", import_id="i1")
    loaded = EntityMatcher.load(tmp_path / "m.json", expect={"import_id": "i1"})
    assert mentions(loaded, "asa or Aspirin") == mentions(matcher, "asa or Aspirin")
    assert (loaded.min_length, loaded.n_entities_, loaded.n_names_) == (2, 1, 2)
    with pytest.raises(InputDataError, match="saved for another import_id"):
        EntityMatcher.load(tmp_path / "m.json", expect={"import_id": "i2"})
    (tmp_path / "bad.json").write_bytes(b"\x80\x04not json")
    with pytest.raises(InputDataError, match="Cannot load the entity dictionary"):
        EntityMatcher.load(tmp_path / "bad.json")
