"""The checks of a generated query that ran: each says why the query's shape does not fit the question (never
whether its answer is right), and the engine sends every reason found back to the LLM once.

Example:

```python
_complaint(form, "How many rivers flow through Bern?", {"c1": "Bern"}, [], "MATCH ... RETURN x.name")
# 'The question asks how many: return count(DISTINCT x) AS n of the entities counted, not a list.'
```
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import ClassVar

from llama_index_kgplus.kg._cypher_policy import (
    CypherQueryCheck,
    CypherQuestion,
    _Chain,
    _too_few_hops,
)
from llama_index_kgplus.kg._cypher_schema import _Form
from llama_index_kgplus.kg._cypher_text import (
    _COUNTING,
    _GROUP_WORD,
    _YES_NO_QUESTION,
    _hops,
    _matched_values,
    _named_group,
    _return_clause,
)

__all__ = ["ChainCheck", "CountCheck", "GroupValueCheck", "GroupsReturnedCheck", "NameCheck"]


class ChainCheck(CypherQueryCheck):
    """A question through 2-3 relationship kinds (read from its words: a word whose stem starts a kind's name,
    "caused" -> ``causes``) answered with fewer relationships is sent back with the chains of those kinds from
    the named entity that find something in the graph (one per choice of arrow directions, counted with
    parameterised queries), or with the chain written out when none does.

    Can be wrong when the question's words name a kind they do not mean, or when a shorter query is right (a
    kind named twice for one step)."""

    name: ClassVar[str] = "chain_check"

    def complain(self, q: CypherQuestion, cypher: str) -> list[str]:
        hops, steps, form = _hops(cypher), q.steps, q.form
        if not _too_few_hops(steps, hops):
            return []
        start = next(iter(q.named.values()), "the named entity")
        said = (
            f"It follows {hops} relationship{'s' if hops > 1 else ''}, but the question goes through "
            f"{len(steps)}: from {start!r} {', then '.join(steps)}, with an unnamed entity in between"
        )
        ways = q.listed_chains()
        if ways:
            returned = "count(*) > 0 AS answer" if q.yes_no else f"what it asks about the last node (n{len(steps)})"
            return [
                f"{said}. These chains find something in the graph: {ways}. Use the one whose arrows read like "
                f"the question, and return {returned}."
            ]
        chain = ", ".join(f"(n{i})-{form.step(f'r{i + 1}', k)}->(n{i + 1})" for i, k in enumerate(steps))
        kinds = " AND ".join(filter(None, (form.where(f"r{i + 1}", k) for i, k in enumerate(steps))))
        return [
            f"{said}: {chain}{f' WHERE {kinds}' if kinds else ''}, where n0 is {start!r}; turn an arrow round "
            f"(<-[r]-) where the question reads that relationship the other way ('x {steps[-1]} n1' is "
            "(n1)<-[r]-(x))."
        ]


class CountCheck(CypherQueryCheck):
    """A "how many" / "number of" / "count" question whose query returns no count is told to count.

    Can be wrong when the count is made where this check does not look (it reads ``count(`` or ``size(``
    anywhere in the query); a yes/no question is never told to count."""

    name: ClassVar[str] = "count_check"

    def complain(self, q: CypherQuestion, cypher: str) -> list[str]:
        if q.counts and not _COUNTING.search(cypher):
            return ["The question asks how many: return count(DISTINCT x) AS n of the entities counted, not a list."]
        return []


def _returns_groups(form: _Form, question: str, returned: str) -> bool:
    """The RETURN clause ``returned`` gives the entities' group property and not their names, where the question
    asks about the entities (it names neither that property nor groups, and is not yes/no)."""
    group = form.node_class
    return bool(
        group
        and not _YES_NO_QUESTION.search(question)
        and re.search(rf"\.\s*{re.escape(group)}\b", returned)
        and not re.search(rf"\.\s*{re.escape(form.name)}\b", returned)
        and group.lower() not in question.lower()
        and not _GROUP_WORD.search(question)
    )


def _groups_returned(form: _Form) -> str:
    """How the check's reason about a returned group property opens (:class:`EntitiesForGroups` looks for it)."""
    return f"It returns {form.node_class} values (the group each entity belongs to)"


class GroupsReturnedCheck(CypherQueryCheck):
    """A query that returns (or counts) the entities' group property (the graph's small text node property, such
    as a ``category``) and not their names, where the question asks about the entities, is told to return the
    entities (their count for "how many").

    Can be wrong when the question asks for the groups in words of its own (it is quiet when the question says
    the property's name, "group(s)" or "category"/"categories")."""

    name: ClassVar[str] = "groups_returned_check"

    def complain(self, q: CypherQuestion, cypher: str) -> list[str]:
        form = q.form
        if not _returns_groups(form, q.question, _return_clause(cypher)):
            return []
        what = "count the entities, count(DISTINCT x)" if q.counts else f"return their names, x.{form.name}"
        return [f"{_groups_returned(form)}, but the question asks about the entities themselves: {what}."]


class GroupValueCheck(CypherQueryCheck):
    """A filter on a value of the group property that no entity has is told the values there are; a group value
    the question names with the property's own name ("whose category is city") must be filtered on, and not
    matched as an entity's name.

    Can be wrong when a value is written in another case or spelling on purpose (values are compared without
    case)."""

    name: ClassVar[str] = "group_value_check"

    def complain(self, q: CypherQuestion, cypher: str) -> list[str]:
        group, groups = q.form.node_class, q.groups
        if not group:
            return []
        reasons = []
        known = {g.lower() for g in groups}
        unknown = [v for v in _matched_values(group, cypher) if v.lower() not in known]
        if known and unknown:
            reasons.append(
                f"No entity has {group} = {unknown[0]!r} (its values: {', '.join(groups)}). Leave the {group} "
                "filter out unless the question names one of these values."
            )
        value = _named_group(group, groups, q.question)
        as_name = value is not None and value.lower() in {n.lower() for n in _matched_values(q.form.name, cypher)}
        if value is not None and (as_name or value.lower() not in map(str.lower, _matched_values(group, cypher))):
            reasons.append(
                f"The question asks about the entities whose {group} is {value!r}: filter x.{group} = {value!r}"
                + (f", and match no entity named {value!r}." if as_name else ".")
            )
        return reasons


class NameCheck(CypherQueryCheck):
    """A query that matches an entity name the question does not name (names leak from the stored relationships
    shown under the question) is told to name only the question's entities; one that gives one name to two
    nodes (outside a UNION) is told that an entity in between is unnamed, with the chains the graph has.

    Can be wrong when the question names an entity the dictionary did not find (a spelling it does not know)."""

    name: ClassVar[str] = "name_check"

    def complain(self, q: CypherQuestion, cypher: str) -> list[str]:
        reasons = []
        in_query = _matched_values(q.form.name, cypher)
        asked = {n.lower() for n in q.named.values()}
        strays = [n for n in in_query if n.lower() not in asked]
        if asked and strays:
            reasons.append(
                f"It matches {strays[0]!r}, which the question does not name. Give names only to the entities the "
                f"question names ({', '.join(map(repr, q.named.values()))}) and leave every other node unnamed."
            )
        union = re.search(r"\bUNION\b", cypher, re.I) is not None  # each part may name the same entity
        repeated = None if union else next((n for n in in_query if in_query.count(n) > 1), None)
        if repeated is not None:
            ways = q.listed_chains()
            ways = (
                f"these chains of the question's relationships find something in the graph: {ways}"
                if ways
                else f"(x)-[r1]->(m), (m)-[r2]->(a {{{q.form.name}: {repeated!r}}}) with the directions the question "
                "needs"
            )
            reasons.append(f"It gives {repeated!r} to two nodes. An entity in between is unnamed: {ways}.")
        return reasons


CHECKS: tuple[CypherQueryCheck, ...] = (
    ChainCheck(),
    CountCheck(),
    GroupsReturnedCheck(),
    GroupValueCheck(),
    NameCheck(),
)


def _complaint(
    form: _Form,
    question: str,
    named: dict[str, str],
    groups: list[str],
    cypher: str,
    steps: Sequence[str] = (),
    chains: Callable[[], list[_Chain]] | None = None,
    checks: Sequence[CypherQueryCheck] = CHECKS,
) -> str | None:
    """Every reason ``checks`` find why ``cypher`` does not fit ``question`` (joined), or None; ``chains()``
    gives the chains of ``steps`` in their order, asked only when a reason needs them."""
    q = CypherQuestion(
        None, form, question, named, list(steps), groups, chain_source=(lambda _: chains()) if chains else None
    )
    return complaint(q, cypher, checks)


def complaint(q: CypherQuestion, cypher: str, checks: Sequence[CypherQueryCheck]) -> str | None:
    """The reasons of every check, in order, as one text; None when all are quiet."""
    return " ".join(reason for check in checks for reason in check.complain(q, cypher)) or None
