"""The main job end to end with the real local models, and proof that nothing reaches the network."""

from __future__ import annotations

import io

import pytest

from llama_index_kgplus import defaults
from llama_index_kgplus.demo import run_demo


@pytest.mark.slow
def test_demo_answers_from_the_sample_with_sources(small_llm, embed_model, no_network):
    out = io.StringIO()
    (response,) = run_demo(
        llm=small_llm,
        embed_model=embed_model,
        questions=("How do I create a virtual environment with the venv module?",),
        out=out,
    )
    sources = [hit.node.metadata["doc_id"] for hit in response.source_nodes]
    assert "tutorial/venv" in sources
    assert "venv" in str(response).lower()
    printed = out.getvalue()
    assert "A: " in printed and "[tutorial/venv]" in printed
    assert no_network == []


@pytest.mark.slow
def test_defaults_load_and_run_without_network(no_network, tmp_path):
    from llama_index_kgplus.graph_stores import open_graph_store

    vec = defaults.default_embed_model().get_text_embedding("offline")
    assert len(vec) == 384
    llm = defaults.default_llm(defaults.FAST_LLM, max_new_tokens=4)
    assert llm.complete("Say yes.").text.strip()
    open_graph_store(f"ladybug://{tmp_path / 'g.lbug'}").structured_query("RETURN 1 AS x")
    assert no_network == []


def test_network_guard_really_blocks(no_network):
    import socket

    with pytest.raises(OSError, match="network blocked"):
        socket.create_connection(("192.0.2.1", 80), timeout=1)
    assert no_network
