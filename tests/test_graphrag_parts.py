"""GraphRAG building blocks, without a language model: name normalisation and merging with provenance, JSON
repair, Leiden communities (determinism, size bound, stability under updates), report context and fingerprints,
usage metering, the asyncio executor and citations.

Where an LLM is needed, a ``ScriptedLLM`` (a real LlamaIndex ``CustomLLM`` replying with scripted texts) stands
in: the real local model cannot be made to emit broken JSON on demand."""

from __future__ import annotations

import asyncio
import random
from functools import partial
from typing import Any

import pytest
from llama_index.core.llms import CompletionResponse
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import BaseModel, Field, ValidationError

from llama_index_kgplus._structured import agenerate_json, generate_json, truncated_json_candidates
from llama_index_kgplus._testing import (
    ScriptedLLM,  # replies with scripted texts (the real local model cannot be made to emit broken JSON)
)
from llama_index_kgplus.errors import StructuredOutputError
from llama_index_kgplus.graphrag import AsyncioExecutor, CommunityDetector, CommunityReportGenerator, GraphExtractor
from llama_index_kgplus.graphrag._citations import cite_sources
from llama_index_kgplus.graphrag._communities import Community
from llama_index_kgplus.graphrag._executor import LLMTask
from llama_index_kgplus.graphrag._extraction import ExtractionResult
from llama_index_kgplus.graphrag._merge import ChunkExtraction, merge_extractions, normalize_name
from llama_index_kgplus.graphrag._reports import CommunityReport
from llama_index_kgplus.graphrag._state import ChunkRecord
from llama_index_kgplus.llm import metered
from llama_index_kgplus.llm._usage import usage_meter


def _extraction(entities, relationships=()) -> ExtractionResult:
    return ExtractionResult.model_validate(
        {
            "entities": [{"name": n, "type": t, "description": d} for n, t, d in entities],
            "relationships": [
                {"source": s, "target": t, "type": "REL", "description": d, "strength": w}
                for s, t, d, w in relationships
            ],
        }
    )


# --------------------------------------------------------------------------- merging


@pytest.mark.parametrize(
    "a, b",
    [
        ("The  Python ", "python"),
        ("“Guido van Rossum”", "guido van rossum"),
        ("C++", "c++"),
        ("Edict of Nantes.", "edict of nantes"),
    ],
)
def test_normalize_name_merges_surface_forms(a, b):
    assert normalize_name(a) == normalize_name(b)


def test_normalize_name_keeps_distinct_names_apart():
    assert normalize_name("C++") != normalize_name("C#") != normalize_name("C")


def test_merge_keeps_provenance_and_merges_by_normalised_name():
    entities, relationships = merge_extractions(
        [
            ChunkExtraction(
                "d1#0",
                "d1",
                _extraction(
                    [("Python", "technology", "A language."), ("Guido", "person", "Its author.")],
                    [("Guido", "Python", "Guido created Python.", 8)],
                ),
            ),
            ChunkExtraction(
                "d2#0",
                "d2",
                _extraction(
                    [("python", "TECHNOLOGY", "Used for scripting."), ("Guido", "person", "Its author.")],
                    [("guido", "the python", "Guido maintains Python.", 5)],
                ),
            ),
        ]
    )
    assert set(entities) == {"python", "guido"}
    py = entities["python"]
    assert py.chunk_ids == ("d1#0", "d2#0") and py.doc_ids == ("d1", "d2")
    assert py.description == "A language. Used for scripting."
    assert entities["guido"].description == "Its author."  # duplicates kept once
    (rel,) = relationships.values()
    assert (rel.source, rel.target, rel.weight) == ("guido", "python", 13.0)
    assert rel.chunk_ids == ("d1#0", "d2#0") and rel.doc_ids == ("d1", "d2")


def test_merge_drops_relationships_to_unextracted_entities_and_self_loops():
    _, relationships = merge_extractions(
        [
            ChunkExtraction(
                "d#0",
                "d",
                _extraction(
                    [("A", "x", ""), ("B", "x", "")],
                    [("A", "Ghost", "no such entity", 3), ("A", "a", "self", 3), ("A", "B", "ok", 3)],
                ),
            )
        ]
    )
    assert [(r.source, r.target) for r in relationships.values()] == [("a", "b")]


def test_relationship_endpoint_named_in_the_text_becomes_a_bare_mention():
    result = _extraction(
        [("Marie Curie", "person", "A physicist.")],
        [("Marie Curie", "Warsaw", "Born there.", 5), ("Marie Curie", "Atlantis", "Invented.", 5)],
    )
    entities, relationships = merge_extractions(
        [ChunkExtraction("d#0", "d", result, "Marie Curie was born in WARSAW.")]
    )
    assert sorted(entities) == ["marie curie", "warsaw"]
    assert (entities["warsaw"].name, entities["warsaw"].type, entities["warsaw"].description) == (
        "Warsaw",
        "UNKNOWN",
        "",
    )
    assert entities["warsaw"].chunk_ids == ("d#0",)
    assert [(r.source, r.target) for r in relationships.values()] == [("marie curie", "warsaw")]


def test_merge_bounds_descriptions():
    chunks = [ChunkExtraction(f"d#{i}", "d", _extraction([("A", "x", f"fact {i}.")])) for i in range(6)]
    entities, _ = merge_extractions(chunks, max_descriptions=2)
    assert entities["a"].description == "fact 0. fact 1."
    assert len(entities["a"].chunk_ids) == 6


# --------------------------------------------------------------------------- JSON repair and retries


def test_truncated_json_keeps_complete_items():
    candidates = truncated_json_candidates('{"entities": [{"name": "A"}, {"name": "B"}, {"name": "C", "ty')
    assert {"entities": [{"name": "A"}, {"name": "B"}]} in candidates
    assert truncated_json_candidates('{"a": 1}') == [{"a": 1}]  # complete: parsed as it is
    assert truncated_json_candidates('{"a": "line\nbreak"}') == [{"a": "line\nbreak"}]  # raw control character
    assert truncated_json_candidates("no json") == []


class Pair(BaseModel):
    items: list[str] = Field(max_length=5)
    done: bool


def test_truncated_reply_is_repaired_without_another_call():
    llm = ScriptedLLM(replies=['{"done": true, "items": ["a", "b", "c'])
    result = generate_json(llm, "list", Pair, repair_truncated=True)
    assert result == Pair(items=["a", "b"], done=True) and llm.calls == 1
    assert llm.replies == []


def test_without_repair_a_truncated_reply_is_asked_again():
    llm = ScriptedLLM(replies=['{"done": true, "items": ["a", "b", "c', '{"done": true, "items": ["a"]}'])
    assert generate_json(llm, "list", Pair) == Pair(items=["a"], done=True) and llm.calls == 2


async def test_second_attempt_carries_the_problem_back_to_the_llm():
    llm = ScriptedLLM(replies=["not json at all", '{"items": [], "done": false}'])
    result = await agenerate_json(llm, "list", Pair, max_retries=1, repair_truncated=True)
    assert llm.calls == 2 and result.done is False
    assert "previous reply was not valid" in llm.prompts[1] and "previous reply" not in llm.prompts[0]


async def test_gives_up_with_a_clear_error_and_the_raw_text():
    llm = ScriptedLLM(replies=["nope", "still nope"])
    with pytest.raises(StructuredOutputError, match="no valid Pair JSON after 2 tries") as info:
        await agenerate_json(llm, "list", Pair, max_retries=1, repair_truncated=True)
    assert info.value.raw == "still nope"


def test_extractor_rejects_blank_names_and_fills_property_graph_metadata():
    from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY
    from llama_index.core.schema import TextNode

    blank = '{"entities": [{"name": "  ", "type": "x", "description": ""}], "relationships": []}'
    good = (
        '{"entities": [{"name": "Ada", "type": "person", "description": "A mathematician."}, '
        '{"name": "Engine", "type": "work", "description": "A machine."}], "relationships": '
        '[{"source": "Ada", "target": "Engine", "type": "WROTE_ABOUT", "description": "Notes.", "strength": 7}]}'
    )
    extractor = GraphExtractor.from_defaults(llm=ScriptedLLM(replies=[blank, good]))
    (node,) = extractor([TextNode(text="Ada wrote about the Engine.")])
    assert [n.name for n in node.metadata[KG_NODES_KEY]] == ["Ada", "Engine"]
    (rel,) = node.metadata[KG_RELATIONS_KEY]
    assert (rel.label, rel.source_id, rel.target_id) == ("WROTE_ABOUT", "Ada", "Engine")


def test_report_schema_rejects_empty_reports():
    with pytest.raises(ValidationError):
        CommunityReport.model_validate(
            {"title": " ", "summary": "", "rating": 5, "rating_explanation": "x", "findings": []}
        )


# --------------------------------------------------------------------------- communities


def _random_graph(n_nodes: int, n_edges: int, seed: int = 0):
    rng = random.Random(seed)
    nodes = [f"n{i:03d}" for i in range(n_nodes)]
    edges = {}
    for _ in range(n_edges):
        a, b = rng.sample(nodes, 2)
        edges[(a, b)] = float(rng.randint(1, 5))
    return nodes, edges


def _membership(communities):
    return [(c.id, c.level, c.entity_ids, c.parent, c.children) for c in communities]


def test_leiden_is_deterministic_and_bounded():
    nodes, edges = _random_graph(80, 200)
    first = CommunityDetector(max_cluster_size=8, max_levels=3, random_state=7).fit(nodes, edges)
    second = CommunityDetector(max_cluster_size=8, max_levels=3, random_state=7).fit(nodes, edges)
    assert _membership(first.communities_) == _membership(second.communities_)
    by_id = {c.id: c for c in first.communities_}
    assert sorted(n for c in first.communities_ if c.level == 0 for n in c.entity_ids) == sorted(nodes)
    for c in first.communities_:
        if c.children:
            assert sorted(n for k in c.children for n in by_id[k].entity_ids) == sorted(c.entity_ids)
        else:
            assert c.size <= 8 or c.level == 2
    assert first.n_levels_ >= 2


def test_isolated_nodes_and_components_get_their_own_communities():
    detector = CommunityDetector().fit(["a", "b", "c", "d"], {("a", "b"): 1.0})
    assert sorted(c.entity_ids for c in detector.communities_) == [("a", "b"), ("c",), ("d",)]


def test_update_keeps_untouched_communities_and_matches_ids():
    nodes, edges = _random_graph(120, 150, seed=3)
    before = CommunityDetector(max_cluster_size=8).fit(nodes, edges)
    grown = dict(edges)
    grown[("new-node", nodes[5])] = 2.0
    after = CommunityDetector(max_cluster_size=8).fit(
        nodes + ["new-node"], grown, before.communities_, next_id=before.next_id_
    )
    old = {(c.id, c.entity_ids) for c in before.communities_}
    changed = [c for c in after.communities_ if (c.id, c.entity_ids) not in old]
    assert 0 < len(changed) <= 0.2 * len(after.communities_)
    assert any("new-node" in c.entity_ids for c in changed)
    assert after.reused_  # components the edge does not touch are not recomputed
    cold = CommunityDetector(max_cluster_size=8, warm_start=False).fit(nodes + ["new-node"], grown)
    assert len(changed) <= sum(c.entity_ids not in {o[1] for o in old} for c in cold.communities_)


def test_local_moves_leave_nodes_away_from_the_change_where_they_were():
    from llama_index_kgplus.graphrag._communities import _touched

    nodes, edges = _random_graph(150, 400, seed=11)  # one large component
    before = CommunityDetector(max_cluster_size=1000, max_levels=1).fit(nodes, edges)
    grown = dict(edges)
    grown[(nodes[0], nodes[1])] = grown.get((nodes[0], nodes[1]), 0.0) + 25.0
    grown[("new-node", nodes[0])] = 3.0
    after = CommunityDetector(max_cluster_size=1000, max_levels=1).fit(
        nodes + ["new-node"], grown, before.communities_, previous_edges=edges, next_id=before.next_id_
    )
    from llama_index_kgplus.graphrag._communities import _adjacency

    touched = _touched(_adjacency(nodes + ["new-node"], grown), edges)
    assert {nodes[0], nodes[1], "new-node"} <= touched and len(touched) < len(nodes) / 2
    old_of = {n: c.id for c in before.communities_ for n in c.entity_ids}
    new_of = {n: c.entity_ids for c in after.communities_ for n in c.entity_ids}
    pinned = [n for n in nodes if n not in touched]
    for a, b in zip(pinned, pinned[1:] + pinned[:1]):
        if old_of[a] != old_of[b]:
            assert b not in new_of[a]  # pinned nodes never merge ...
    for c in before.communities_:
        kept = [n for n in c.entity_ids if n not in touched]
        assert len({new_of[n] for n in kept}) <= len(
            _connected_parts_of(kept, grown)
        )  # ... nor split (but by connectivity)
    free = CommunityDetector(max_cluster_size=1000, max_levels=1, local_moves=False).fit(
        nodes + ["new-node"], grown, before.communities_, previous_edges=edges, next_id=before.next_id_
    )
    moved = lambda d: sum(  # noqa: E731
        1
        for c in d.communities_
        for n in c.entity_ids
        if n in old_of and set(c.entity_ids) != set(_members(before, old_of[n]))
    )
    assert moved(after) <= moved(free)


def _members(detector, cid):
    return next(c.entity_ids for c in detector.communities_ if c.id == cid)


def _connected_parts_of(members, edges):
    from llama_index_kgplus.graphrag._communities import _adjacency, _connected_parts

    return _connected_parts(sorted(members), _adjacency(members, edges)) if members else []


# --------------------------------------------------------------------------- reports


def test_report_context_is_bounded_and_fingerprint_tracks_descriptions():
    entities, relationships = merge_extractions(
        [
            ChunkExtraction(
                f"d#{i}",
                "d",
                _extraction(
                    [(f"E{i}", "x", "word " * 30), (f"E{i + 1}", "x", "more " * 30)],
                    [(f"E{i}", f"E{i + 1}", "linked", 5)],
                ),
            )
            for i in range(20)
        ]
    )
    community = Community("c0", 0, tuple(sorted(entities)))
    reporter = CommunityReportGenerator(max_context_tokens=300)
    context = reporter.context(community, entities, list(relationships.values()))
    from llama_index.core.utils import get_tokenizer

    shown = context.entities_text + "\n" + context.relationships_text
    assert len(get_tokenizer()(shown)) <= 300 + 10
    assert 0 < len(context.entity_ids) < len(entities)
    fp = reporter.fingerprint(community, context)
    assert fp == reporter.fingerprint(community, reporter.context(community, entities, list(relationships.values())))
    first = context.entity_ids[0]
    changed = dict(entities)
    changed[first] = changed[first].__class__(**{**changed[first].__dict__, "description": "new text"})
    assert reporter.fingerprint(community, reporter.context(community, changed, list(relationships.values()))) != fp
    assert CommunityReportGenerator(max_findings=6).fingerprint(community, context) != fp


# --------------------------------------------------------------------------- usage and executor


def test_metered_llm_counts_calls_and_reads_reported_usage():
    class Reporting(ScriptedLLM):
        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return CompletionResponse(text="ok", raw={"usage": {"prompt_tokens": 11, "completion_tokens": 3}})

    llm = metered(Reporting(replies=[]))
    llm.complete("a")
    llm.complete("b")
    usage = usage_meter(llm).snapshot()
    assert (usage.llm_calls, usage.prompt_tokens, usage.completion_tokens, usage.estimated) == (2, 22, 6, False)
    plain = metered(ScriptedLLM(replies=["three word answer"]))
    plain.complete("one two")
    assert usage_meter(plain).snapshot().estimated is True
    assert usage_meter(plain).snapshot().completion_tokens == 3


async def _slow_task(log: list, value: int, llm) -> int:
    log.append(+1)
    assert sum(log) <= 2
    await asyncio.sleep(0.01)
    log.append(-1)
    if value == 3:
        raise ValueError("bad item")
    return value * 10


async def test_asyncio_executor_bounds_concurrency_and_records_failures():
    log: list[int] = []
    seen = []
    tasks = [LLMTask(str(i), partial(_slow_task, log, i)) for i in range(6)]
    outcomes = await AsyncioExecutor(num_workers=2).arun(tasks, ScriptedLLM(replies=[]), on_result=seen.append)
    assert [o.key for o in outcomes] == [str(i) for i in range(6)]
    assert [o.result for o in outcomes if o.ok] == [0, 10, 20, 40, 50]
    assert outcomes[3].error == "ValueError: bad item"
    assert len(seen) == 6 and max(sum(log[: i + 1]) for i in range(len(log))) == 2


# --------------------------------------------------------------------------- citations


def test_citations_keep_documents_at_or_above_the_median():
    entities, relationships = merge_extractions(
        [
            ChunkExtraction(
                "a#0", "a", _extraction([("Alpha", "x", "."), ("Beta", "x", ".")], [("Alpha", "Beta", ".", 5)])
            ),
            ChunkExtraction("a#1", "a", _extraction([("Alpha", "x", "."), ("Beta", "x", ".")])),
            ChunkExtraction("b#0", "b", _extraction([("Alpha", "x", ".")])),
            ChunkExtraction("c#0", "c", _extraction([("Gamma", "x", ".")])),
        ]
    )
    chunks = {
        cid: ChunkRecord(cid, cid.split("#")[0], int(cid[-1]), f"text of {cid}", cid)
        for cid in ("a#0", "a#1", "b#0", "c#0")
    }
    communities = {"c0": Community("c0", 0, ("alpha", "beta")), "c1": Community("c1", 0, ("gamma",))}
    citations = cite_sources(
        ["c0"],
        ["Alpha and Beta are linked."],
        communities,
        entities,
        relationships,
        lambda ids: [chunks[i] for i in ids if i in chunks],
        {"a": "Doc A", "b": "Doc B"},
    )
    # a: 2 + 2 + 1 (relationship) = 5 matches, b: 1; median 3 -> only a is cited, c (other community) never.
    assert citations.documents == [{"doc_id": "a", "title": "Doc A", "match_frequency": 5}]
    assert citations.median_match_frequency == 3
    assert [n.node.node_id for n in citations.source_nodes] == ["a#0", "a#1"]
    assert citations.source_nodes[0].score == 1.0 and citations.source_nodes[0].node.text == "text of a#0"
    narrowed = cite_sources(
        ["c0"],
        ["Only Beta matters."],
        communities,
        entities,
        relationships,
        lambda ids: [chunks[i] for i in ids if i in chunks],
        {},
    )
    assert narrowed.entity_ids == ["beta"]
