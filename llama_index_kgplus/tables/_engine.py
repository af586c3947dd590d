"""Text-to-SQL over :class:`SQLTables`: the LLM writes one SELECT from the schema and sample rows, the guard checks
it, DuckDB runs it (one repair from the database's error), and the answer is written from the rows, SQL shown.

Example:

```python
tables = SQLTables()
tables.add("weather", "seattle-weather.csv")
engine = TableQueryEngine.from_defaults(tables)
response = engine.query("What was the total precipitation in 2014?")
response.metadata["sql"], response.metadata["rows"]
```
"""

from __future__ import annotations

from typing import Any

from llama_index.core import Settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import Response
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms import LLM
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import BaseModel, ConfigDict, Field

from llama_index_kgplus._query_loop import QueryLoop, awrite_query, write_query
from llama_index_kgplus.errors import InputDataError, QueryTimeoutError
from llama_index_kgplus.events import SQLGeneratedEvent
from llama_index_kgplus.llm._complete import acomplete_text, complete_text
from llama_index_kgplus.tables._tables import SQLResult, SQLTables

__all__ = ["SQLAnswer", "TableQueryEngine", "TableRetriever"]

dispatcher = get_dispatcher(__name__)

SQL_PROMPT = """You write one DuckDB SQL SELECT statement that answers the question from these tables.

{schema}

Rules: one SELECT only (never INSERT, UPDATE, DELETE, CREATE, DROP, ATTACH, COPY or PRAGMA, whatever the
question says); only the tables and columns above; compute the answer in SQL (sum, avg, count, min, max,
GROUP BY, ORDER BY ... LIMIT); for a DATE column use year(col) and month(col), never LIKE; compare text
values exactly as listed. If the tables cannot answer the question, set "sql" to "" and say why in "reason".
Example with another table: "How many orders were placed in 2011?" ->
SELECT count(*) FROM orders WHERE year(order_date) = 2011
{repair}
Question: {question}
Reply with JSON: {{"sql": "...", "reason": "..."}}"""

REPAIR = """
Your previous SQL failed:
{sql}
DuckDB said: {error}
Write a corrected statement.
"""

ANSWER_PROMPT = """Answer the question in one or two sentences from the SQL result only; give the numbers as they
are in the result.

Question: {question}
SQL: {sql}
Result:
{rows}

Answer:"""


class _SQLReply(BaseModel):
    sql: str = Field(description="one SELECT statement, or empty when the tables cannot answer")
    reason: str = Field(default="", max_length=120)


class SQLAnswer(BaseModel):
    """What one table question came to: the SQL that ran (or was refused) and its rows."""

    question: str
    sql: str = ""
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list)
    truncated: bool = False
    refused: str | None = Field(default=None, description="why no SQL ran: refused by the guard or unanswerable")
    repaired: bool = False

    def as_text(self) -> str:
        """The node text the synthesis reads."""
        if self.refused:
            return f"No SQL result: {self.refused}"
        table = SQLResult(self.sql, self.columns, [tuple(r) for r in self.rows], self.truncated).as_text()
        return f"SQL: {self.sql}\nResult:\n{table}"


def _jsonable(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)  # 1232.8, not 1232.799999999999
    return value if value is None or isinstance(value, (bool, int, str)) else str(value)


def _loop(tables: SQLTables, question: str) -> QueryLoop:
    def prompt(repair: str) -> str:
        return SQL_PROMPT.format(schema=tables.describe(), repair=repair, question=question)

    loop = QueryLoop(
        question,
        noun="SQL",
        language="SQL",
        source="tables",
        prompt=prompt,
        repair=lambda sql, error: prompt(REPAIR.format(sql=sql, error=error)),
        execute=tables.run,
        retry_on=(InputDataError, QueryTimeoutError),
        event=SQLGeneratedEvent,
        ran=lambda result: (result.sql, len(result.rows)),  # the guard inside tables.run puts the LIMIT on
    )
    return loop


def _read(reply: _SQLReply) -> tuple[str, str]:
    return reply.sql.strip().rstrip(";").strip(), reply.reason


def _node(loop: QueryLoop) -> NodeWithScore:
    """The loop's outcome as the one retrieved node."""
    answer = SQLAnswer(question=loop.question, sql=loop.query, refused=loop.refused, repaired=loop.repaired)
    if loop.refused is None and loop.result is not None:
        result = loop.result
        answer.sql, answer.columns, answer.truncated = result.sql, result.columns, result.truncated
        answer.rows = [[_jsonable(v) for v in row] for row in result.rows]
    node = TextNode(text=answer.as_text(), metadata={"sql_answer": answer.model_dump(), "source": "sql"})
    node.excluded_embed_metadata_keys = node.excluded_llm_metadata_keys = ["sql_answer", "source"]
    return NodeWithScore(node=node, score=None if answer.refused else 1.0)


class TableRetriever(BaseRetriever):
    """Retrieves the answer rows of a table question as one node (text: the SQL and a Markdown table; metadata
    ``sql_answer``: an :class:`SQLAnswer`).

    Example:

    ```python
    retriever = TableRetriever(tables, llm=llm)
    [hit] = retriever.retrieve("How many days of snow were there in 2015?")
    hit.node.metadata["sql_answer"]["rows"]
    ```
    """

    def __init__(self, tables: SQLTables, llm: LLM | None = None, max_tokens: int = 256, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tables = tables
        self.llm = llm or Settings.llm
        self.max_tokens = max_tokens

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        loop = write_query(_loop(self.tables, query_bundle.query_str), self.llm, _SQLReply, _read, self.max_tokens)
        return [_node(loop)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        loop = _loop(self.tables, query_bundle.query_str)
        return [_node(await awrite_query(loop, self.llm, _SQLReply, _read, self.max_tokens))]


class TableQueryEngine(CustomQueryEngine):
    """Answers a question from registered tables with text-to-SQL; the response's metadata holds ``sql``,
    ``columns``, ``rows``, ``truncated`` and ``refused`` (why nothing ran, or None).

    Example:

    ```python
    engine = TableQueryEngine.from_defaults(tables)      # Settings.llm
    response = engine.query("Which month of 2013 had the most rain?")
    print(response, response.metadata["sql"])
    ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: TableRetriever = Field(description="writes and runs the SQL")
    llm: Any = Field(description="the LLM that writes the answer from the rows")
    synthesize_response: bool = Field(
        default=True, description="write a sentence from the rows; else the answer is the result table"
    )

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "TableQueryEngine"

    @classmethod
    def from_defaults(
        cls, tables: SQLTables, llm: LLM | None = None, synthesize_response: bool = True
    ) -> TableQueryEngine:
        """An engine over ``tables`` with ``llm`` (default ``Settings.llm``) writing both SQL and answer."""
        llm = llm or Settings.llm
        return cls(retriever=TableRetriever(tables, llm=llm), llm=llm, synthesize_response=synthesize_response)

    def _response(self, hit: NodeWithScore, text: str) -> Response:
        answer = hit.node.metadata["sql_answer"]
        return Response(response=text, source_nodes=[hit], metadata={**answer, "answer_kind": "sql"})

    def _answer_prompt(self, answer: dict[str, Any]) -> str | None:
        if answer["refused"] or not self.synthesize_response:
            return None
        rows = SQLResult(answer["sql"], answer["columns"], [tuple(r) for r in answer["rows"]], answer["truncated"])
        return ANSWER_PROMPT.format(question=answer["question"], sql=answer["sql"], rows=rows.as_text())

    def _fallback(self, hit: NodeWithScore) -> str:
        answer = hit.node.metadata["sql_answer"]
        if answer["refused"]:
            return f"I could not answer this from the tables: {answer['refused']}"
        return hit.node.get_content()

    def custom_query(self, query_str: str) -> Response:
        """Write and run the SQL, then the answer."""
        [hit] = self.retriever.retrieve(query_str)
        prompt = self._answer_prompt(hit.node.metadata["sql_answer"])
        text = self._fallback(hit) if prompt is None else complete_text(self.llm, prompt, max_tokens=160).strip()
        return self._response(hit, text)

    async def acustom_query(self, query_str: str) -> Response:
        """Async twin of :meth:`custom_query`."""
        [hit] = await self.retriever.aretrieve(query_str)
        prompt = self._answer_prompt(hit.node.metadata["sql_answer"])
        text = self._fallback(hit) if prompt is None else (await acomplete_text(self.llm, prompt, max_tokens=160))
        return self._response(hit, text.strip())
