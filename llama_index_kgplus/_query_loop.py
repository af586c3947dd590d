"""The loop text-to-SQL (``tables/``) and text-to-Cypher (``kg/``) share: the LLM writes a query as JSON, the
guard and the database run it, a database error (or a ``check``'s complaint about a query that ran) goes back
to the LLM once, and what happened is recorded.

Example:

```python
loop = QueryLoop(question, noun="SQL", language="SQL", source="tables", prompt=make_prompt,
                 repair=make_repair_prompt, execute=tables.run, retry_on=(InputDataError,))
write_query(loop, llm, SQLReply, lambda reply: (reply.sql.strip(), reply.reason))
loop.result, loop.refused, loop.repaired
```
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from llama_index.core.instrumentation import get_dispatcher
from pydantic import BaseModel

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus._structured import agenerate_json, generate_json
from llama_index_kgplus.errors import QueryCheckError, UnsafeQueryError
from llama_index_kgplus.events import GeneratedQueryEvent

__all__ = ["QueryLoop", "awrite_query", "write_query"]

logger = get_logger(__name__)
dispatcher = get_dispatcher(__name__)

R = TypeVar("R", bound=BaseModel)


class QueryLoop:
    """One question's generate -> guard and run -> one repair; ``query`` is the last query written (in the form
    ``guard`` returned, when it passed one), ``result`` what ``execute`` returned for it, ``refused`` why nothing
    usable ran (or None). ``guard`` raises :class:`UnsafeQueryError`; without one, ``execute`` guards.

    ``check(query, result)`` may complain (a string) about a query that ran but does not fit the question (a
    list where a count was asked): the complaint goes to ``repair`` as a :class:`QueryCheckError`, once; if the
    repaired query is empty, refused by the guard or rejected by the database, the first query and its result
    stand (``second_try`` then sees them as usual). ``second_try(query, result)`` may replace both without the
    LLM, returning ``(query, result, what it did)``.

    Each query the LLM writes is reported as an ``event`` (a :class:`~llama_index_kgplus.events.GeneratedQueryEvent`
    class) with the verdict on it; ``ran(result)`` gives the query as it ran and its number of rows (default: the
    guarded query and ``len(result)``)."""

    def __init__(
        self,
        question: str,
        *,
        noun: str,
        language: str,
        source: str,
        prompt: Callable[[str], str],
        repair: Callable[[str, Exception], str],
        execute: Callable[[str], Any],
        retry_on: tuple[type[Exception], ...],
        guard: Callable[[str], str] | None = None,
        second_try: Callable[[str, Any], tuple[str, Any, str] | None] | None = None,
        check: Callable[[str, Any], str | None] | None = None,
        event: type[GeneratedQueryEvent] | None = None,
        ran: Callable[[Any], tuple[str, int]] | None = None,
    ) -> None:
        self.question, self.noun, self.language, self.source = question, noun, language, source
        self.prompt, self.repair, self.execute, self.retry_on = prompt, repair, execute, retry_on
        self.guard, self.second_try, self.check = guard, second_try, check
        self.event, self.ran = event, ran or (lambda result: (self.query, len(result)))
        self.query = ""
        self.result: Any = None
        self.refused: str | None = None
        self.repaired = False
        self.rework: str | None = None  # what second_try did when it replaced the query and its result
        self.complaint: str | None = None  # what check said about the first query
        self._checked: tuple[str, Any] | None = None  # that query and its result, kept in case the repair fails

    def step(self, query: str, reason: str) -> str | None:
        """Run ``query``; the repair prompt when the database rejected it (or ``check`` complained), else None
        (done)."""
        self.query = query
        if not query:
            self._report(query, "none", reason or None)
            self._fail(f"the {self.source} cannot answer this: {reason or f'no {self.noun} written'}")
            return None
        try:
            if self.guard is not None:
                self.query = self.guard(query)
            self.result = self.execute(self.query)
        except UnsafeQueryError as exc:
            logger.warning("refused generated %s for %r: %s", self.language, self.question, exc)
            self._report(query, "refused", str(exc))
            self._fail(str(exc))
            return None
        except self.retry_on as exc:
            self._report(query, "failed", str(exc))
            if self._checked is None and not self.repaired:
                self.repaired = True
                return self.repair(query, exc)
            self._fail(f"the {self.noun} failed after one repair: {exc}")
            return None
        self._report(query, "ran", ran=self.ran(self.result))
        if self.check is not None and not self.repaired:
            self.complaint = self.check(self.query, self.result)
            if self.complaint:
                self.repaired, self._checked = True, (self.query, self.result)
                return self.repair(self.query, QueryCheckError(self.complaint, self.query))
        self._try_again()
        return None

    def _report(self, query: str, verdict: str, reason: str | None = None, ran: tuple[str, int] | None = None) -> None:
        if self.event is not None:
            executed, rows = ran if ran is not None else (None, None)
            dispatcher.event(
                self.event(
                    question=self.question, query=query, verdict=verdict, reason=reason, repair=self.repaired,
                    executed_query=executed, rows=rows,
                )
            )  # fmt: skip

    def _fail(self, reason: str) -> None:
        """Nothing usable ran: the checked first query and its result stand if there is one, else ``reason``."""
        if self._checked is None:
            self.refused = reason
            return
        self.query, self.result = self._checked
        self._try_again()

    def _try_again(self) -> None:
        if self.second_try is not None:  # a result that looks wrong may be replaced, without the LLM
            replaced = self.second_try(self.query, self.result)
            if replaced is not None:
                self.query, self.result, self.rework = replaced

    @property
    def reworked(self) -> bool:
        """``second_try`` replaced the query and its result (``rework`` says how)."""
        return self.rework is not None


def write_query(
    loop: QueryLoop, llm: Any, reply_cls: type[R], read: Callable[[R], tuple[str, str]], max_tokens: int = 256
) -> QueryLoop:
    """Drive ``loop`` to its end: each reply of ``reply_cls`` is read into ``(query, reason)`` by ``read``."""
    prompt: str | None = loop.prompt("")
    while prompt is not None:
        prompt = loop.step(*read(generate_json(llm, prompt, reply_cls, max_tokens=max_tokens)))
    return loop


async def awrite_query(
    loop: QueryLoop, llm: Any, reply_cls: type[R], read: Callable[[R], tuple[str, str]], max_tokens: int = 256
) -> QueryLoop:
    """Async twin of :func:`write_query` (the prompt's reads and the query run in a worker thread)."""
    prompt: str | None = await asyncio.to_thread(loop.prompt, "")
    while prompt is not None:
        reply = await agenerate_json(llm, prompt, reply_cls, max_tokens=max_tokens)
        prompt = await asyncio.to_thread(loop.step, *read(reply))
    return loop
