"""GraphRAG end to end with the real local LLM (Qwen2.5-Coder-0.5B via llama.cpp): index, update, global query.

Kept tiny on purpose (three one-sentence documents, short limits): the small model is slow on a shared 2-core
machine. The incremental logic is tested exhaustively in ``test_graphrag_index.py`` with a rule-based LLM;
here the point is that the real model's output passes the schemas and flows through every step, and that the
usage figures come from llama.cpp itself."""

from __future__ import annotations

import pytest
from llama_index.core import Document

from llama_index_kgplus.graphrag import CommunityReportGenerator, GraphExtractor, GraphRAGIndex, LadybugGraphSink

TEXTS = {
    "curie": "Marie Curie was born in Warsaw and won the Nobel Prize in Physics.",
    "chopin": "Frederic Chopin was born near Warsaw and composed music for the piano.",
    "poland": "Warsaw is the capital of Poland and lies on the Vistula river.",
}


@pytest.fixture(scope="module")
def one_thread_llm():
    """The 0.5B model like the shared ``small_llm`` fixture, but on one llama.cpp thread: on this shared 2-core
    machine, with other jobs running, two spin-waiting threads generated 1.6-2.1 tokens/s against 13.5-14.5 for
    one (measured back to back)."""
    from llama_index_kgplus import _defaults
    from llama_index_kgplus.llm import llm_from_spec

    return llm_from_spec(_defaults.FAST_LLM, max_new_tokens=256, context_window=4096, n_threads=1)


def _docs(*names: str) -> list[Document]:
    return [Document(id_=n, text=TEXTS[n], metadata={"doc_id": n, "title": n.title()}) for n in names]


@pytest.mark.slow
def test_index_update_query_with_the_local_llm(one_thread_llm, tmp_path):
    index = GraphRAGIndex.from_defaults(
        tmp_path / "store",
        llm=one_thread_llm,
        chunk_size=128,
        min_community_size=1,  # one-sentence documents may yield no relationship; report every entity then
        extractor=GraphExtractor(
            min_entities=1, max_entities=3, max_relationships=3, max_description_chars=100, max_tokens=400
        ),
        reporter=CommunityReportGenerator(min_findings=2, max_findings=2, max_chars=120, max_tokens=400),
        show_progress=False,
    )
    with index:
        built = index.build(_docs("curie", "chopin"))
        assert built.chunks_extracted == 2 and built.chunks_failed == 0
        assert built.entities >= 2 and built.reports_total >= 1
        assert built.reports_regenerated + built.reports_failed == built.reports_total
        # usage figures reported by llama.cpp, not estimated
        assert built.llm_calls >= 2 + built.reports_total and not built.tokens_estimated
        assert built.prompt_tokens > 100 and built.completion_tokens > 20
        entities = index.entities()
        assert all(e.chunk_ids and set(e.doc_ids) <= {"curie", "chopin"} for e in entities.values())

        updated = index.update(_docs("curie", "chopin", "poland"))
        assert (updated.documents_added, updated.chunks_extracted) == (1, 1)
        assert updated.reports_regenerated + updated.reports_reused + updated.reports_failed == updated.reports_total
        # only the new document and the regenerated reports went to the LLM (at most 2 attempts each)
        tasks = 1 + updated.reports_regenerated + updated.reports_failed
        assert tasks <= updated.llm_calls <= 2 * tasks
        assert any("poland" in e.doc_ids for e in index.entities().values())

        engine = index.as_query_engine(
            response_type="one short paragraph", level=0, max_reports=2, map_max_tokens=200, reduce_max_tokens=120
        )
        response = engine.query("Who was born in Warsaw?")
        chunks = {c.chunk_id: c.text for c in index.chunks()}
    assert response.response.strip()
    meta = response.metadata
    assert meta["reports_read"] <= 2 and meta["llm_calls"] >= meta["reports_read"]
    for hit in response.source_nodes:  # citations lead to the real passages
        assert hit.node.get_content() == chunks[hit.node.node_id]
    if meta["key_points"]:
        assert response.source_nodes and meta["documents"]

    sink = LadybugGraphSink(tmp_path / "store" / "graph.lbug")
    try:
        assert sink.counts()["chunks"] == 3
    finally:
        sink.close()
