"""Term selection, the drift guard, the rewrite transform, fusion and the GlossaryQueryEngine.

Real components: the real embedding model, the bundled sample docs and glossary, a real vector index. The drift
guard and the review hook need rewrites chosen by the test (a real model's output cannot be chosen), so those
tests use ``ScriptedLLM``: a complete LlamaIndex ``CustomLLM`` that returns the rewrites each test scripts and a
fixed answer to synthesis prompts, and records every prompt. The real local LLM (0.5B) runs in the few
``slow`` tests at the end, end to end on the sample docs.
"""

from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest
from llama_index.core.base.response.schema import AsyncStreamingResponse, StreamingResponse
from llama_index.core.query_engine import TransformQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llama_index_kgplus import build_index, load_corpus, sample
from llama_index_kgplus._testing import ScriptedLLM
from llama_index_kgplus.glossary import (
    DriftGuard,
    Glossary,
    GlossaryQueryEngine,
    GlossaryQueryRewriter,
    GlossaryTermSelector,
)
from llama_index_kgplus.glossary._fusion import reciprocal_rank_fusion
from llama_index_kgplus.glossary._prompts import clean_rewrite

QUESTION = "Why must dictionary keys be immutable?"
GOOD_REWRITE = (
    "Why must dictionary keys be immutable and hashable objects? How does a dictionary use the hash value "
    "of a hashable key to look up its value?"
)
OFF_TOPIC = "Which football team won the 1998 world cup final in Paris?"


REWRITE_PROMPT = r"Rewritten query:\s*\Z"


def scripted(rewrites=(), answer: str = "The scripted answer.") -> ScriptedLLM:
    """Scripted rewrites for prompts ending in 'Rewritten query:', and a fixed answer to anything else."""
    return ScriptedLLM(rules=[(REWRITE_PROMPT, list(rewrites))], default=answer)


def rewrite_prompts(llm: ScriptedLLM) -> list[str]:
    return [p for p in llm.prompts if re.search(REWRITE_PROMPT, p)]


@pytest.fixture(scope="module")
def glossary() -> Glossary:
    return Glossary.load(sample.sample_glossary_path())


@pytest.fixture(scope="module")
def index(embed_model):
    return build_index(load_corpus(sample.SAMPLE_DOCS), None, embed_model=embed_model, show_progress=False)


@pytest.fixture(scope="module")
def selector(glossary, embed_model) -> GlossaryTermSelector:
    """One selector whose entry embeddings are computed once for the module (the defaults' settings)."""
    selector = GlossaryTermSelector.from_defaults(glossary, embed_model=embed_model)
    selector.warm_up()
    return selector


def make_rewriter(selector, embed_model, rewrites=(), **kwargs) -> tuple[GlossaryQueryRewriter, ScriptedLLM]:
    llm = scripted(rewrites)
    rewriter = GlossaryQueryRewriter.from_defaults(
        selector.glossary, llm=llm, embed_model=embed_model, selector=selector, **kwargs
    )
    return rewriter, llm


def make_engine(selector, index, embed_model, rewrites=(), **kwargs) -> tuple[GlossaryQueryEngine, ScriptedLLM]:
    rewriter, llm = make_rewriter(selector, embed_model, rewrites, review_hook=kwargs.pop("review_hook", None))
    engine = GlossaryQueryEngine.from_defaults(
        None, index=index, llm=llm, embed_model=embed_model, rewriter=rewriter, **kwargs
    )
    return engine, llm


# ----------------------------------------------------------------------------- selection


def test_selection_puts_query_terms_first_then_embedding_neighbours(selector):
    selection = selector.select(QUESTION)
    reasons = [(s.entry.term, s.reason) for s in selection.entries]
    assert reasons[:2] == [("dictionary", "matched"), ("immutable", "matched")]
    similar = [s for s in selection.entries if s.reason == "similar"]
    assert 1 <= len(similar) <= 3
    assert "hashable" in [s.entry.term for s in similar]  # the concept the answer needs, not named in the question
    assert all(s.score >= selector.min_similarity for s in similar)
    assert selection.tokens <= selector.max_tokens
    assert selection.text.startswith("- dictionary: ")


def test_budget_drops_what_does_not_fit(selector):
    selector = selector.model_copy(update={"max_tokens": 60})  # keeps the computed entry embeddings
    selection = selector.select(QUESTION)
    assert selection.tokens <= 60
    assert selection.dropped, "with a 60-token budget some entries must be left out"
    assert set(selection.terms).isdisjoint(s.entry.term for s in selection.dropped)


def test_long_explanations_are_cut_at_a_sentence(glossary, embed_model):
    selector = GlossaryTermSelector.from_defaults(glossary, embed_model=embed_model, top_k=0, max_explanation_tokens=40)
    line = selector.select("What is an abstract base class?").entries[0]
    assert line.entry.term == "abstract base class"
    assert line.text.endswith("...") and line.tokens < 60
    assert len(line.entry.explanation) > len(line.text)


def test_whole_glossary_option_returns_every_entry_unbudgeted(glossary, embed_model):
    selector = GlossaryTermSelector.from_defaults(glossary, embed_model=embed_model, whole_glossary=True)
    selection = selector.select("anything at all")
    assert selection.terms == glossary.terms
    assert selection.tokens > selector.max_tokens  # the point of the comparison: far over the budget


def test_top_k_zero_matches_only_and_never_embeds(glossary):
    selector = GlossaryTermSelector(glossary=glossary, top_k=0)  # no embed model at all
    assert selector.select(QUESTION).terms == ["dictionary", "immutable"]
    assert selector.select("nothing relevant here").terms == []


def test_entry_embeddings_are_cached_across_selectors(glossary, embed_model, monkeypatch):
    first = GlossaryTermSelector.from_defaults(glossary, embed_model=embed_model)
    first.warm_up()
    second = GlossaryTermSelector.from_defaults(glossary, embed_model=embed_model)
    monkeypatch.setattr(type(embed_model), "get_text_embedding_batch", lambda *a, **k: pytest.fail("embedded again"))
    second.warm_up()
    assert np.array_equal(first.entry_embeddings_, second.entry_embeddings_)
    path = second._cache_path(second._entry_texts())
    path.write_bytes(b"\x93NUMPY broken")  # a damaged cache is recomputed, never fatal
    monkeypatch.undo()
    third = GlossaryTermSelector.from_defaults(glossary, embed_model=embed_model)
    assert np.allclose(third.entry_embeddings_, first.entry_embeddings_, atol=1e-5)


async def test_async_selection_equals_sync(selector):
    sync = selector.select("How do generators save memory?")
    assert (await selector.aselect("How do generators save memory?")).terms == sync.terms


# ----------------------------------------------------------------------------- cleaning and the guard


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Rewritten query: What is a decorator?", "What is a decorator?"),
        ('  "What is a decorator?"  ', "What is a decorator?"),
        ("“What is a decorator?”", "What is a decorator?"),
        ("```\nWhat is\n a decorator?\n```", "What is a decorator?"),
        ("What is a decorator?\n\nThis rewrite adds the term decorator.", "What is a decorator?"),
        ("Rewritten query:\n\nWhat is a decorator?", "What is a decorator?"),
        ('Is "a" the same as "b"?', 'Is "a" the same as "b"?'),
        ("Question: What is a class?\nRewritten query: What is a class object?", "What is a class object?"),
        ("Is a rewritten query: a query?", "Is a rewritten query: a query?"),
        ("", ""),
    ],
)
def test_clean_rewrite(raw, clean):
    assert clean_rewrite(raw) == clean


def test_guard_verdicts(embed_model):
    guard = DriftGuard.from_defaults(embed_model=embed_model, max_words=20, min_similarity=0.5)
    assert guard.check(QUESTION, "   ").reason == "empty rewrite"
    assert guard.check(QUESTION, " ".join(["dictionary"] * 21)).reason == "overlong rewrite: 21 words > 20"
    off = guard.check(QUESTION, OFF_TOPIC)
    assert off.reason.startswith("off-topic rewrite: similarity") and off.similarity < 0.5
    ok = guard.check(QUESTION, "Why must the keys of a dictionary be immutable and hashable?")
    assert ok.accepted and ok.similarity > 0.5


async def test_guard_async_equals_sync(embed_model):
    guard = DriftGuard.from_defaults(embed_model=embed_model)
    sync, asynchronous = guard.check(QUESTION, OFF_TOPIC), await guard.acheck(QUESTION, OFF_TOPIC)
    assert sync.reason == asynchronous.reason
    assert sync.similarity == pytest.approx(asynchronous.similarity, abs=1e-6)


@pytest.mark.parametrize(
    ("scripted", "reason_start"),
    [
        ("", "empty rewrite"),
        ("Rewritten query:", "empty rewrite"),
        (" ".join(["Why must dictionary keys be immutable and hashable?"] * 20), "overlong rewrite: 12"),
        (OFF_TOPIC, "off-topic rewrite"),
    ],
)
def test_rewriter_falls_back_to_the_original(selector, embed_model, scripted, reason_start):
    rewriter, llm = make_rewriter(selector, embed_model, [scripted])
    result = rewriter.rewrite(QUESTION)
    assert result.fallback_reason.startswith(reason_start)
    assert result.rewritten_query == QUESTION and not result.changed
    assert result.glossary_terms[:2] == ["dictionary", "immutable"]
    assert len(rewrite_prompts(llm)) == 1


def test_overlong_stream_is_cut_early(selector, embed_model):
    rewriter, llm = make_rewriter(selector, embed_model, [" ".join(["word"] * 1000)], max_words=50)
    assert rewriter.rewrite(QUESTION).fallback_reason == "overlong rewrite: 71 words > 50"
    assert llm.chunks_streamed < 80  # it stopped reading the stream soon after the limit


def test_accepted_rewrite_and_prompt(selector, embed_model):
    rewriter, llm = make_rewriter(
        selector, embed_model, [f"Rewritten query: {GOOD_REWRITE}\n\nI added the term hashable."]
    )
    result = rewriter.rewrite(QUESTION)
    assert result.fallback_reason is None and result.rewritten_query == GOOD_REWRITE
    assert result.similarity >= rewriter.guard.min_similarity
    prompt = rewrite_prompts(llm)[0]
    assert f"Question: {QUESTION}\nRewritten query:" in prompt
    assert "at most 100 words" in prompt and "question form" in prompt and "Output only the rewritten query." in prompt
    assert "- dictionary: " in prompt and "- hashable: " in prompt
    assert "- lambda: " not in prompt  # only the selected entries, never the whole glossary


def test_no_terms_means_no_llm_call(glossary, embed_model):
    llm = scripted()
    rewriter = GlossaryQueryRewriter.from_defaults(glossary, llm=llm, embed_model=embed_model, top_k=0)
    result = rewriter.rewrite("How do I book a train ticket?")
    assert result.fallback_reason == "no relevant glossary terms" and llm.prompts == []


# ----------------------------------------------------------------------------- review hook


@pytest.mark.parametrize(
    ("decision", "expected_query", "reason", "edited"),
    [
        (None, GOOD_REWRITE, None, False),
        (GOOD_REWRITE, GOOD_REWRITE, None, False),
        ("Why are dict keys hashable?", "Why are dict keys hashable?", None, True),
        ("", QUESTION, "rejected by reviewer", False),
        (QUESTION, QUESTION, "rejected by reviewer", False),
    ],
)
def test_review_hook_accepts_edits_or_rejects(selector, embed_model, decision, expected_query, reason, edited):
    seen = []

    def hook(rewrite):
        seen.append(rewrite.rewritten_query)
        return decision

    rewriter, llm = make_rewriter(selector, embed_model, [GOOD_REWRITE], review_hook=hook)
    result = rewriter.rewrite(QUESTION)
    assert seen == [GOOD_REWRITE]
    assert (result.rewritten_query, result.fallback_reason, result.edited) == (expected_query, reason, edited)


def test_review_hook_can_override_a_fallback(selector, embed_model):
    rewriter, _ = make_rewriter(
        selector, embed_model, [OFF_TOPIC], review_hook=lambda r: r.original_query + " (hashable keys)"
    )
    result = rewriter.rewrite(QUESTION)
    assert result.edited and result.fallback_reason is None and result.proposed_query == OFF_TOPIC


async def test_async_review_hook(selector, embed_model):
    async def hook(rewrite):
        await asyncio.sleep(0)
        return "Why are dict keys hashable?"

    rewriter, llm = make_rewriter(selector, embed_model, [GOOD_REWRITE], review_hook=hook)
    assert (await rewriter.arewrite(QUESTION)).rewritten_query == "Why are dict keys hashable?"


def test_review_hook_must_return_text(selector, embed_model):
    rewriter, _ = make_rewriter(selector, embed_model, [GOOD_REWRITE], review_hook=lambda r: 3)
    with pytest.raises(TypeError, match="review_hook must return a string or None"):
        rewriter.rewrite(QUESTION)


# ----------------------------------------------------------------------------- fusion


def _hits(*ids: str) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=i, text=i), score=1.0) for i in ids]


def test_reciprocal_rank_fusion():
    fused = reciprocal_rank_fusion([_hits("a", "b", "c"), _hits("c", "d", "a")], k=60)
    assert [h.node.node_id for h in fused] == ["a", "c", "b", "d"]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 63)
    assert fused[2].score == pytest.approx(1 / 62)
    assert [h.node.node_id for h in reciprocal_rank_fusion([_hits("x", "y"), _hits("y", "x")], top_n=1)] == ["x"]
    assert reciprocal_rank_fusion([[], []]) == []
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([_hits("a")], k=-1)


# ----------------------------------------------------------------------------- the engine


@pytest.mark.parametrize("mode", ["original", "rewritten", "fused"])
def test_engine_modes_retrieve_as_specified(selector, index, embed_model, mode):
    engine, llm = make_engine(selector, index, embed_model, [GOOD_REWRITE], mode=mode, similarity_top_k=4)
    retrieval = engine.rewrite_and_retrieve(QUESTION)
    retriever = index.as_retriever(similarity_top_k=4)
    by_original = retriever.retrieve(QUESTION)
    by_rewrite = retriever.retrieve(GOOD_REWRITE)
    ids = [h.node.node_id for h in retrieval.nodes]
    if mode == "original":
        assert rewrite_prompts(llm) == [] and retrieval.rewrite.rewritten_query == QUESTION
        assert ids == [h.node.node_id for h in by_original]
    elif mode == "rewritten":
        assert ids == [h.node.node_id for h in by_rewrite]
    else:
        assert ids == [h.node.node_id for h in reciprocal_rank_fusion([by_original, by_rewrite], top_n=4)]
    assert retrieval.mode == mode


def test_fallback_retrieves_with_the_original_once(selector, index, embed_model):
    engine, _ = make_engine(selector, index, embed_model, [OFF_TOPIC], mode="fused", similarity_top_k=3)
    retrieval = engine.rewrite_and_retrieve(QUESTION)
    assert retrieval.rewrite.fallback_reason.startswith("off-topic")
    expected = index.as_retriever(similarity_top_k=3).retrieve(QUESTION)
    assert [h.node.node_id for h in retrieval.nodes] == [h.node.node_id for h in expected]


def test_engine_synthesises_from_the_original_question_with_the_glossary(selector, index, embed_model):
    engine, llm = make_engine(selector, index, embed_model, [GOOD_REWRITE], similarity_top_k=3)
    response = engine.query(QUESTION)
    assert str(response) == llm.default
    meta = response.metadata
    assert meta["original_query"] == QUESTION and meta["rewritten_query"] == GOOD_REWRITE
    assert meta["glossary_terms"][:2] == ["dictionary", "immutable"] and meta["fallback_reason"] is None
    assert meta["retrieval_mode"] == "fused" and len(response.source_nodes) == 3
    synthesis_prompt = llm.prompts[-1]
    assert QUESTION in synthesis_prompt and GOOD_REWRITE not in synthesis_prompt
    assert "The following glossary is not part of the question" in synthesis_prompt
    assert "- immutable: " in synthesis_prompt


def test_engine_reports_the_fallback(selector, index, embed_model):
    engine, _ = make_engine(selector, index, embed_model, [""], similarity_top_k=2)
    meta = engine.query(QUESTION).metadata
    assert meta["fallback_reason"] == "empty rewrite" and meta["rewritten_query"] == QUESTION


def test_engine_without_glossary_in_synthesis(selector, index, embed_model):
    engine, llm = make_engine(selector, index, embed_model, [GOOD_REWRITE], glossary_in_synthesis=False)
    engine.query(QUESTION)
    assert "glossary" not in llm.prompts[-1].lower()


async def test_engine_async_matches_sync(selector, index, embed_model):
    engine, _ = make_engine(selector, index, embed_model, [GOOD_REWRITE, GOOD_REWRITE], similarity_top_k=3)
    sync = engine.query(QUESTION)
    asynchronous = await engine.aquery(QUESTION)
    usage = [r.metadata.pop("usage") for r in (sync, asynchronous)]
    assert asynchronous.metadata == sync.metadata
    same = ("prompt_tokens", "completion_tokens", "llm_calls")
    assert [usage[0][k] for k in same] == [usage[1][k] for k in same]
    assert [n.node.node_id for n in asynchronous.source_nodes] == [n.node.node_id for n in sync.source_nodes]


def test_engine_streams(selector, index, embed_model):
    engine, llm = make_engine(selector, index, embed_model, [GOOD_REWRITE], streaming=True, similarity_top_k=2)
    response = engine.query(QUESTION)
    assert isinstance(response, StreamingResponse)
    assert response.metadata["rewritten_query"] == GOOD_REWRITE
    assert "".join(response.response_gen) == llm.default


async def test_engine_streams_async(selector, index, embed_model):
    engine, llm = make_engine(selector, index, embed_model, [GOOD_REWRITE], streaming=True, similarity_top_k=2)
    response = await engine.aquery(QUESTION)
    assert isinstance(response, AsyncStreamingResponse)
    assert response.metadata["glossary_terms"][:2] == ["dictionary", "immutable"]
    assert "".join([t async for t in response.async_response_gen()]) == llm.default


def test_engine_prompts_are_exposed_and_replaceable(selector, index, embed_model):
    engine, llm = make_engine(selector, index, embed_model, [GOOD_REWRITE], similarity_top_k=2)
    prompts = engine.get_prompts()
    assert {"glossary_context_prompt", "rewriter:rewrite_prompt"} <= set(prompts)
    from llama_index.core.prompts import PromptTemplate

    engine.update_prompts(
        {"glossary_context_prompt": PromptTemplate("Q: {query_str}\nTERMS (not the question):\n{glossary_str}")}
    )
    engine.query(QUESTION)
    assert "TERMS (not the question):" in llm.prompts[-1]


def test_engine_rejects_bad_arguments(selector, glossary, index, embed_model):
    with pytest.raises(ValueError, match="mode must be one of"):
        make_engine(selector, index, embed_model, mode="both")
    with pytest.raises(ValueError, match="Give a retriever or an index"):
        GlossaryQueryEngine.from_defaults(glossary, llm=scripted(), embed_model=embed_model)


def test_engine_from_a_glossary_path(index, embed_model):
    llm = scripted()
    engine = GlossaryQueryEngine.from_defaults(
        sample.sample_glossary_path(), index=index, llm=llm, embed_model=embed_model, mode="original"
    )
    assert len(engine.rewriter.glossary) == 128
    assert engine.query("How do I write a list comprehension?").metadata["glossary_terms"][0] == "list comprehension"
    assert len(llm.prompts) == 1 and not rewrite_prompts(llm)  # original mode: synthesis only, no rewrite


# ----------------------------------------------------------------------------- as a query transform


def test_rewriter_composes_as_a_query_transform(selector, index, embed_model):
    rewriter, llm = make_rewriter(selector, embed_model, [GOOD_REWRITE])
    inner = index.as_query_engine(llm=llm, similarity_top_k=3)
    response = TransformQueryEngine(inner, query_transform=rewriter).query(QUESTION)
    expected = index.as_retriever(similarity_top_k=3).retrieve(GOOD_REWRITE)
    assert [n.node.node_id for n in response.source_nodes] == [n.node.node_id for n in expected]
    assert QUESTION in llm.prompts[-1] and GOOD_REWRITE not in llm.prompts[-1]  # synthesis saw the original
    assert rewriter.last_rewrite_.rewritten_query == GOOD_REWRITE


async def test_transform_run_and_arun(selector, embed_model):
    rewriter, _ = make_rewriter(selector, embed_model, [GOOD_REWRITE, GOOD_REWRITE, OFF_TOPIC])
    bundle = rewriter.run(QUESTION)
    assert (bundle.query_str, bundle.embedding_strs) == (QUESTION, [GOOD_REWRITE])
    rewriter.replace_query_str = True
    bundle = await rewriter.arun(QueryBundle(QUESTION))
    assert (bundle.query_str, bundle.embedding_strs) == (GOOD_REWRITE, [GOOD_REWRITE])
    bundle = rewriter(QUESTION)  # refused: the bundle is unchanged
    assert (bundle.query_str, bundle.embedding_strs) == (QUESTION, [QUESTION])


async def test_last_rewrite_is_per_task_under_concurrent_aruns(selector, embed_model):
    rewriter, _ = make_rewriter(selector, embed_model, [GOOD_REWRITE, GOOD_REWRITE])

    async def one(question: str):
        await rewriter.arun(QueryBundle(question))
        await asyncio.sleep(0.05)  # both rewrites are done before either task reads its own
        return rewriter.last_rewrite_

    questions = [QUESTION, "How does a dictionary find the value of a hashable key?"]
    seen = await asyncio.gather(*(one(q) for q in questions))
    assert [r.original_query for r in seen] == questions


# ----------------------------------------------------------------------------- the real local LLM (slow)


@pytest.mark.slow
def test_end_to_end_with_the_local_llm(selector, index, embed_model, small_llm):
    rewriter = GlossaryQueryRewriter.from_defaults(
        selector.glossary, llm=small_llm, embed_model=embed_model, selector=selector
    )
    engine = GlossaryQueryEngine.from_defaults(
        None, index=index, llm=small_llm, embed_model=embed_model, rewriter=rewriter, similarity_top_k=2
    )
    response = engine.query("How do I build a list of squares in one line?")
    meta = response.metadata
    assert str(response).strip()
    assert meta["original_query"] == "How do I build a list of squares in one line?"
    assert "list" in meta["glossary_terms"]
    assert meta["proposed_query"] is not None  # the LLM was asked
    if meta["fallback_reason"] is None:
        assert meta["rewrite_similarity"] >= engine.rewriter.guard.min_similarity
    else:
        assert meta["rewritten_query"] == meta["original_query"]
    docs = {d.id_ for d in load_corpus(sample.SAMPLE_DOCS)}
    assert 1 <= len(response.source_nodes) <= 2
    assert {n.node.metadata["doc_id"] for n in response.source_nodes} <= docs


@pytest.mark.slow
async def test_async_streaming_with_the_local_llm(selector, index, embed_model, small_llm):
    rewriter = GlossaryQueryRewriter.from_defaults(
        selector.glossary, llm=small_llm, embed_model=embed_model, selector=selector
    )
    engine = GlossaryQueryEngine.from_defaults(
        None,
        index=index,
        llm=small_llm,
        embed_model=embed_model,
        rewriter=rewriter,
        similarity_top_k=1,
        streaming=True,
        mode="rewritten",
    )
    response = await engine.aquery("What does a virtual environment give me?")
    text = "".join([t async for t in response.async_response_gen()])
    assert text.strip()
    assert "virtual environment" in response.metadata["glossary_terms"]
