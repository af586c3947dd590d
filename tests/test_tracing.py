"""What a user's tracing sees of the pack: its instrumentation events and spans on LlamaIndex's root dispatcher,
and LlamaIndex's ``TokenCountingHandler`` counting the same tokens as the pack's own usage. Real components on
small data: the embedding model, the local 0.5B LLM, DuckDB over the sample weather table; the routed engine is
built like ``kgplus ask`` builds it. The handlers are removed after each test (the root dispatcher is global)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llama_index.core import Document, Settings
from llama_index.core.callbacks import CallbackManager, TokenCountingHandler
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import LLMCompletionEndEvent, LLMCompletionStartEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
from llama_index.core.query_engine import RetrieverQueryEngine

from llama_index_kgplus import build_index
from llama_index_kgplus._testing import ScriptedLLM
from llama_index_kgplus.compression._apply import postprocessors_for
from llama_index_kgplus.events import CompressionEvent, GlossaryRewriteEvent, RouteDecisionEvent, SQLGeneratedEvent
from llama_index_kgplus.glossary import GlossaryQueryEngine
from llama_index_kgplus.llm import metered
from llama_index_kgplus.llm._usage import usage_meter
from llama_index_kgplus.router import QuestionRouter, RoutedQueryEngine
from llama_index_kgplus.router._features import table_feature
from llama_index_kgplus.router._router import ROUTES
from llama_index_kgplus.sample import SAMPLE_DOCS, SAMPLE_WEATHER_TABLE, sample_glossary_path
from llama_index_kgplus.tables import SQLTables, TableQueryEngine

LOCAL = "How do I create a virtual environment?"
SQL = "What was the total precipitation in 2014?"


class Recorder(BaseEventHandler):
    """Keeps every event it is given."""

    events: list[Any] = []

    @classmethod
    def class_name(cls) -> str:
        return "Recorder"

    def handle(self, event: Any, **kwargs: Any) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


@pytest.fixture
def traced():
    root = get_dispatcher()
    spans, events = SimpleSpanHandler(), Recorder(events=[])
    root.add_span_handler(spans)
    root.add_event_handler(events)
    try:
        yield spans, events
    finally:
        root.span_handlers.remove(spans)
        root.event_handlers.remove(events)


@pytest.fixture
def token_counter(small_llm):
    """A TokenCountingHandler where a LlamaIndex user puts it: Settings.callback_manager and the LLM's own."""
    handler = TokenCountingHandler()
    manager = CallbackManager([handler])
    before = Settings._callback_manager, small_llm.callback_manager
    Settings.callback_manager, small_llm.callback_manager = manager, manager
    try:
        yield handler
    finally:
        Settings._callback_manager, small_llm.callback_manager = before


def ancestors(spans: SimpleSpanHandler, span_id: str | None) -> list[str]:
    """``span_id`` and the spans above it, innermost first (span ids read ``Class.method-uuid``)."""
    parents = {s.id_: s.parent_id for s in spans.completed_spans}
    chain = []
    while span_id is not None:
        chain.append(span_id)
        span_id = parents.get(span_id)
    return chain


def under(spans: SimpleSpanHandler, event: Any, name: str) -> bool:
    return any(s.startswith(f"{name}-") for s in ancestors(spans, event.span_id))


@pytest.fixture(scope="module")
def venv_index(embed_model):
    records = [json.loads(line) for line in SAMPLE_DOCS.read_text(encoding="utf-8").splitlines()]
    docs = [Document(id_=r["id"], text=r["text"], metadata={"title": r["title"]}) for r in records]
    picked = [d for d in docs if d.id_ in ("tutorial/venv", "tutorial/modules")]
    return build_index(picked, None, embed_model=embed_model, show_progress=False)


@pytest.fixture(scope="module")
def tables() -> SQLTables:
    tables = SQLTables()
    tables.add("weather", SAMPLE_WEATHER_TABLE)
    return tables


def routed_engine(index, tables, llm, embed_model, *, streaming: bool = False) -> RoutedQueryEngine:
    """The engines of ``kgplus ask --index --table`` (cli/_ask.py), built directly."""
    compressor = postprocessors_for(None, 300, embed_model=embed_model, llm=llm)
    local = RetrieverQueryEngine.from_args(
        index.as_retriever(similarity_top_k=3), llm=llm, node_postprocessors=compressor, streaming=streaming
    )
    router = QuestionRouter.from_defaults(embed_model, features=[table_feature(tables)])
    return RoutedQueryEngine.from_defaults({"local": local, "sql": TableQueryEngine.from_defaults(tables, llm=llm)},
                                           router=router)  # fmt: skip


def check_trace(spans: SimpleSpanHandler, events: Recorder, query_span: str, llm_calls: int) -> None:
    decisions = events.of(RouteDecisionEvent)
    assert [(d.question, d.route, d.engine) for d in decisions] == [(LOCAL, "local", "local"), (SQL, "sql", "sql")]
    for decision in decisions:
        assert set(decision.scores) == set(ROUTES) and decision.reason.startswith("best ")
        assert decision.fallback is None and decision.decided_by == "examples"
        assert under(spans, decision, f"RoutedQueryEngine.{query_span}")
    assert "column precipitation" in decisions[1].features["table terms"]
    [compression] = events.of(CompressionEvent)  # the local answer's passages, in the compressor's span
    assert compression.query == LOCAL and compression.nodes == 3 and compression.budget == 300
    assert 0 < compression.tokens_after <= 300 < compression.tokens_before and compression.tokenizer == "llama.cpp"
    assert compression.kept_units < compression.units
    assert under(spans, compression, "ContextCompressor._postprocess_nodes" if query_span == "query" else
                 "ContextCompressor._apostprocess_nodes")  # fmt: skip
    sql = events.of(SQLGeneratedEvent)
    assert sql and sql[-1].verdict == "ran" and "select" in sql[-1].query.lower() and sql[-1].rows == 1
    assert sql[-1].question == SQL and sql[-1].executed_query and "LIMIT" in sql[-1].executed_query.upper()
    retriever_span = "TableRetriever.retrieve" if query_span == "query" else "TableRetriever.aretrieve"
    assert all(under(spans, e, retriever_span) for e in sql)
    # every LLM call is seen once, with its prompt and reply, inside the engine that made it
    starts, ends = events.of(LLMCompletionStartEvent), events.of(LLMCompletionEndEvent)
    assert len(starts) == len(ends) == llm_calls >= 3  # an answer, then the SQL and its answer
    assert all(e.response.raw["usage"]["prompt_tokens"] > 0 and e.prompt for e in ends)
    assert all(under(spans, e, f"RoutedQueryEngine.{query_span}") for e in ends)
    sql_calls = [e for e in ends if under(spans, e, "TableQueryEngine.custom_query") or under(spans, e, retriever_span)]
    assert any('"sql"' in e.response.text for e in sql_calls)  # the grammar-constrained JSON call
    assert any(under(spans, e, "RetrieverQueryEngine._query" if query_span == "query" else "RetrieverQueryEngine._aquery")
               for e in ends)  # fmt: skip
    assert events.of(RetrievalEndEvent)


@pytest.mark.slow
def test_a_routed_query_emits_the_route_the_steps_and_every_llm_call_under_its_spans(
    traced, token_counter, venv_index, tables, small_llm, embed_model
):
    spans, events = traced
    llm = metered(small_llm)
    engine = routed_engine(venv_index, tables, llm, embed_model)
    before = usage_meter(llm).snapshot()
    answers = [engine.query(LOCAL), engine.query(SQL)]
    assert answers[1].metadata["engine"] == "sql" and answers[1].metadata["rows"]
    used = usage_meter(llm).snapshot() - before
    check_trace(spans, events, "query", used.llm_calls)
    check_counts(token_counter, used.llm_calls, used.prompt_tokens, used.completion_tokens)


@pytest.mark.slow
async def test_the_async_routed_query_emits_the_same_under_its_spans(
    traced, token_counter, venv_index, tables, small_llm, embed_model
):
    spans, events = traced
    llm = metered(small_llm)
    engine = routed_engine(venv_index, tables, llm, embed_model)
    before = usage_meter(llm).snapshot()
    await engine.aquery(LOCAL)
    await engine.aquery(SQL)
    used = usage_meter(llm).snapshot() - before
    check_trace(spans, events, "aquery", used.llm_calls)
    check_counts(token_counter, used.llm_calls, used.prompt_tokens, used.completion_tokens)


def prompt_tokens(handler: TokenCountingHandler) -> int:
    return sum(e.prompt_token_count for e in handler.llm_token_counts)


def check_counts(handler: TokenCountingHandler, llm_calls: int, prompt: int, completion: int) -> None:
    """LlamaIndex's TokenCountingHandler (on Settings and the LLM, where a user puts it) counts what the pack's
    usage counts: one event per call (no doubles), the same tokens (the prompt's within 1%)."""
    assert len(handler.llm_token_counts) == llm_calls > 0
    assert abs(prompt_tokens(handler) - prompt) <= 0.01 * prompt
    assert handler.completion_llm_token_count == completion


@pytest.mark.slow
def test_token_counting_handler_counts_a_streamed_answer(token_counter, venv_index, tables, small_llm, embed_model):
    # the routed, async and glossary queries are counted in their tracing tests below and above
    llm = metered(small_llm)
    before = usage_meter(llm).snapshot()
    "".join(routed_engine(venv_index, tables, llm, embed_model, streaming=True).query(LOCAL).response_gen)
    used = usage_meter(llm).snapshot() - before
    check_counts(token_counter, used.llm_calls, used.prompt_tokens, used.completion_tokens)


@pytest.mark.slow
def test_the_glossary_rewrite_is_one_bounded_call_with_its_verdict(
    traced, token_counter, venv_index, small_llm, embed_model
):
    spans, events = traced
    engine = GlossaryQueryEngine.from_defaults(
        sample_glossary_path(), index=venv_index, similarity_top_k=2, llm=small_llm, embed_model=embed_model,
        context_budget=256,
    )  # fmt: skip
    response = engine.query("How do I make an isolated environment for a project?")
    [rewrite] = events.of(GlossaryRewriteEvent)
    assert rewrite.original_query == response.metadata["original_query"]
    assert rewrite.rewritten_query == response.metadata["rewritten_query"]
    assert rewrite.glossary_terms == response.metadata["glossary_terms"] and rewrite.glossary_terms
    assert rewrite.accepted == (response.metadata["fallback_reason"] is None)
    assert under(spans, rewrite, "GlossaryQueryRewriter.rewrite")
    # the rewrite call ended by itself (a stopping criterion, not a stream left early): it reports its usage
    calls = events.of(LLMCompletionEndEvent)
    assert len(calls) == response.metadata["usage"]["llm_calls"] == 2
    assert under(spans, calls[0], "GlossaryQueryRewriter.rewrite") and calls[0].response.raw["usage"]
    usage = response.metadata["usage"]
    check_counts(token_counter, usage["llm_calls"], usage["prompt_tokens"], usage["completion_tokens"])


# ------------------------------------------------------------------ the wrapper's events, without a model


def test_a_metered_llm_adds_no_llm_event_of_its_own():
    handler = TokenCountingHandler()
    inner = ScriptedLLM(default="An answer of five words.", usage=True)
    llm = metered(inner)
    llm.callback_manager = CallbackManager([handler])  # as get_response_synthesizer sets Settings' manager
    assert inner.callback_manager is llm.callback_manager
    llm.complete("one two three")
    list(llm.stream_complete("one two three"))
    assert len(handler.llm_token_counts) == 2 and usage_meter(llm).snapshot().llm_calls == 2


async def test_a_metered_custom_llm_async_call_is_one_event():
    handler = TokenCountingHandler()
    llm = metered(ScriptedLLM(default="An answer.", usage=True, callback_manager=CallbackManager([handler])))
    await llm.acomplete("one two three")
    assert [e.prompt_token_count for e in handler.llm_token_counts] == [3]  # CustomLLM.acomplete would add one
    assert usage_meter(llm).snapshot().prompt_tokens == 3


def test_a_stream_read_only_in_part_is_still_counted():
    llm = metered(ScriptedLLM(default="one two three four five six"))
    stream = llm.stream_complete("a prompt")
    next(stream)
    stream.close()  # the reader stopped after one chunk
    assert usage_meter(llm).snapshot().llm_calls == 1
