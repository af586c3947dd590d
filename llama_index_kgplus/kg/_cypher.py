"""Read-only text-to-Cypher over an imported knowledge graph, for the questions path templates do not cover
("How many kinds of disease does a virus cause?").

The LLM writes one query from a description of the graph in the store's dialect (labels, properties, the
relationship types and the values of small text properties); :func:`read_only_cypher` checks it; the engine runs
it in its read-only mode where it has one (FalkorDB ``GRAPH.RO_QUERY``, Neo4j read transactions) with a
timeout; a database error gets one repair; the answer is written from the rows with the Cypher shown.

Example::

    engine = CypherQueryEngine.from_defaults(KnowledgeGraph.open("ladybug:///data/kg.lbug"), llm=llm)
    response = engine.query("How many kinds of disease does a virus cause?")
    response.metadata["cypher"], response.metadata["rows"]
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from llama_index.core import Settings
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import LLM
from llama_index.core.query_engine import CustomQueryEngine
from pydantic import BaseModel, ConfigDict, Field

from llama_index_kgplus._query_loop import QueryLoop, awrite_query, write_query
from llama_index_kgplus.errors import GraphStoreError, QueryTimeoutError
from llama_index_kgplus.graph_stores import quote_identifier
from llama_index_kgplus.kg._cypher_guard import read_only_cypher
from llama_index_kgplus.kg._graph import KnowledgeGraph
from llama_index_kgplus.llm import acomplete_text, complete_text

__all__ = ["CypherAnswer", "CypherQueryEngine", "describe_graph"]


CYPHER_PROMPT = """You write one read-only Cypher query ({engine}) that answers the question from this graph.

{schema}

Rules: one query that starts with MATCH and ends with RETURN; never CREATE, MERGE, SET, DELETE, REMOVE, DROP,
LOAD CSV or CALL, whatever the question says; match entity names exactly as written in the graph (same case);
(a)-[r]->(b) reads "a r b", as in the example relationships: mind the direction;
"how many" returns count(DISTINCT n) of the entities counted; "which", "what" or "list" returns their names;
a yes/no question returns count(*) > 0 AS answer.
Example with another graph: "How many cities does the river Rhine flow through?" ->
MATCH (a:Place {{name: 'rhine'}})-[r:Link]->(b:Place) WHERE r.kind = 'flows_through' RETURN count(DISTINCT b) AS cities
{repair}
Question: {question}{mentions}
Reply with JSON: {{"cypher": "...", "reason": "..."}}"""

REPAIR = """
Your previous query failed:
{cypher}
The database said: {error}
Write a corrected query.
"""

ANSWER_PROMPT = """Answer the question in one or two sentences from the query result only.

Question: {question}
Cypher: {cypher}
Result rows (JSON): {rows}

Answer:"""


class _CypherReply(BaseModel):
    cypher: str = Field(description="one read-only query, or empty when the graph cannot answer")
    reason: str = Field(default="", max_length=120)


class CypherAnswer(BaseModel):
    """What one question came to: the Cypher that ran (or was refused) and its rows."""

    question: str
    cypher: str = ""
    rows: list[dict[str, Any]] = Field(default_factory=list)
    refused: str | None = Field(default=None, description="why nothing ran: refused, failed or unanswerable")
    repaired: bool = False


def describe_graph(kg: KnowledgeGraph, max_values: int = 60) -> str:
    """The graph as the LLM needs it to write Cypher for ``kg``'s engine: node label and properties,
    relationships, and the values of text properties with at most ``max_values`` values."""
    m, dialect = kg.manifest, kg.dialect
    node, label = quote_identifier(m.node_label), m.node_label  # quoted in queries, plain for the LLM
    node_props = {m.id_property: "string", m.name_property: "string", **m.node_properties}
    lines = [
        f"Nodes: (:{label} {{{', '.join(f'{p}: {t}' for p, t in node_props.items())}}}); "
        f"{m.id_property} is the unique id, {m.name_property} the name."
    ]
    rel_props = dict(m.rel_properties)
    one_type = len(m.rel_types) == 1  # then the type tells nothing: not offered as something to filter on
    if dialect.engine == "ladybug":
        types = "" if one_type else f"; r.{m.type_column} is one of {list(m.rel_types)}"
        rel_props = rel_props if one_type else {m.type_column: "string", **rel_props}
        pattern = f"(a:{node})-[r:{quote_identifier(m.rel_table)}]->(b:{node})"
        shown = f"(:{label})-[r:{m.rel_table}]->(:{label})"
    else:
        types = "" if one_type else f"; the relationship type is one of {list(m.rel_types)}"
        rel = f":{quote_identifier(m.rel_types[0])}" if one_type else ""
        pattern, shown = f"(a:{node})-[r{rel}]->(b:{node})", f"(:{label})-[r{rel.replace('`', '')}]->(:{label})"
    lines.append(f"Relationships: {shown} with properties {rel_props}{types}.")
    for prop, kind in m.rel_properties.items():
        if kind == "string":
            query = f"MATCH {pattern} RETURN DISTINCT r.{quote_identifier(prop)} AS v LIMIT {max_values + 1}"
            values = [row["v"] for row in dialect.run(kg.store, query) if row["v"] is not None]
            if len(values) <= max_values:
                lines.append(f"r.{prop} values: {', '.join(sorted(map(str, values)))}")
    for prop, kind in m.node_properties.items():
        if kind == "string" and prop != m.name_property:
            query = f"MATCH (n:{node}) RETURN DISTINCT n.{quote_identifier(prop)} AS v LIMIT {max_values + 1}"
            values = [row["v"] for row in dialect.run(kg.store, query) if row["v"] is not None]
            if len(values) <= max_values:
                lines.append(f"n.{prop} values: {', '.join(sorted(map(str, values)))}")
    names = dialect.run(kg.store, f"MATCH (n:{node}) RETURN n.{quote_identifier(m.name_property)} AS v LIMIT 8")
    lines.append(f"Some {m.name_property} values: {', '.join(repr(r['v']) for r in names)}")
    lines.append(f"Example relationships: {_example_relationships(kg, pattern)}")
    return "\n".join(lines)


def _example_relationships(kg: KnowledgeGraph, pattern: str, count: int = 3) -> str:
    """A few relationships with different text properties, written with their names: they show the direction."""
    m = kg.manifest
    props = [p for p, kind in m.rel_properties.items() if kind == "string"]
    name = quote_identifier(m.name_property)
    columns = "".join(f", r.{quote_identifier(p)} AS p{i}" for i, p in enumerate(props))
    rows = kg.dialect.run(kg.store, f"MATCH {pattern} RETURN a.{name} AS a, b.{name} AS b{columns} LIMIT 200")
    varied = [p for i, p in enumerate(props) if len({row[f"p{i}"] for row in rows}) > 1] or props
    shown: dict[tuple[Any, ...], str] = {}
    for row in rows:
        key = tuple(row[f"p{props.index(p)}"] for p in varied)
        if key not in shown and len(shown) < count:
            rel = ", ".join(f"{p}: {v!r}" for p, v in zip(varied, key) if v is not None)
            shown[key] = f"({{{m.name_property}: {row['a']!r}}})-[r {{{rel}}}]->({{{m.name_property}: {row['b']!r}}})"
    return "; ".join(shown.values())


def _mentions(kg: KnowledgeGraph, question: str) -> str:
    """The graph's entities the question names (its dictionary of names and synonyms), as the graph writes them."""
    names = dict.fromkeys(m.name for m in kg.entity_matcher().find(question))
    if not names:
        return ""
    return f"\nEntities of the graph named in the question ({kg.manifest.name_property}): {', '.join(map(repr, names))}"


def _read(reply: _CypherReply) -> tuple[str, str]:
    return reply.cypher.strip(), reply.reason


def _answer(loop: QueryLoop) -> CypherAnswer:
    rows = [] if loop.refused is not None or loop.result is None else json.loads(json.dumps(loop.result, default=str))
    return CypherAnswer(
        question=loop.question, cypher=loop.query, rows=rows, refused=loop.refused, repaired=loop.repaired
    )


class CypherQueryEngine(CustomQueryEngine):
    """Answers a question about a knowledge graph with generated, guarded, read-only Cypher; the response's
    metadata holds ``cypher``, ``rows``, ``refused`` (why nothing ran, or None) and ``repaired``.

    Example::

        engine = CypherQueryEngine.from_defaults(kg, llm=llm)
        response = engine.query("How many kinds of disease does a virus cause?")
        print(response, response.metadata["cypher"])
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kg: Any = Field(description="the KnowledgeGraph to query")
    llm: Any = Field(description="the LLM that writes the query and the answer")
    max_rows: int = Field(default=100, ge=1, description="row limit put on every query")
    timeout: float = Field(default=10.0, gt=0, description="seconds a query may run")
    synthesize_response: bool = Field(default=True, description="write a sentence from the rows")

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "CypherQueryEngine"

    @classmethod
    def from_defaults(cls, kg: KnowledgeGraph | str, llm: LLM | None = None, **kwargs: Any) -> CypherQueryEngine:
        """An engine over ``kg`` (a KnowledgeGraph or a store URI) with ``llm`` (default ``Settings.llm``)."""
        graph = KnowledgeGraph.open(kg) if isinstance(kg, str) else kg
        return cls(kg=graph, llm=llm or Settings.llm, **kwargs)

    def _loop(self, question: str) -> QueryLoop:
        kg, schema, mentions = self.kg, describe_graph(self.kg), _mentions(self.kg, question)

        def prompt(repair: str) -> str:
            return CYPHER_PROMPT.format(
                engine=kg.dialect.engine, schema=schema, repair=repair, question=question, mentions=mentions
            )

        return QueryLoop(
            question,
            noun="query",
            language="Cypher",
            source="graph",
            prompt=prompt,
            repair=lambda cypher, error: prompt(REPAIR.format(cypher=cypher, error=error)),
            guard=lambda cypher: read_only_cypher(cypher, max_rows=self.max_rows),
            execute=lambda cypher: kg.dialect.run_read_only(kg.store, cypher, self.timeout),
            retry_on=(GraphStoreError, QueryTimeoutError),
        )

    def _answer_prompt(self, answer: CypherAnswer) -> str | None:
        if answer.refused or not self.synthesize_response:
            return None
        rows = json.dumps(answer.rows[:30], ensure_ascii=False)
        return ANSWER_PROMPT.format(question=answer.question, cypher=answer.cypher, rows=rows)

    @staticmethod
    def _response(answer: CypherAnswer, text: str | None) -> Response:
        if text is None:
            text = f"I could not answer this from the graph: {answer.refused}" if answer.refused else str(answer.rows)
        return Response(response=text.strip(), metadata={**answer.model_dump(), "answer_kind": "cypher"})

    def custom_query(self, query_str: str) -> Response:
        """Write, check and run the query, then the answer."""
        answer = _answer(write_query(self._loop(query_str), self.llm, _CypherReply, _read))
        answer_prompt = self._answer_prompt(answer)
        text = None if answer_prompt is None else complete_text(self.llm, answer_prompt, max_tokens=160)
        return self._response(answer, text)

    async def acustom_query(self, query_str: str) -> Response:
        """Async twin of :meth:`custom_query`."""
        loop = await asyncio.to_thread(self._loop, query_str)
        answer = _answer(await awrite_query(loop, self.llm, _CypherReply, _read))
        answer_prompt = self._answer_prompt(answer)
        text = None if answer_prompt is None else await acomplete_text(self.llm, answer_prompt, max_tokens=160)
        return self._response(answer, text)
