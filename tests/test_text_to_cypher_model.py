"""Text-to-Cypher with the real local model on a small imported graph: the rows are right and only a read ran.
The 1.5B model: the 0.5B wrote a self-loop (``(e {cid: 'aspirin'})-[r]->(e)``) for "How many things does aspirin
treat?". The accuracy on the shared graphs is measured by ``benchmarks/text_to_cypher.py``."""

from __future__ import annotations

import csv

import pytest

from llama_index_kgplus import _defaults
from llama_index_kgplus.kg import CypherQueryEngine, KnowledgeGraph, import_kg
from llama_index_kgplus.kg._cypher_guard import read_only_cypher
from llama_index_kgplus.llm import llm_from_spec

pytestmark = pytest.mark.slow  # loads the real local LLM

NODES = [
    ["cid:ID", "name", ":LABEL"],
    *[[n, n, "Ent"] for n in ("aspirin", "ibuprofen", "headache", "fever", "migraine", "pain")],
]
RELS = [
    [":START_ID", ":END_ID", ":TYPE", "relname"],
    ["aspirin", "headache", "Rel", "treats"],
    ["aspirin", "fever", "Rel", "treats"],
    ["ibuprofen", "pain", "Rel", "treats"],
    ["migraine", "headache", "Rel", "isa"],
    ["headache", "pain", "Rel", "isa"],
]


@pytest.fixture
def kg(tmp_path):
    for name, rows in (("nodes.csv", NODES), ("rels.csv", RELS)):
        with (tmp_path / name).open("w", newline="") as fh:
            csv.writer(fh).writerows(rows)
    uri = f"ladybug://{tmp_path / 'drugs.lbug'}"
    import_kg(uri, tmp_path / "nodes.csv", tmp_path / "rels.csv")
    with KnowledgeGraph.open(uri) as graph:
        yield graph


@pytest.fixture(scope="module")
def coder_llm():
    """The default local model (Qwen2.5-Coder-1.5B), greedy."""
    return llm_from_spec(_defaults.DEFAULT_LLM, max_new_tokens=256, context_window=4096)


def _counts(kg: KnowledgeGraph) -> list[dict]:
    return kg.dialect.run(kg.store, "MATCH (a:Ent)-[r]->(b:Ent) RETURN count(r) AS rels, count(DISTINCT a) AS heads")


def test_the_local_model_answers_with_one_read(kg, coder_llm):
    # one question only: each costs a query and an answer from the 1.5B model (the benchmark has 43)
    engine = CypherQueryEngine.from_defaults(kg, llm=coder_llm, max_rows=20)
    before = _counts(kg)
    listed = engine.query("Which things does aspirin treat?").metadata
    assert listed["refused"] is None, listed
    assert read_only_cypher(listed["cypher"], max_rows=20) == listed["cypher"]  # what ran passed the guard as is
    assert {v for row in listed["rows"] for v in row.values()} == {"headache", "fever"}, listed
    assert _counts(kg) == before
