"""The pack's instrumentation events, emitted through LlamaIndex's dispatcher (``llama_index.core.instrumentation``).

Each step of the pack that LlamaIndex's own events do not describe emits one of these, inside the span of the
step (``span_id``), with its payload as plain data (strings, numbers, lists and dicts of them). The pack's
retrievers and engines also get LlamaIndex's spans and events (``RetrievalStartEvent``, ``QueryEndEvent``, the
``LLMCompletion*Event`` of every LLM call, ...). A handler on the root dispatcher sees them all::

    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    class Printer(BaseEventHandler):
        def handle(self, event, **kwargs):
            if isinstance(event, RouteDecisionEvent):
                print(event.route, event.scores, event.reason)

    get_dispatcher().add_event_handler(Printer())

Tracing tools that read LlamaIndex's dispatcher (Arize Phoenix, Langfuse, OpenTelemetry) record them as they are.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.instrumentation.events import BaseEvent
from pydantic import Field

__all__ = [
    "CompressionEvent",
    "CypherGeneratedEvent",
    "EntityGraphSeedsEvent",
    "EntityGraphWalkEvent",
    "GeneratedQueryEvent",
    "GlobalSearchMapEvent",
    "GlobalSearchReduceEvent",
    "GlossaryRewriteEvent",
    "KGEntitiesEvent",
    "KGPathsEvent",
    "RouteDecisionEvent",
    "SQLGeneratedEvent",
    "SummaryLevelEvent",
]


class GlossaryRewriteEvent(BaseEvent):
    """A question rewritten with the glossary (``GlossaryQueryRewriter.rewrite``), with the drift guard's verdict.

    Example:

    ```python
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    class RewriteLog(BaseEventHandler):
        def handle(self, event, **kwargs):
            if isinstance(event, GlossaryRewriteEvent) and not event.accepted:
                print("kept the question:", event.fallback_reason)

    get_dispatcher().add_event_handler(RewriteLog())
    ```
    """

    original_query: str = Field(description="The question as asked.")
    rewritten_query: str = Field(description="What retrieval uses: the rewrite if accepted, else the question.")
    proposed_query: str | None = Field(description="The LLM's rewrite, also when refused; None: no LLM call.")
    glossary_terms: list[str] = Field(description="The glossary terms selected for the question.")
    accepted: bool = Field(description="Whether the rewrite is used (it passed the guard and the review).")
    fallback_reason: str | None = Field(description="Why the question is used instead (None when accepted).")
    similarity: float | None = Field(description="The guard's similarity of the rewrite to the question.")
    edited: bool = Field(description="Whether the review hook edited the rewrite.")

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "GlossaryRewriteEvent"


class KGEntitiesEvent(BaseEvent):
    """The knowledge-graph entities a question mentions (``KGPathFinder.find``).

    Example:

    ```python
    # in the handle(event) method of a BaseEventHandler added with get_dispatcher().add_event_handler(...)
    if isinstance(event, KGEntitiesEvent):
        names = [mention["name"] for mention in event.entities]
    ```
    """

    text: str = Field(description="The question.")
    entities: list[dict[str, Any]] = Field(description="Mentions in text order: cid, name, start, end.")

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "KGEntitiesEvent"


class KGPathsEvent(BaseEvent):
    """The relationship paths found between the question's entities (``KGPathFinder.find``).

    Example:

    ```python
    # in the handle(event) method of a BaseEventHandler on LlamaIndex's root dispatcher
    if isinstance(event, KGPathsEvent):
        print(f"{event.pairs} pairs:", *event.paths, sep="\n  ")
    ```
    """

    text: str = Field(description="The question.")
    pairs: int = Field(description="Entity pairs searched (0 with one entity: its neighbours).")
    paths: list[str] = Field(description="The ranked paths, as their text (a -[R]-> b <-[S]- c).")

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "KGPathsEvent"


class EntityGraphSeedsEvent(BaseEvent):
    """Where the personalized PageRank walk of ``EntityGraphRetriever`` starts.

    Example:

    ```python
    # in a BaseEventHandler.handle(event) on get_dispatcher()
    if isinstance(event, EntityGraphSeedsEvent):
        print(event.entities, event.passages, f"dense share {event.dense_share:.0%}")
    ```
    """

    question: str = Field(description="The question.")
    entities: list[str] = Field(description="The question's entities that seed the walk (names).")
    sentence_entities: list[str] = Field(
        default_factory=list,
        description="The entities that seed the walk because the dense hits' sentences nearest the question name "
        "them (names).",
    )
    passages: list[str] = Field(description="The dense hits that seed the walk (node ids).")
    dense_share: float = Field(description="Share of the seed weight on the dense hits.")

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "EntityGraphSeedsEvent"


class EntityGraphWalkEvent(BaseEvent):
    """What the walk ranked: the returned passages, best first.

    Example:

    ```python
    # in a BaseEventHandler.handle(event) on get_dispatcher()
    if isinstance(event, EntityGraphWalkEvent):
        best = event.results[0] if event.results else None
    ```
    """

    question: str = Field(description="The question.")
    results: list[dict[str, Any]] = Field(
        description="Per returned passage: node_id, score (fused), graph_score, dense_score (None: not a dense hit)."
    )

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "EntityGraphWalkEvent"


class RouteDecisionEvent(BaseEvent):
    """A routed question (``RoutedQueryEngine``): the router's decision and the engine that answers.

    Example:

    ```python
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    class Routes(BaseEventHandler):
        def handle(self, event, **kwargs):
            if isinstance(event, RouteDecisionEvent):
                print(event.route, event.engine, event.scores, event.reason)

    get_dispatcher().add_event_handler(Routes())
    ```
    """

    question: str = Field(description="The question.")
    route: str = Field(description="The kind of question: local, multihop, global, kg or sql.")
    engine: str = Field(description="The route whose engine answers (another one when the route has none).")
    scores: dict[str, float] = Field(description="Score per route.")
    features: dict[str, list[str]] = Field(description="What each source feature that fired recognised.")
    reason: str = Field(description="The decision in words.")
    decided_by: str = Field(description="'examples' (no LLM) or 'llm' (the selector, on a close call).")
    fallback: str | None = Field(description="Why another route's engine answers (None: the route's own).")

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "RouteDecisionEvent"


class CompressionEvent(BaseEvent):
    """Retrieved nodes compressed to a token budget (``ContextCompressor``).

    Example:

    ```python
    # in a BaseEventHandler.handle(event) on get_dispatcher()
    if isinstance(event, CompressionEvent):
        saved = event.tokens_before - event.tokens_after
        print(f"kept {event.kept_units}/{event.units} sentences, {saved} tokens saved (budget {event.budget})")
    ```
    """

    query: str = Field(description="The question the sentences were scored against.")
    nodes: int = Field(description="Nodes in.")
    passthrough: int = Field(description="Nodes passed whole (no text, or a passthrough key such as KG paths).")
    units: int = Field(description="Sentences (units) of the compressed nodes.")
    kept_units: int = Field(description="Units kept.")
    tokens_before: int = Field(description="Tokens of the compressed nodes' text before.")
    tokens_after: int = Field(description="Tokens of their text after.")
    budget: int = Field(description="The context budget in tokens (passed-through nodes' tokens count against it).")
    tokenizer: str = Field(description="What counted the tokens (llama.cpp, tokenizer, or an estimate).")

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "CompressionEvent"


class GeneratedQueryEvent(BaseEvent):
    """A database query the LLM wrote and the guard's verdict on it (base of the SQL and Cypher events).

    Example:

    ```python
    # in a BaseEventHandler.handle(event): SQL and Cypher alike
    if isinstance(event, GeneratedQueryEvent) and event.verdict != "ok":
        print(type(event).__name__, event.query, event.reason)
    ```
    """

    question: str = Field(description="The question.")
    query: str = Field(description="The query as the LLM wrote it (empty: it wrote none).")
    verdict: str = Field(
        description="'ran' (passed the guard and ran), 'refused' (by the guard: not run), 'failed' (the database "
        "rejected it, or it timed out) or 'none' (no query written)."
    )
    reason: str | None = Field(description="The guard's refusal, the database's error, or the LLM's reason.")
    executed_query: str | None = Field(description="The query as it ran (the guard may add a LIMIT).")
    rows: int | None = Field(description="Rows returned (None: nothing ran).")
    repair: bool = Field(description="Whether this is the repair written after a failed first query.")

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "GeneratedQueryEvent"


class SQLGeneratedEvent(GeneratedQueryEvent):
    """Text-to-SQL (``TableRetriever``): one generated statement and its verdict.

    Example:

    ```python
    # in a BaseEventHandler.handle(event) on get_dispatcher()
    if isinstance(event, SQLGeneratedEvent):
        print(event.executed_query or event.query, event.rows)
    ```
    """

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "SQLGeneratedEvent"


class CypherGeneratedEvent(GeneratedQueryEvent):
    """Text-to-Cypher: one generated query and its verdict.

    Example:

    ```python
    # in a BaseEventHandler.handle(event) on get_dispatcher()
    if isinstance(event, CypherGeneratedEvent) and event.repair:
        print("second try:", event.query)
    ```
    """

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "CypherGeneratedEvent"


class GlobalSearchMapEvent(BaseEvent):
    """The map step of GraphRAG's global search: community reports read with the question.

    Example:

    ```python
    # in a BaseEventHandler.handle(event) on get_dispatcher()
    if isinstance(event, GlobalSearchMapEvent):
        print(len(event.reports), "reports,", event.points_kept, "of", event.points, "key points kept")
    ```
    """

    question: str = Field(description="The question.")
    reports: list[str] = Field(description="Community ids of the reports mapped.")
    points: int = Field(description="Key points the map answers gave.")
    points_kept: int = Field(description="Key points that scored at least min_score.")
    failures: list[dict[str, Any]] = Field(description="Reports whose map call failed: community_id, error.")

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "GlobalSearchMapEvent"


class GlobalSearchReduceEvent(BaseEvent):
    """The reduce step of GraphRAG's global search: the best key points written into one answer.

    Example:

    ```python
    # in a BaseEventHandler.handle(event) on get_dispatcher()
    if isinstance(event, GlobalSearchReduceEvent) and not event.answered:
        print("no usable key point for", event.question)
    ```
    """

    question: str = Field(description="The question.")
    points_used: int = Field(description="Key points that fit the reduce context.")
    reports: list[str] = Field(description="Community ids of the points used.")
    answered: bool = Field(description="False when no point was usable (the no-data answer, no LLM call).")

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "GlobalSearchReduceEvent"


class SummaryLevelEvent(BaseEvent):
    """One level of a summary hierarchy built (``SemanticChunkingSummaryNodeBuilder``, ``RaptorSummaryNodeBuilder``).

    Example:

    ```python
    # in a BaseEventHandler.handle(event) on get_dispatcher()
    if isinstance(event, SummaryLevelEvent):
        print(event.builder, "level", event.level, event.clusters, "clusters,", event.usage)
    ```
    """

    builder: str = Field(description="The builder's class name.")
    level: int = Field(description="The level built (1: summaries of the leaves).")
    clusters: int = Field(description="Clusters summarised.")
    reused: int = Field(description="Summaries reused from an earlier run of the builder (no LLM call).")
    failed: int = Field(description="Clusters whose summary failed after its tries.")
    usage: dict[str, int] = Field(description="The summarizer's LLM calls and tokens for this level.")

    @classmethod
    def class_name(cls) -> str:
        """The event name tracing tools show."""
        return "SummaryLevelEvent"
