"""The repair policies of text-to-Cypher that change a query without the LLM, and the default set of all of them.

:data:`DEFAULT_CYPHER_REPAIRS`, in the order they act: :class:`KindAsPropertyRewrite` (before the guard), the
checks of ``_cypher_checks`` (a query that ran goes back to the LLM once with their reasons), then the second
tries :class:`OneChainFallback`, :class:`EntitiesForGroups` and :class:`ArrowReversal` (the first whose query
finds something replaces the result; a query that ran but found nothing is what the next one starts from).

Example:

```python
engine = CypherQueryEngine.from_defaults(kg, llm=llm, repairs=CypherQueryEngine.default_repairs({"arrow_reversal"}))
```
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from itertools import combinations
from typing import Any, ClassVar

from llama_index_kgplus.kg._cypher_checks import CHECKS, _groups_returned, _returns_groups
from llama_index_kgplus.kg._cypher_policy import (
    CypherQueryRewrite,
    CypherQuestion,
    CypherRepair,
    CypherSecondTry,
    Rows,
    _entities,
    _run_guarded,
    _too_few_hops,
)
from llama_index_kgplus.kg._cypher_prompts import CHAIN_NOTE, ENTITIES_NOTE, REVERSED_NOTE
from llama_index_kgplus.kg._cypher_schema import _Form
from llama_index_kgplus.kg._cypher_text import _ARROW, _QUOTED, _found_nothing, _hops, _return_clause, _reverse_arrows

__all__ = [
    "DEFAULT_CYPHER_REPAIRS",
    "ArrowReversal",
    "EntitiesForGroups",
    "KindAsPropertyRewrite",
    "OneChainFallback",
    "default_cypher_repairs",
]

_REL_NAMED_AS_TYPE = re.compile(r"\[\s*(\w*)\s*:\s*`?([A-Za-z_][\w\-]*)`?\s*\]")


def _kinds_as_properties(form: _Form, cypher: str) -> str:
    """``-[r:flows_into]->`` where ``flows_into`` is a value of the kind property, not a relationship type,
    written as ``-[r:Rel {kind: 'flows_into'}]->`` (the form the graph stores); anything else is left as it is."""
    if not form.kind:
        return cypher
    kinds = {k.lower(): k for k in form.kinds}

    def fix(match: re.Match[str]) -> str:
        var, typ = match.groups()
        if typ == form.rel or typ.lower() not in kinds:
            return match.group()
        return f"[{var}:{form.rel} {{{form.kind}: {kinds[typ.lower()]!r}}}]"

    return _REL_NAMED_AS_TYPE.sub(fix, cypher)


class KindAsPropertyRewrite(CypherQueryRewrite):
    """Where the graph keeps a relationship's kind in a property (one type, many kinds), a kind written as a
    relationship type (``-[r:flows_into]->``) is rewritten to the type with the kind filter, before the guard.

    Can be wrong only where a relationship type has the name of a kind value; on a graph whose kinds are the
    types it does nothing."""

    name: ClassVar[str] = "kind_as_property"

    def rewrite(self, q: CypherQuestion, cypher: str) -> str:
        return _kinds_as_properties(q.form, cypher)


class OneChainFallback(CypherSecondTry):
    """When the corrected query still follows fewer relationships than a chain question names, after the LLM was
    shown the chains (by ``chain_check``), and the graph has exactly one chain of those kinds from the named
    entity (in the guessed order of the kinds or the reverse), that chain's end is the answer (its count for
    "how many"); never for a yes/no question. Needs ``chain_check``: without it, it never acts.

    Can be wrong when the question's words were read as the wrong kinds, or when it asks something else of the
    chain's end than its names or count."""

    name: ClassVar[str] = "one_chain"
    note: ClassVar[str] = CHAIN_NOTE

    def retry(self, q: CypherQuestion, cypher: str, rows: Rows, complaint: str) -> tuple[str, Rows] | None:
        if not complaint or not any(chain.shown in complaint for chain in q.chains()):
            return None
        if not _too_few_hops(q.steps, _hops(cypher)) or q.yes_no:
            return None
        options = q.either_order()
        if len(options) != 1:
            return None
        chain = options[0]
        ran = q.run(f"{chain.match} RETURN {q.entities(chain.last)}", chain.params)  # the guard puts the limit on
        if ran is None or not ran[1]:
            return None
        query, found = ran
        return query.replace(chain.match, chain.shown), found


def _entities_for_groups(form: _Form, question: str, cypher: str) -> str | None:
    """``cypher`` with its RETURN asking for the entities (:func:`_entities`) where it returns only their group
    property (:func:`_returns_groups`): ``[DISTINCT] v.group [AS x]`` or ``count([DISTINCT] v.group) [AS x]``,
    ``v`` a node the query does not match by name ("What category is Bern?" asks for Bern's group). Else None:
    any other RETURN (an aggregate, a second column), or a UNION."""
    group, name = form.node_class, form.name
    masked = _QUOTED.sub(lambda m: "'" + "_" * (len(m.group()) - 2) + "'", cypher)  # its positions kept
    if (
        not group
        or re.search(r"\bUNION\b", masked, re.I)
        or not _returns_groups(form, question, _return_clause(cypher))
    ):
        return None
    last = list(re.finditer(r"\bRETURN\b", masked, re.I))[-1]
    returned = re.fullmatch(
        rf"\s*(?:DISTINCT\s+)?(\w+)\.{re.escape(group)}(?:\s+AS\s+\w+)?\s*(?:(?:ORDER\s+BY|SKIP|LIMIT)\b.*)?"
        rf"|\s*count\s*\(\s*(?:DISTINCT\s+)?(\w+)\.{re.escape(group)}\s*\)(?:\s+AS\s+\w+)?\s*(?:LIMIT\b.*)?",
        masked[last.end() :],
        re.I | re.S,
    )
    if returned is None:
        return None
    var = returned.group(1) or returned.group(2)
    prop = re.escape(name)
    if re.search(
        rf"\(\s*{var}\s*(?::\s*\w+\s*)?\{{[^}}]*\b{prop}\s*:|\b{var}\s*\.\s*{prop}\s*(?:=|IN\b)", masked, re.I
    ):
        return None
    return f"{cypher[: last.start()]}RETURN {_entities(form, question, var)}"


class EntitiesForGroups(CypherSecondTry):
    """When the corrected query still returns only the entities' group property (exactly
    ``[DISTINCT] v.group`` or its count, ``v`` not matched by name) after being told (by
    ``groups_returned_check``) that the question asks about the entities, the same match is run returning
    their names (their count for "how many"). Needs ``groups_returned_check``: without it, it never acts.

    Can be wrong when the question does ask for the groups in words the check does not know."""

    name: ClassVar[str] = "entities_for_groups"
    note: ClassVar[str] = ENTITIES_NOTE

    def retry(self, q: CypherQuestion, cypher: str, rows: Rows, complaint: str) -> tuple[str, Rows] | None:
        if _groups_returned(q.form) not in complaint:
            return None
        rewritten = _entities_for_groups(q.form, q.question, cypher)
        return None if rewritten is None else q.run(rewritten)


def _reversed_if_empty(
    kg: Any, cypher: str, rows: Rows, guard: Callable[[str], str], timeout: float, max_rows: int | None = None
) -> tuple[str, Rows] | None:
    """When ``cypher`` found nothing, the same query with relationship arrows reversed, if that finds something;
    else None. A chain of 2-3 arrows tries one arrow at a time first (a path usually goes wrong at one step),
    then more."""
    if not _found_nothing(rows):
        return None
    arrows = sum(1 for m in _ARROW.finditer(_QUOTED.sub("''", cypher)))
    subsets = [set(c) for size in range(1, arrows) for c in combinations(range(arrows), size)] if arrows <= 3 else []
    for flipped in dict.fromkeys(_reverse_arrows(cypher, which) for which in [*subsets, None]):
        if flipped == cypher:
            continue
        again = _run_guarded(kg, guard, flipped, timeout, max_rows=max_rows)
        if again is not None and not _found_nothing(again[1]):
            return again
    return None


class ArrowReversal(CypherSecondTry):
    """A query that found nothing (no rows, or one row of zero counts; a boolean is an answer) is run again with
    its relationship arrows reversed, one arrow at a time before more (for 2-3 arrows), and the first that finds
    something is kept: small models often read "the tributaries of X" as ``(X)-[:tributary_of]->(m)``.

    Can be wrong when the true answer is empty or 0 and the reversed relationship finds something: the rows then
    answer the question turned round, which the answer's note says."""

    name: ClassVar[str] = "arrow_reversal"
    note: ClassVar[str] = REVERSED_NOTE

    def retry(self, q: CypherQuestion, cypher: str, rows: Rows, complaint: str) -> tuple[str, Rows] | None:
        return _reversed_if_empty(q.kg, cypher, rows, q.guard, q.timeout, q.max_rows)


DEFAULT_CYPHER_REPAIRS: tuple[CypherRepair, ...] = (
    KindAsPropertyRewrite(),
    *CHECKS,
    OneChainFallback(),
    EntitiesForGroups(),
    ArrowReversal(),
)


def default_cypher_repairs(exclude: Collection[str] = ()) -> tuple[CypherRepair, ...]:
    """The default policies without those named in ``exclude`` (e.g. ``{"arrow_reversal"}``); an unknown name is
    a ValueError that lists the names."""
    names = [repair.name for repair in DEFAULT_CYPHER_REPAIRS]
    unknown = sorted(set(exclude) - set(names))
    if unknown:
        raise ValueError(f"Unknown repair policy {', '.join(map(repr, unknown))}; the policies are {', '.join(names)}.")
    return tuple(repair for repair in DEFAULT_CYPHER_REPAIRS if repair.name not in exclude)
