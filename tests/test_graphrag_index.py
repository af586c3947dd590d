"""The GraphRAG index end to end without a language model: build, incremental update (added, changed, deleted
documents), regeneration of exactly the reports whose community changed, bad input, crashes and resume, the
graph in the real Ladybug store and in a generic PropertyGraphStore, global search with citations, and the CLI.

The LLM here is ``RuleBasedGraphRAGLLM`` (``llama_index_kgplus.graphrag._testing``): a real LlamaIndex LLM that
computes valid extraction, report and map JSON from its prompt by rules. The behaviour under test (what is
sent to the LLM, what is stored, reused or regenerated) does not depend on language understanding, and the
real local model is far too slow for it; ``notebooks/global_search.ipynb``, which the suite runs, goes the same
path (build, global query, update) with the real local model and checks the usage and the citations.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from llama_index.core import Document

from llama_index_kgplus import InputDataError, load_corpus
from llama_index_kgplus.cli import main
from llama_index_kgplus.graphrag import GraphRAGIndex, LadybugGraphSink, PropertyGraphStoreSink
from llama_index_kgplus.graphrag._prompts import NO_DATA_ANSWER
from llama_index_kgplus.graphrag._testing import RuleBasedGraphRAGLLM

RULE_LLM = "llama_index_kgplus.graphrag._testing:RuleBasedGraphRAGLLM"

TEXTS = {
    "curie": "Marie Curie was born in Warsaw. She studied physics in Paris at the Sorbonne. "
    "With Pierre Curie she discovered Polonium and Radium. Marie Curie won the Nobel Prize twice.",
    "chopin": "Frederic Chopin was born near Warsaw. Chopin moved to Paris and wrote music for the Piano. "
    "George Sand lived with Chopin in Paris and in Nohant.",
    "vistula": "The Vistula flows through Warsaw and Krakow. Krakow was the capital of Poland before Warsaw. "
    "The Wawel Castle stands in Krakow above the Vistula.",
    "sorbonne": "The Sorbonne is a university in Paris. Pierre Curie taught at the Sorbonne. "
    "Paris is the capital of France and lies on the Seine.",
    "nantes": "The Edict of Nantes was signed by Henry IV in Nantes. It granted the Huguenots rights in France. "
    "Louis XIV revoked the Edict of Nantes in Fontainebleau.",
    "huguenots": "Many Huguenots fled France to Prussia and England. In Berlin the Huguenots built the French Church. "
    "Frederick William welcomed the Huguenots to Prussia.",
    "amazon": "The Amazon River flows through Brazil and Peru. The Amazon Rainforest covers much of Brazil. "
    "Manaus lies on the Amazon River in Brazil.",
    "nothing": "it was quiet. nothing at all happened here, and then it was over.",
}


def _docs(*names: str, **overrides: str) -> list[Document]:
    texts = {**TEXTS, **overrides}
    return [Document(id_=n, text=texts[n], metadata={"doc_id": n, "title": n.title()}) for n in names]


ALL = tuple(TEXTS)


def _index(store: Path, llm=None, **settings) -> GraphRAGIndex:
    settings.setdefault("show_progress", False)
    return GraphRAGIndex.from_defaults(store, llm=llm or RuleBasedGraphRAGLLM(), **settings)


def _graph_counts(store: Path) -> dict[str, int]:
    sink = LadybugGraphSink(store / "graph.lbug")
    try:
        return sink.counts()
    finally:
        sink.close()


def _snapshot(index: GraphRAGIndex) -> dict:
    """What a build leaves behind, for comparing two builds."""
    return {
        "entities": index.entities(),
        "relationships": index.relationships(),
        "communities": [(c.id, c.level, c.entity_ids) for c in index.communities()],
        "reports": sorted((r.community.id, r.fingerprint, r.report.title) for r in index.reports()),
    }


# --------------------------------------------------------------------------- build and query


def test_build_stores_the_graph_with_provenance(tmp_path):
    with _index(tmp_path / "s") as index:
        stats = index.build(_docs(*ALL))
        entities, relationships = index.entities(), index.relationships()
        reports = index.reports()
    assert (stats.documents, stats.chunks) == (8, 8)
    assert stats.entities == len(entities) > 20 and stats.relationships == len(relationships) > 10
    assert stats.reports_total == stats.reports_regenerated == len(reports) > 0
    assert stats.llm_calls == 8 + stats.reports_regenerated and stats.prompt_tokens > 0
    assert all(r.report is not None and 1 <= len(r.report.findings) <= 10 for r in reports)
    assert all(r.community.size >= 2 for r in reports)
    # every entity and relationship names its chunks and source documents
    assert entities["warsaw"].doc_ids == ("chopin", "curie", "vistula")
    assert all(e.chunk_ids and e.doc_ids for e in entities.values())
    assert all(r.chunk_ids and r.doc_ids for r in relationships.values())

    counts = _graph_counts(tmp_path / "s")
    assert counts["entities"] == len(entities) and counts["relationships"] == len(relationships)
    assert counts["chunks"] == 8 and counts["mentions"] == sum(len(e.chunk_ids) for e in entities.values())
    sink = LadybugGraphSink(tmp_path / "s" / "graph.lbug")
    try:
        row = sink.query(
            "MATCH (c:GraphRAGChunk)-[:GRAPHRAG_MENTIONS]->(e:GraphRAGEntity {id: $id}) "
            "RETURN e.doc_ids AS docs, collect(c.doc_id) AS chunk_docs",
            {"id": "warsaw"},
        )[0]
    finally:
        sink.close()
    assert row["docs"] == ["chopin", "curie", "vistula"] and sorted(row["chunk_docs"]) == row["docs"]


def test_a_chunk_without_entities_is_fine(tmp_path):
    with _index(tmp_path / "s") as index:
        stats = index.build(_docs("nothing", "curie"))
        assert stats.chunks_failed == 0 and stats.chunks_extracted == 2
        assert all("nothing" not in e.doc_ids for e in index.entities().values())


def test_global_search_answers_with_citations(tmp_path):
    class Recording(RuleBasedGraphRAGLLM):
        prompts: list[str] = []

        def reply(self, prompt: str) -> str:
            self.prompts.append(prompt)
            return super().reply(prompt)

    llm = Recording()
    with _index(tmp_path / "s", llm=llm) as index:
        index.build(_docs(*ALL))
        engine = index.as_query_engine(response_type="bulleted report", level=0)
        response = engine.query("Where did Marie Curie study physics?")
        chunks = {c.chunk_id: c for c in index.chunks()}
        n_reports = len(index.reports(level=0))
    meta = response.metadata
    assert "Curie" in response.response
    assert meta["reports_read"] == n_reports and meta["reports"]
    assert "as bulleted report" in llm.prompts[-1] and "-Key points-" in llm.prompts[-1]
    assert meta["llm_calls"] == n_reports + 1  # one map call per report, one reduce
    # citations: real passages of the cited documents, documents at or above the median frequency
    assert response.source_nodes
    cited = {d["doc_id"] for d in meta["documents"]}
    assert all(d["match_frequency"] >= meta["median_match_frequency"] for d in meta["documents"])
    for hit in response.source_nodes:
        assert hit.node.get_content() == chunks[hit.node.node_id].text
        assert hit.node.metadata["doc_id"] in cited and 0 < hit.score <= 1
    assert "curie" in cited


def test_map_step_reads_compressed_reports(tmp_path, embed_model):
    from llama_index_kgplus.compression import ContextCompressor

    class Recording(RuleBasedGraphRAGLLM):
        prompts: list[str] = []

        def reply(self, prompt: str) -> str:
            self.prompts.append(prompt)
            return super().reply(prompt)

    question = "Where did Marie Curie study physics?"
    lengths = {}
    for budget in (None, 30):
        llm = Recording()
        post = [ContextCompressor.from_defaults(budget, embed_model=embed_model)] if budget else []
        with _index(tmp_path / f"s{budget}", llm=llm) as index:
            index.build(_docs(*ALL))
            llm.prompts.clear()
            response = index.as_query_engine(level=0, map_postprocessors=post).query(question)
        maps = [p for p in llm.prompts if "-Key points-" not in p]
        lengths[budget] = sum(len(p) for p in maps) / len(maps)
        assert response.metadata["usage"]["llm_calls"] == len(llm.prompts)
    assert lengths[30] < 0.8 * lengths[None]  # every report read in its most relevant sentences only


def test_a_question_no_report_can_answer(tmp_path):
    with _index(tmp_path / "s") as index:
        index.build(_docs("curie", "chopin"))
        response = index.as_query_engine().query("zzz qqq?")
    assert response.response == NO_DATA_ANSWER
    assert response.source_nodes == [] and response.metadata["documents"] == []


# --------------------------------------------------------------------------- incremental updates


def test_unchanged_corpus_costs_nothing(tmp_path):
    with _index(tmp_path / "s") as index:
        index.build(_docs(*ALL))
        before = _snapshot(index)
        stats = index.update(_docs(*ALL))
        assert (stats.llm_calls, stats.reports_regenerated, stats.chunks_extracted) == (0, 0, 0)
        assert stats.reports_reused == stats.reports_total
        assert _snapshot(index) == before


def test_adding_a_document_regenerates_only_changed_communities(tmp_path):
    with _index(tmp_path / "s") as index:
        index.build(_docs(*[n for n in ALL if n != "sorbonne"]))
        old = {fp for _, fp in index.state.communities() if fp}
        stats = index.update(_docs(*ALL))
        new = {fp for _, fp in index.state.communities() if fp}
        regenerated_runs = {r.fingerprint for r in index.reports() if r.fingerprint not in old}
    assert stats.documents_added == 1 and stats.chunks_extracted == 1
    assert stats.reports_regenerated == len(new - old) == len(regenerated_runs) > 0
    assert stats.reports_reused == len(new & old) > 0
    assert stats.llm_calls == 1 + stats.reports_regenerated
    assert stats.reports_regenerated < stats.reports_total


def test_changed_document_is_re_extracted_alone(tmp_path):
    with _index(tmp_path / "s") as index:
        index.build(_docs(*ALL))
        stats = index.update(_docs(*ALL, amazon="The Amazon River flows through Brazil. Belem lies at its mouth."))
        entities = index.entities()
    assert (stats.documents_changed, stats.chunks_extracted) == (1, 1)
    assert "belem" in entities and "amazon" in entities["belem"].doc_ids
    assert "manaus" not in entities  # only the old text of 'amazon' named it


def test_deleted_document_leaves_no_orphans(tmp_path):
    store = tmp_path / "s"
    with _index(store) as index:
        index.build(_docs(*ALL))
        stats = index.update(_docs(*[n for n in ALL if n != "curie"]))
        entities, relationships = index.entities(), index.relationships()
    assert stats.documents_deleted == 1 and stats.llm_calls == stats.reports_regenerated
    assert "polonium" not in entities and "nobel prize" not in entities  # only 'curie' named them
    assert entities["warsaw"].doc_ids == ("chopin", "vistula")  # shared: kept, provenance updated
    assert all("curie" not in e.doc_ids for e in entities.values())
    assert all("curie" not in r.doc_ids for r in relationships.values())
    counts = _graph_counts(store)
    assert (counts["entities"], counts["relationships"], counts["chunks"]) == (len(entities), len(relationships), 7)
    sink = LadybugGraphSink(store / "graph.lbug")
    try:
        assert sink.query("MATCH (e:GraphRAGEntity {id: $id}) RETURN e.id", {"id": "polonium"}) == []
    finally:
        sink.close()


def test_settings_are_kept_with_the_store(tmp_path):
    with _index(tmp_path / "s", chunk_size=64, detector={"max_cluster_size": 4, "random_state": 5}) as index:
        index.build(_docs("curie", "chopin"))
    reopened = _index(tmp_path / "s")
    assert (reopened.chunk_size, reopened.detector.max_cluster_size, reopened.detector.random_state) == (64, 4, 5)
    reopened.close()


def test_a_text_splitter_replaces_the_sentence_splitter_and_a_new_one_re_chunks(tmp_path):
    from llama_index.core.node_parser import SentenceSplitter, TokenTextSplitter

    by_sentence = SentenceSplitter(chunk_size=32, chunk_overlap=0, paragraph_separator="\n\n\n")
    with _index(tmp_path / "s", text_splitter=by_sentence) as index:
        index.build(_docs("amazon", "curie"))
        first = [c.text for c in index.chunks()]
        assert len(first) > 2  # 32-token chunks: each document splits
        assert index.update(_docs("amazon", "curie")).chunks_extracted == 0  # same splitter: nothing to redo
    reopened = _index(tmp_path / "s", text_splitter=TokenTextSplitter(chunk_size=200, chunk_overlap=0))
    with reopened:
        stats = reopened.update(_docs("amazon", "curie"))
        assert stats.documents_changed == 2 and [c.text for c in reopened.chunks()] != first


def test_property_graph_store_sink_holds_the_same_graph(tmp_path):
    from llama_index.core.graph_stores import SimplePropertyGraphStore

    store = SimplePropertyGraphStore()
    with _index(tmp_path / "s", graph_sink=PropertyGraphStoreSink(store)) as index:
        index.build(_docs(*ALL))
        index.update(_docs(*[n for n in ALL if n != "curie"], amazon="The Amazon flows through Brazil to Belem."))
        entities, relationships = index.entities(), index.relationships()
    nodes = store.graph.get_all_nodes()
    assert {n.id for n in nodes if n.label != "text_chunk"} == set(entities)
    assert {n.id for n in nodes if n.label == "text_chunk"} == {c for e in entities.values() for c in e.chunk_ids} | {
        "nothing#0"
    }
    triples = {(s.id, r.label, t.id) for s, r, t in store.get_triplets(ids=sorted(entities)) if r.label != "MENTIONS"}
    assert triples == {(r.source, r.type, r.target) for r in relationships.values()}


# --------------------------------------------------------------------------- bad input


def test_empty_corpus_is_refused_and_nothing_is_lost(tmp_path):
    with _index(tmp_path / "s") as index:
        index.build(_docs("curie", "chopin"))
        before = _snapshot(index)
        with pytest.raises(InputDataError, match="corpus is empty"):
            index.update([])
        assert _snapshot(index) == before
    with pytest.raises(InputDataError, match="no document with text"):
        load_corpus(tmp_path / "empty.jsonl") if (tmp_path / "empty.jsonl").write_text("\n") is not None else None


def test_duplicate_ids_are_refused(tmp_path):
    with _index(tmp_path / "s") as index, pytest.raises(InputDataError, match="Duplicate document ids"):
        index.build(_docs("curie") + _docs("curie"))


class BrokenForSome(RuleBasedGraphRAGLLM):
    """Replies invalid JSON to every extraction prompt whose text contains ``marker``."""

    marker: str = "Amazon"

    def reply(self, prompt: str) -> str:
        if "-Text-" in prompt and self.marker in prompt:
            return '{"entities": [{"name": "Amazon River", "type": '
        return super().reply(prompt)


def test_invalid_json_is_recorded_then_retried_by_the_next_update(tmp_path, caplog):
    with _index(tmp_path / "s", llm=BrokenForSome()) as index:
        stats = index.build(_docs(*ALL))
        failures = index.state.failed_extractions(index.extractor.config_hash())
    assert stats.chunks_failed == 1 and stats.chunks_extracted == 7
    assert stats.llm_calls == 7 + 2 + stats.reports_regenerated  # the broken chunk: two attempts
    ((chunk, error),) = failures
    assert chunk.doc_id == "amazon" and "no valid Extraction JSON after 2 tries" in error
    assert "Extraction failed" in caplog.text
    with _index(tmp_path / "s") as index:
        stats = index.update(_docs(*ALL))
        assert stats.chunks_extracted == 1 and stats.chunks_failed == 0
        assert "manaus" in index.entities()


class EmptyReports(RuleBasedGraphRAGLLM):
    def report(self, prompt: str) -> dict:
        return {"title": " ", "summary": "", "rating": 5, "rating_explanation": " ", "findings": []}


def test_empty_reports_are_failures_not_reports(tmp_path):
    with _index(tmp_path / "s", llm=EmptyReports()) as index:
        stats = index.build(_docs(*ALL))
        reports = index.reports()
        response = index.as_query_engine(level=0).query("Where did Marie Curie study?")
    assert stats.reports_failed == stats.reports_total > 0 and stats.reports_regenerated == 0
    assert all(r.report is None and "no valid Report JSON" in r.error for r in reports)
    assert response.response == NO_DATA_ANSWER and response.metadata["reports_read"] == 0
    with _index(tmp_path / "s") as index:  # a working LLM fills them in
        assert index.update(_docs(*ALL)).reports_regenerated == stats.reports_total


class SimulatedCrash(BaseException):
    """Stands for the process dying (not an error the executor may record)."""


class CrashingLLM(RuleBasedGraphRAGLLM):
    crash_on_report: int = 3
    reports_seen: int = 0

    def report(self, prompt: str) -> dict:
        self.reports_seen += 1
        if self.reports_seen == self.crash_on_report:
            raise SimulatedCrash()
        return super().report(prompt)


def test_crash_mid_indexing_resumes_without_duplicates(tmp_path):
    docs = _docs(*ALL)
    with _index(tmp_path / "clean") as index:
        clean_stats = index.build(docs)
        clean = _snapshot(index)
    with _index(tmp_path / "s", llm=CrashingLLM(), executor=None) as index:
        index.executor.num_workers = 1
        with pytest.raises(SimulatedCrash):
            index.build(docs)
    with sqlite3.connect(tmp_path / "s" / "state.sqlite") as db:
        kept = db.execute("SELECT count(*) FROM reports WHERE status = 'ok'").fetchone()[0]
    assert 2 <= kept < clean_stats.reports_total
    with _index(tmp_path / "s") as index:
        stats = index.build(docs)
        assert stats.resumed and stats.chunks_extracted == 0  # extractions were kept
        assert (
            stats.reports_regenerated == clean_stats.reports_total - kept
        )  # reports written before the crash were kept
        assert stats.llm_calls == stats.reports_regenerated
        assert _snapshot(index) == clean
        assert index.state.count("reports") == clean_stats.reports_total
        assert [r["status"] for r in index.runs()] == ["resumed", "done"]
    counts = _graph_counts(tmp_path / "s")
    assert (counts["entities"], counts["relationships"]) == (len(clean["entities"]), len(clean["relationships"]))


_KILL_SCRIPT = """
import sys
from llama_index_kgplus import load_corpus
from llama_index_kgplus.graphrag import GraphRAGIndex
from llama_index_kgplus.graphrag._testing import RuleBasedGraphRAGLLM
index = GraphRAGIndex.from_defaults(sys.argv[1], llm=RuleBasedGraphRAGLLM(delay_seconds=0.3), show_progress=False)
index.executor.num_workers = 1
index.build(load_corpus(sys.argv[2]))
"""


def test_killed_process_resumes_without_duplicates(tmp_path):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps({"id": d.id_, "title": d.id_, "text": d.text}) + "\n" for d in _docs(*ALL)))
    script = tmp_path / "build.py"
    script.write_text(_KILL_SCRIPT)
    store = tmp_path / "s"
    proc = subprocess.Popen([sys.executable, str(script), str(store), str(corpus)], env=os.environ.copy())
    try:
        deadline = time.time() + 120
        done = 0
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
            try:
                with sqlite3.connect(f"file:{store / 'state.sqlite'}?mode=ro", uri=True) as db:
                    done = db.execute("SELECT count(*) FROM extractions").fetchone()[0]
            except sqlite3.OperationalError:  # not created yet
                continue
            if done >= 4:
                break
        assert proc.poll() is None, "the build ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    with _index(tmp_path / "clean") as index:
        index.build(load_corpus(corpus))
        clean = _snapshot(index)
    with _index(store) as index:
        stats = index.build(load_corpus(corpus))
        assert stats.resumed and 0 < stats.chunks_extracted <= 8 - done
        assert _snapshot(index) == clean
    counts = _graph_counts(store)
    assert (counts["entities"], counts["chunks"]) == (len(clean["entities"]), 8)


# An update in a process of its own, killed (kill -9) when its LLM is called for the CALL-th time (before it
# answers), or right after the state method AFTER returns; one LLM call at a time, so the moment is exact.
_KILL_UPDATE = """
import os, signal, sys
from llama_index_kgplus import load_corpus
from llama_index_kgplus.graphrag import GraphRAGIndex
from llama_index_kgplus.graphrag._state import GraphRAGState
from llama_index_kgplus.graphrag._testing import RuleBasedGraphRAGLLM

store, corpus, call, after = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
calls = [0]

class DiesAtCall(RuleBasedGraphRAGLLM):
    def reply(self, prompt):
        calls[0] += 1
        if calls[0] == call:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().reply(prompt)

if after:
    method = getattr(GraphRAGState, after)

    def then_die(self, *args, **kwargs):
        method(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(GraphRAGState, after, then_die)
index = GraphRAGIndex.from_defaults(store, llm=DiesAtCall(), show_progress=False)
index.executor.num_workers = 1
index.update(load_corpus(corpus))
"""
# the update: "sorbonne" added, "amazon" changed, "curie" deleted
_BEFORE = [n for n in ALL if n != "sorbonne"]
_AFTER = {n: TEXTS[n] for n in ALL if n != "curie"} | {
    "amazon": "The Amazon River flows through Brazil. Belem lies at its mouth."
}


@pytest.fixture(scope="module")
def updated_store(tmp_path_factory) -> tuple[Path, dict, object]:
    """A store of ``_BEFORE`` (to copy) and the snapshot and stats of its uninterrupted update to ``_AFTER``."""
    import shutil

    folder = tmp_path_factory.mktemp("update")
    with _index(folder / "before") as index:
        index.build(_docs(*_BEFORE))
    shutil.copytree(folder / "before", folder / "clean")
    with _index(folder / "clean") as index:
        stats = index.update(_docs(*_AFTER, **_AFTER))
        assert stats.chunks_extracted == 2 and stats.reports_regenerated >= 3  # moments in both LLM steps
        return folder / "before", _snapshot(index), stats


@pytest.mark.parametrize(
    ("call", "after"),
    [
        (1, ""),
        (2, ""),
        (3, ""),
        (4, ""),
        (-1, ""),
        (0, "replace_graph"),
        (0, "replace_communities"),
        (0, "prune_reports"),
    ],
)
def test_a_killed_update_resumes_to_the_state_of_an_uninterrupted_one(tmp_path, updated_store, call, after):
    """Calls 1 and 2 extract the added and the changed document, the others write reports (-1: the last one);
    the graph is replaced between the two steps, the communities and reports after them. A real ``kill -9``
    rather than an exception raised from the LLM: nothing of the process (no ``finally``, no closing of the
    stores) runs after it."""
    import shutil

    before, clean, clean_stats = updated_store
    call = clean_stats.llm_calls if call == -1 else call
    store = shutil.copytree(before, tmp_path / "s")
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps({"id": n, "title": n.title(), "text": t}) + "\n" for n, t in _AFTER.items()))
    script = tmp_path / "update.py"
    script.write_text(_KILL_UPDATE)
    run = subprocess.run([sys.executable, str(script), str(store), str(corpus), str(call), after],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == -9, run.stderr[-2000:]
    with _index(store) as index:
        stats = index.update(load_corpus(corpus))
        assert _snapshot(index) == clean  # entities, relationships, communities and reports
        assert stats.resumed and [r["status"] for r in index.runs()][-2:] == ["resumed", "done"]
        # the answers saved before the kill are never asked for again
        answered = {"": call - 1, "replace_graph": clean_stats.chunks_extracted}.get(after, clean_stats.llm_calls)
        assert stats.llm_calls == clean_stats.llm_calls - answered
        assert index.state.count("reports") == clean_stats.reports_total
    counts = _graph_counts(store)
    assert (counts["entities"], counts["relationships"]) == (len(clean["entities"]), len(clean["relationships"]))
    assert counts["chunks"] == clean_stats.chunks


# --------------------------------------------------------------------------- Ray


class Unpicklable(RuleBasedGraphRAGLLM):
    """Stands for a local llama.cpp model, which cannot be sent to another process."""

    def __reduce__(self):
        raise TypeError("cannot pickle a llama.cpp context")


@pytest.mark.slow
def test_ray_executor_gives_the_same_index(tmp_path, monkeypatch):
    """Ray in a local instance (2 CPUs) on this machine (Ray 2.60 has no local_mode any more); the rule-based
    LLM is pickled to its workers, or built there by a factory, where a local model would take the task's CPUs as
    its thread count."""
    from llama_index_kgplus import KGPlusError
    from llama_index_kgplus.graphrag import RayExecutor
    from llama_index_kgplus.graphrag._executor import LLMTask

    monkeypatch.delenv("KGPLUS_LLM_THREADS", raising=False)  # Ray's workers inherit the driver's environment

    async def threads_in_the_worker(llm):
        return os.environ.get("KGPLUS_LLM_THREADS")

    with _index(tmp_path / "asyncio") as index:
        expected_stats = index.build(_docs(*ALL))
        expected = _snapshot(index)
    executor = RayExecutor(num_workers=2, num_cpus=2)
    try:
        with _index(tmp_path / "ray", executor=executor) as index:
            stats = index.build(_docs(*ALL))
            assert _snapshot(index) == expected
            factory = RayExecutor.from_defaults(llm_factory=RuleBasedGraphRAGLLM, num_workers=2)
            response = index.as_query_engine(level=0, executor=factory).query("Where did Marie Curie study physics?")
            [threads] = factory.run([LLMTask("threads", threads_in_the_worker)], RuleBasedGraphRAGLLM())
        with _index(tmp_path / "bad", llm=Unpicklable(), executor=executor) as index:
            with pytest.raises(KGPlusError, match="llm_factory"):
                index.build(_docs("curie"))
    finally:
        executor.shutdown()
    assert stats.llm_calls == expected_stats.llm_calls  # counted in the workers, summed here
    assert stats.completion_tokens == expected_stats.completion_tokens
    assert response.source_nodes and response.metadata["llm_calls"] == response.metadata["reports_read"] + 1
    assert threads.result == "1"  # a Ray task holds one CPU


def test_the_cli_leaves_the_ray_workers_threads_to_the_task_unless_told():
    from llama_index_kgplus.cli._graphrag import _executor
    from llama_index_kgplus.cli._parser import build_parser

    for extra, threads in (([], None), (["--threads", "3"], 3)):
        args = build_parser().parse_args(["graphrag", "index", "d.jsonl", "--store", "s", "--executor", "ray", *extra])
        executor = _executor(args)  # nothing starts until a task runs
        assert executor._llm_factory.keywords["n_threads"] == threads


# --------------------------------------------------------------------------- CLI


def _write_corpus(path: Path, names) -> Path:
    path.write_text("".join(json.dumps({"id": n, "title": n.title(), "text": TEXTS[n]}) + "\n" for n in names))
    return path


def test_cli_index_update_query(tmp_path, capsys):
    store = tmp_path / "store"
    first = _write_corpus(tmp_path / "a.jsonl", [n for n in ALL if n != "sorbonne"])
    full = _write_corpus(tmp_path / "b.jsonl", ALL)
    common = ["--store", str(store), "--llm", RULE_LLM, "--quiet"]

    assert main(["graphrag", "index", str(first), *common, "--json"]) == 0
    out = capsys.readouterr()
    built = json.loads(out.out)
    assert list(built) == [
        "documents",
        "chunks",
        "entities",
        "relationships",
        "communities",
        "reports_total",
        "reports_regenerated",
        "llm_calls",
        "prompt_tokens",
        "completion_tokens",
        "seconds",
    ]
    assert built["documents"] == 7 and built["reports_regenerated"] == built["reports_total"] > 0
    assert "community reports: regenerated" in out.err

    assert main(["graphrag", "index", str(first), *common]) == 2
    assert "already holds a GraphRAG index of 7 documents" in capsys.readouterr().err

    assert main(["graphrag", "update", str(full), *common]) == 0
    out = capsys.readouterr().out
    updated = json.loads(out) if out.startswith("{") else None
    assert updated is None and "updated 8 documents (1 added, 0 changed, 0 deleted)" in out
    assert "community reports: regenerated" in out and "LLM: " in out

    assert (
        main(
            [
                "graphrag",
                "query",
                "Where did Marie Curie study physics?",
                *common,
                "--json",
                "--response-type",
                "bulleted report",
                "--level",
                "0",
            ]
        )
        == 0
    )
    record = json.loads(capsys.readouterr().out)
    assert record["answer"] and record["response_type"] == "bulleted report"
    assert record["sources"] and all(s["text"] and s["doc_id"] for s in record["sources"])
    assert record["llm_calls"] > 0


def test_cli_errors_are_clear(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["graphrag", "index", str(tmp_path / "empty"), "--store", str(tmp_path / "s"), "--llm", RULE_LLM]) == 2
    assert "holds no document with text" in capsys.readouterr().err
    corpus = _write_corpus(tmp_path / "a.jsonl", ["curie"])
    assert main(["graphrag", "update", str(corpus), "--store", str(tmp_path / "s")]) == 2
    assert "holds no GraphRAG index" in capsys.readouterr().err
    assert main(["graphrag", "query", "why?", "--store", str(tmp_path / "s")]) == 2
    assert "holds no GraphRAG index" in capsys.readouterr().err
    assert main(["graphrag", "index", str(corpus), "--store", str(tmp_path / "s"), "--llm", "no.such.module:llm"]) == 2
    assert "cannot import" in capsys.readouterr().err
