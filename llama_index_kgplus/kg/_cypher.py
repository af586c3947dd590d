"""Read-only text-to-Cypher over an imported knowledge graph, for the questions path templates do not cover
("How many kinds of disease does a virus cause?").

The LLM writes one query from a description of the graph (``_cypher_schema``: labels, properties, relationship
kinds, the values of small text properties; read once per graph and cached) and worked examples over a made-up
graph (``_cypher_prompts``); the named repair policies (``_cypher_repairs``, ``_cypher_checks``; each can be
switched off with ``repairs=``) rewrite it, check its shape, and may replace it; :func:`read_only_cypher` guards
every query, which runs in the store's read-only mode where it has one (FalkorDB ``GRAPH.RO_QUERY``, Neo4j read
transactions) with a timeout; a database error, or a check's complaint, goes back to the LLM once; the answer is
written from the rows with the Cypher shown.

Example:

```python
engine = CypherQueryEngine.from_defaults(KnowledgeGraph.open("ladybug:///data/kg.lbug"), llm=llm)
response = engine.query("How many kinds of disease does a virus cause?")
response.metadata["cypher"], response.metadata["rows"], response.metadata["reworked_by"]
```
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection
from typing import Any

from llama_index.core import Settings
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import LLM
from llama_index.core.query_engine import CustomQueryEngine
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, computed_field

from llama_index_kgplus._query_loop import QueryLoop, awrite_query, write_query
from llama_index_kgplus.errors import GraphStoreError, QueryCheckError, QueryTimeoutError
from llama_index_kgplus.events import CypherGeneratedEvent
from llama_index_kgplus.kg._cypher_checks import complaint
from llama_index_kgplus.kg._cypher_guard import read_only_cypher
from llama_index_kgplus.kg._cypher_policy import (
    CypherQueryCheck,
    CypherQueryRewrite,
    CypherQuestion,
    CypherRepair,
    CypherSecondTry,
    Rows,
    _chain_options,
)
from llama_index_kgplus.kg._cypher_prompts import (
    ANSWER_PROMPT,
    CHECK_REPAIR,
    CYPHER_PROMPT,
    REPAIR,
    _examples,
    _kind_hint,
)
from llama_index_kgplus.kg._cypher_repairs import (
    DEFAULT_CYPHER_REPAIRS,
    ArrowReversal,
    EntitiesForGroups,
    OneChainFallback,
    default_cypher_repairs,
)
from llama_index_kgplus.kg._cypher_schema import DescriptionCache, GraphDescription, _mentions, describe_graph
from llama_index_kgplus.kg._cypher_text import _found_nothing, _kind_mentions
from llama_index_kgplus.kg._graph import KnowledgeGraph
from llama_index_kgplus.llm._complete import acomplete_text, complete_text

__all__ = ["CypherAnswer", "CypherQueryEngine", "describe_graph"]


class _CypherReply(BaseModel):
    cypher: str = Field(description="one read-only query, or empty when the graph cannot answer")
    reason: str = Field(default="", max_length=120)


class CypherAnswer(BaseModel):
    """What one question came to: the Cypher that ran (or was refused), its rows, and the repair policy that
    replaced the query the LLM wrote, if one did."""

    question: str
    cypher: str = ""
    rows: list[dict[str, Any]] = Field(default_factory=list)
    refused: str | None = Field(default=None, description="why nothing ran: refused, failed or unanswerable")
    repaired: bool = False
    complaint: str | None = Field(default=None, description="why the first query was sent back, if it was")
    reworked_by: str | None = Field(
        default=None, description="the name of the repair policy whose query and rows replaced the LLM's, or None"
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def arrows_reversed(self) -> bool:
        """It found nothing; with its arrows reversed it did (``arrow_reversal``)."""
        return self.reworked_by == ArrowReversal.name

    @computed_field  # type: ignore[prop-decorator]
    @property
    def chain_written(self) -> bool:
        """The LLM's query followed fewer relationships than the question names; the rows come from the one chain
        of them the graph has from the named entity (``one_chain``)."""
        return self.reworked_by == OneChainFallback.name

    @computed_field  # type: ignore[prop-decorator]
    @property
    def entities_returned(self) -> bool:
        """The LLM's query returned the entities' group property after being told the question asks about the
        entities; the rows are their names (or count) from the same match (``entities_for_groups``)."""
        return self.reworked_by == EntitiesForGroups.name


def _read(reply: _CypherReply) -> tuple[str, str]:
    return reply.cypher.strip(), reply.reason


class CypherQueryEngine(CustomQueryEngine):
    """Answers a question about a knowledge graph with generated, guarded, read-only Cypher; the response's
    metadata holds ``cypher``, ``rows``, ``refused`` (why nothing ran, or None), ``repaired``, ``complaint`` and
    ``reworked_by`` (the repair policy that replaced the query, with its flag: ``arrows_reversed``,
    ``chain_written``, ``entities_returned``).

    ``repairs`` are the named policies around the LLM's query (default: all of them, see
    :meth:`CypherQueryEngine.default_repairs`); the graph's description is read once and kept until the graph changes
    (:meth:`refresh` forgets it).

    Example:

    ```python
    engine = CypherQueryEngine.from_defaults(kg, llm=llm)
    response = engine.query("How many kinds of disease does a virus cause?")
    print(response, response.metadata["cypher"])
    plain = CypherQueryEngine.from_defaults(kg, llm=llm, repairs=CypherQueryEngine.default_repairs({"arrow_reversal"}))
    ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kg: Any = Field(description="the KnowledgeGraph to query")
    llm: Any = Field(description="the LLM that writes the query and the answer")
    max_rows: int = Field(default=100, ge=1, description="row limit put on every query")
    timeout: float = Field(default=10.0, gt=0, description="seconds a query may run")
    synthesize_response: bool = Field(default=True, description="write a sentence from the rows")
    repairs: tuple[CypherRepair, ...] = Field(
        default=DEFAULT_CYPHER_REPAIRS, description="the repair policies, in the order they act (() for none)"
    )
    _descriptions: DescriptionCache = PrivateAttr(default_factory=DescriptionCache)

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "CypherQueryEngine"

    @staticmethod
    def default_repairs(exclude: Collection[str] = ()) -> tuple[CypherRepair, ...]:
        """The default repair policies, in the order they act, without those named in ``exclude`` (e.g.
        ``{"arrow_reversal"}``); an unknown name is a ValueError that lists the names."""
        return default_cypher_repairs(exclude)

    @classmethod
    def from_defaults(cls, kg: KnowledgeGraph | str, llm: LLM | None = None, **kwargs: Any) -> CypherQueryEngine:
        """An engine over ``kg`` (a KnowledgeGraph or a store URI) with ``llm`` (default ``Settings.llm``)."""
        graph = KnowledgeGraph.open(kg) if isinstance(kg, str) else kg
        return cls(kg=graph, llm=llm or Settings.llm, **kwargs)

    def description(self) -> GraphDescription:
        """The graph as the LLM is shown it (read from the store once per graph, see :class:`DescriptionCache`)."""
        return self._descriptions.get(self.kg)

    def refresh(self) -> None:
        """Forget the graph's description (after the graph changed in place): the next question reads it again."""
        self._descriptions.clear()

    def _loop(self, question: str) -> QueryLoop:
        kg, described = self.kg, self.description()
        form = described.form
        found = kg.entity_matcher().find(question)  # the graph's names and synonyms in the question
        named = {m.cid: m.name for m in found}
        start = next(iter(named.items())) if len(named) == 1 else None  # a chain from one entity: its ways
        q = CypherQuestion(
            kg,
            form,
            question,
            named,
            _kind_mentions(form, question, [(m.start, m.end) for m in found]),
            described.groups,
            timeout=self.timeout,
            max_rows=self.max_rows,
            chain_source=None
            if start is None
            else (lambda order: _chain_options(kg, form, start, order, self.timeout)),
        )
        rewrites = [r for r in self.repairs if isinstance(r, CypherQueryRewrite)]
        checks = [r for r in self.repairs if isinstance(r, CypherQueryCheck)]
        tries = [r for r in self.repairs if isinstance(r, CypherSecondTry)]
        mentions, examples, hint = _mentions(kg, form, named, set(q.steps)), _examples(form), _kind_hint(form)

        def prompt(repair: str) -> str:
            return CYPHER_PROMPT.format(
                engine=kg.dialect.engine,
                schema=described.text,
                examples=examples,
                repair=repair,
                question=question,
                mentions=mentions,
            )

        def repair(cypher: str, error: Exception) -> str:
            if isinstance(error, QueryCheckError):
                return prompt(CHECK_REPAIR.format(cypher=cypher, error=error))
            return prompt(REPAIR.format(cypher=cypher, error=error, hint=hint))

        def guard(cypher: str) -> str:
            for rewrite in rewrites:
                cypher = rewrite.rewrite(q, cypher)
            return read_only_cypher(cypher, max_rows=self.max_rows)

        def second_try(cypher: str, rows: Rows) -> tuple[str, Rows, str] | None:
            # the first policy whose query finds something wins; one that ran but found nothing is where the
            # next starts from (the entities' query, if it ran, is what gets reversed)
            said, current = loop.complaint or "", (cypher, rows)
            for policy in tries:
                replaced = policy.retry(q, *current, said)
                if replaced is not None and not _found_nothing(replaced[1]):
                    return (*replaced, policy.name)
                current = replaced or current
            return None

        q.guard = guard
        loop = QueryLoop(
            question,
            noun="query",
            language="Cypher",
            source="graph",
            prompt=prompt,
            repair=repair,
            guard=guard,
            execute=lambda cypher: kg.dialect.run_read_only(kg.store, cypher, self.timeout, max_rows=self.max_rows),
            retry_on=(GraphStoreError, QueryTimeoutError),
            second_try=second_try if tries else None,
            check=(lambda cypher, rows: complaint(q, cypher, checks)) if checks else None,
            event=CypherGeneratedEvent,
        )
        return loop

    @staticmethod
    def _answer(loop: QueryLoop) -> CypherAnswer:
        # the one point where the Cypher that ran, the guard's verdict (``refused``) and the policy that replaced
        # the LLM's query (``reworked_by``) are all known
        rows = (
            [] if loop.refused is not None or loop.result is None else json.loads(json.dumps(loop.result, default=str))
        )
        return CypherAnswer(
            question=loop.question,
            cypher=loop.query,
            rows=rows,
            refused=loop.refused,
            repaired=loop.repaired,
            complaint=loop.complaint,
            reworked_by=loop.rework,
        )

    def query_graph(self, question: str) -> CypherAnswer:
        """Write, check and run the query for ``question`` (no answer sentence): what it came to."""
        return self._answer(write_query(self._loop(question), self.llm, _CypherReply, _read))

    async def aquery_graph(self, question: str) -> CypherAnswer:
        """Async twin of :meth:`query_graph` (the graph's reads run in a worker thread)."""
        loop = await asyncio.to_thread(self._loop, question)
        return self._answer(await awrite_query(loop, self.llm, _CypherReply, _read))

    def _answer_prompt(self, answer: CypherAnswer) -> str | None:
        if answer.refused or not self.synthesize_response:
            return None
        rows = json.dumps(answer.rows[:30], ensure_ascii=False)
        return ANSWER_PROMPT.format(question=answer.question, cypher=answer.cypher, rows=rows)

    def _response(self, answer: CypherAnswer, text: str | None) -> Response:
        if text is None:
            text = f"I could not answer this from the graph: {answer.refused}" if answer.refused else str(answer.rows)
        notes = {r.name: r.note for r in (*DEFAULT_CYPHER_REPAIRS, *self.repairs) if isinstance(r, CypherSecondTry)}
        if notes.get(answer.reworked_by or ""):  # the rows may not answer the question as asked: the reader must know
            text = f"{text.strip()} {notes[answer.reworked_by or '']}"
        return Response(response=text.strip(), metadata={**answer.model_dump(), "answer_kind": "cypher"})

    def respond(self, answer: CypherAnswer) -> Response:
        """The response to ``answer``: a sentence written from its rows (with ``synthesize_response``; else the
        rows), or why nothing ran; a note when a policy replaced the query."""
        prompt = self._answer_prompt(answer)
        return self._response(answer, None if prompt is None else complete_text(self.llm, prompt, max_tokens=160))

    async def arespond(self, answer: CypherAnswer) -> Response:
        """Async twin of :meth:`respond`."""
        prompt = self._answer_prompt(answer)
        text = None if prompt is None else await acomplete_text(self.llm, prompt, max_tokens=160)
        return self._response(answer, text)

    def custom_query(self, query_str: str) -> Response:
        """Write, check and run the query, then the answer."""
        return self.respond(self.query_graph(query_str))

    async def acustom_query(self, query_str: str) -> Response:
        """Async twin of :meth:`custom_query`."""
        return await self.arespond(await self.aquery_graph(query_str))
