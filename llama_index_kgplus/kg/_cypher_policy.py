"""What a text-to-Cypher repair policy is, and what it sees of one question.

A policy is one deterministic step around the query the LLM wrote, named so that a user can switch it off
(``CypherQueryEngine(repairs=...)``). There are three kinds:

- a :class:`CypherQueryRewrite` changes a query's text before the read-only guard sees it;
- a :class:`CypherQueryCheck` says why a query that ran does not fit the question; the reasons of all checks go
  back to the LLM once, in the repair prompt (only the query's shape is checked, never its answer);
- a :class:`CypherSecondTry` may replace the query that stands after the repair, and its rows, without the LLM,
  when the result looks wrong; the first one whose query finds something wins, and the answer says so.

Each sees a :class:`CypherQuestion`: the question, the graph's form and group values, the entities the question
names, the relationship kinds it goes through, and the chains of them the graph has.

Example:

```python
class NoVariableLength(CypherQueryCheck):
    \"\"\"Variable-length patterns are sent back: this graph is too large for them.\"\"\"

    name: ClassVar[str] = "no_variable_length"

    def complain(self, q, cypher):
        return ["Do not use variable-length relationships (*)."] if "*" in cypher else []
```
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from llama_index_kgplus.errors import GraphStoreError, QueryTimeoutError, UnsafeQueryError
from llama_index_kgplus.graph_stores._dialect_base import quote_identifier
from llama_index_kgplus.kg._cypher_schema import _Form
from llama_index_kgplus.kg._cypher_text import _COUNT_QUESTION, _YES_NO_QUESTION

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class _Chain:
    """One way to write a chain of relationship kinds from a named entity: ``shown`` (a MATCH ... WHERE with the
    name and kinds written out, for the LLM and the reader), ``match`` with ``params`` (the same, parameterised,
    to run), ``last`` (the variable of the node it ends at) and ``ends`` (how many entities that is)."""

    shown: str
    match: str
    params: dict[str, Any]
    last: str
    ends: int


def _chain_question(steps: Sequence[str]) -> bool:
    """The question goes through 2-3 relationship kinds: a chain worth checking (and listing) for."""
    return 2 <= len(steps) <= 3


def _too_few_hops(steps: Sequence[str], hops: int) -> bool:
    """A query that follows ``hops`` relationships (at least one) falls short of a chain question's kinds."""
    return _chain_question(steps) and 0 < hops < len(steps)


def _chain_options(
    kg: Any, form: _Form, start: tuple[str, str], steps: Sequence[str], timeout: float = 10.0
) -> list[_Chain]:
    """The chains of ``steps`` (relationship kinds, in order) from the entity ``start`` (id, name), one per
    choice of arrow directions, that find something in the graph other than ``start`` itself (each counted with
    a parameterised read-only query within ``timeout`` seconds; a choice the database cannot count in time is
    left out). A chain that only leads back, such as down a hierarchy and up again, finds nothing new and is not
    offered."""
    node, name, cid = quote_identifier(form.label), form.name, quote_identifier(kg.manifest.id_property)
    last = f"n{len(steps)}"
    found = []
    for turns in product((False, True), repeat=len(steps)):
        arrows = [
            f"<-{form.step(f'r{i + 1}', kind)}-" if back else f"-{form.step(f'r{i + 1}', kind)}->"
            for i, (kind, back) in enumerate(zip(steps, turns))
        ]
        run_path, shown_path = (  # the label quoted to run, plain to show
            "".join(f"{arrow}(n{i + 1}:{label})" for i, arrow in enumerate(arrows)) for label in (node, form.label)
        )
        params: dict[str, Any] = {"cid": start[0]}
        run_kinds = []
        if form.kind:  # the kinds as parameters to run, as literals to show
            params |= {f"k{i + 1}": kind for i, kind in enumerate(steps)}
            run_kinds = [f"r{i + 1}.{quote_identifier(form.kind)} = $k{i + 1}" for i in range(len(steps))]
        back = f"{last}.{cid} <> a.{cid}"  # not back at the start
        match = f"MATCH (a:{node}){run_path} WHERE {' AND '.join([f'a.{cid} = $cid', *run_kinds, back])}"
        try:
            rows = kg.dialect.run_read_only(kg.store, f"{match} RETURN count(DISTINCT {last}) AS n", timeout, params)
        except (GraphStoreError, QueryTimeoutError):  # this choice cannot be counted here: it is not offered
            continue
        if rows and rows[0]["n"]:
            kinds = [form.where(f"r{i + 1}", kind) for i, kind in enumerate(steps)]
            where = " AND ".join([k for k in kinds if k] + [back])
            shown = f"MATCH (a:{form.label} {{{name}: {start[1]!r}}}){shown_path} WHERE {where}"
            found.append(_Chain(shown, match, params, last, int(rows[0]["n"])))
    return found


@dataclass
class CypherQuestion:
    """One question as the policies see it: ``form`` (how queries over the graph are written), ``groups`` (the
    values of its group property), ``named`` (id -> name of the entities the question names), ``steps`` (the
    relationship kinds it goes through, nearest the named entity first), ``guard`` (the rewrites and the
    read-only guard) and ``chain_source`` (the chains of kinds in a given order that find something, read from
    the graph only when a policy asks)."""

    kg: Any
    form: _Form
    question: str
    named: dict[str, str] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    guard: Callable[[str], str] = str
    timeout: float = 10.0
    max_rows: int | None = None
    chain_source: Callable[[tuple[str, ...]], list[_Chain]] | None = None
    _chains: dict[tuple[str, ...], list[_Chain]] = field(default_factory=dict, repr=False)

    @property
    def yes_no(self) -> bool:
        return _YES_NO_QUESTION.search(self.question) is not None

    @property
    def counts(self) -> bool:
        """A "how many" question (never a yes/no one)."""
        return not self.yes_no and _COUNT_QUESTION.search(self.question) is not None

    def chains(self, order: Sequence[str] | None = None) -> list[_Chain]:
        """The chains of the kinds in ``order`` (default: the guessed order, ``steps``), read once per order."""
        key = tuple(self.steps if order is None else order)
        if key not in self._chains:
            self._chains[key] = self.chain_source(key) if self.chain_source is not None else []
        return self._chains[key]

    def either_order(self) -> list[_Chain]:
        """The chains in the guessed order of the kinds and in the reverse order (the order is a guess)."""
        backwards = tuple(reversed(self.steps))
        return self.chains() + (self.chains(backwards) if backwards != tuple(self.steps) else [])

    def listed_chains(self) -> str:
        """The chains of a chain question (2-3 kinds) written out for the LLM with their counts, or ""."""
        options = self.chains() if _chain_question(self.steps) else []
        return "; ".join(f"{chain.shown} (ends at {chain.ends} entities)" for chain in options)

    def run(self, query: str, params: dict[str, Any] | None = None) -> tuple[str, Rows] | None:
        """:func:`_run_guarded` with the question's guard, timeout and row limit."""
        return _run_guarded(self.kg, self.guard, query, self.timeout, params, self.max_rows)

    def entities(self, var: str) -> str:
        """:func:`_entities` for this question."""
        return _entities(self.form, self.question, var)


def _run_guarded(
    kg: Any,
    guard: Callable[[str], str],
    query: str,
    timeout: float,
    params: dict[str, Any] | None = None,
    max_rows: int | None = None,
) -> tuple[str, Rows] | None:
    """``query`` through ``guard``, run read-only with ``params`` within ``timeout`` seconds, reading at most
    ``max_rows`` rows: (the query as run, its rows), or None when the guard refuses it or the database fails or
    runs out of time."""
    try:
        guarded = guard(query)
        return guarded, kg.dialect.run_read_only(kg.store, guarded, timeout, params, max_rows=max_rows)
    except (UnsafeQueryError, GraphStoreError, QueryTimeoutError):
        return None


def _entities(form: _Form, question: str, var: str) -> str:
    """What to return of the entities at ``var``: their names, or their count for a "how many" question."""
    if _COUNT_QUESTION.search(question):
        return f"count(DISTINCT {var}) AS n"
    return f"DISTINCT {var}.{quote_identifier(form.name)} AS name"


class CypherRepair(BaseModel):
    """One named repair policy (see the module docstring); ``name`` is what a response's metadata calls it.

    Example:

    ```python
    from llama_index_kgplus.kg import CypherQueryEngine

    [repair.name for repair in CypherQueryEngine.default_repairs()]
    engine = CypherQueryEngine.from_defaults(kg, llm=llm, repairs=CypherQueryEngine.default_repairs({"arrow_reversal"}))
    ```
    """

    model_config = ConfigDict(frozen=True)

    name: ClassVar[str] = ""

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return cls.__name__


class CypherQueryRewrite(CypherRepair):
    """Changes the text of every query (the LLM's and the policies') before the read-only guard."""

    @abstractmethod
    def rewrite(self, q: CypherQuestion, cypher: str) -> str:
        """``cypher`` rewritten (or as it is)."""


class CypherQueryCheck(CypherRepair):
    """Says why a query that ran does not fit the question: its reasons are sent back to the LLM once."""

    @abstractmethod
    def complain(self, q: CypherQuestion, cypher: str) -> list[str]:
        """The reasons (one sentence each), or [] when the query fits."""


class CypherSecondTry(CypherRepair):
    """May replace the query that stands after the repair (and its rows) without the LLM; ``note`` is added to
    the answer when it did."""

    note: ClassVar[str] = ""

    @abstractmethod
    def retry(self, q: CypherQuestion, cypher: str, rows: Rows, complaint: str) -> tuple[str, Rows] | None:
        """(another query as run, its rows), or None; ``complaint`` is what the checks said of the first query."""
