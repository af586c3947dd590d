"""The main job end to end with the real local models, and proof that nothing reaches the network."""

from __future__ import annotations

import io

import pytest

from llama_index_kgplus import _defaults
from llama_index_kgplus._demo import run_demo
from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec


@pytest.mark.slow
def test_demo_answers_every_step_with_sources_and_no_network(small_llm, embed_model, no_network):
    out = io.StringIO()
    responses = run_demo(llm=small_llm, embed_model=embed_model, out=out)
    printed = out.getvalue()

    hierarchy = responses["hierarchy"]
    assert "tutorial/venv" in {hit.node.metadata.get("doc_id") for hit in hierarchy.source_nodes}
    assert "venv" in str(hierarchy).lower()
    assert "level 1:" in printed  # the index was built with summary nodes

    glossary = responses["glossary"].metadata
    assert glossary["original_query"].startswith("How can a function clean up")
    assert "glossary terms:" in printed
    assert "tutorial/errors" in {hit.node.metadata.get("doc_id") for hit in responses["glossary"].source_nodes}

    kg = responses["kg"].metadata
    assert {e["cid"] for e in kg["kg_entities"]} == {"virus", "disease_or_syndrome"}
    assert "virus -[causes]-> disease or syndrome" in [p["text"] for p in kg["kg_paths"]]
    assert "path: virus -[causes]-> disease or syndrome" in printed
    multihop = responses["multihop"]
    assert {"Lothair II", "Ermengarde of Tours"} <= {hit.node.metadata["doc_id"] for hit in multihop.source_nodes}
    assert "reached by: Lothair II -MENTIONS (about)-> [Lothair II] -MENTIONS-> Ermengarde of Tours" in printed
    assert [d.route for d in responses["routes"]] == ["local", "multihop", "kg", "sql"]
    assert all(d.decided_by == "examples" for d in responses["routes"])  # no LLM call to route
    table = responses["table"].metadata
    assert (table["route"], table["engine"]) == ("sql", "sql") and "SQL: SELECT" in printed
    assert table["refused"] is None and table["sql"].startswith("SELECT")
    assert "in the browser: kgplus ui --index " in printed  # how to open the workbench on this data
    answers = {k: v for k, v in responses.items() if k != "routes"}
    assert all(str(r).strip() for r in answers.values())
    assert no_network == []


@pytest.mark.slow
def test_defaults_load_and_run_without_network(no_network, tmp_path):
    from llama_index_kgplus.graph_stores import open_graph_store

    vec = embed_model_from_spec().get_text_embedding("offline")
    assert len(vec) == 384
    llm = llm_from_spec(_defaults.FAST_LLM, max_new_tokens=4)
    assert llm.complete("Say yes.").text.strip()
    open_graph_store(f"ladybug://{tmp_path / 'g.lbug'}").structured_query("RETURN 1 AS x")
    assert no_network == []


def test_network_guard_really_blocks(no_network):
    import socket

    with pytest.raises(OSError, match="network blocked"):
        socket.create_connection(("192.0.2.1", 80), timeout=1)
    assert no_network
