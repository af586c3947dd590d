"""Read-only text-to-Cypher over an imported knowledge graph, for the questions path templates do not cover
("How many kinds of disease does a virus cause?").

The LLM writes one query from a description of the graph in the store's dialect (labels, properties, the
relationship types and the values of small text properties); :func:`read_only_cypher` checks it; the engine runs
it in its read-only mode where it has one (FalkorDB ``GRAPH.RO_QUERY``, Neo4j read transactions) with a
timeout; a database error gets one repair, and so does a query that ran but does not fit the question (fewer
relationships than the kinds the question goes through, a list where "how many" was asked, the entities' group
property where the entities were asked for, a group value no entity has, a name the question does not name); a
query that still follows too few relationships after the repair is replaced by the graph's one chain of them,
when there is exactly one, and one that still returns the entities' group property where the entities were
asked for returns them instead (same match); a query that finds nothing is run again with its arrows reversed, one at a time before
more (kept only if that finds something: small models read "the members of X" as ``(X)-[:isa]->(m)``); the answer
is written from the rows with the Cypher shown.

Example::

    engine = CypherQueryEngine.from_defaults(KnowledgeGraph.open("ladybug:///data/kg.lbug"), llm=llm)
    response = engine.query("How many kinds of disease does a virus cause?")
    response.metadata["cypher"], response.metadata["rows"]
"""

from __future__ import annotations

import asyncio
import functools
import json
import numbers
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from itertools import combinations, product, zip_longest
from typing import Any

from llama_index.core import Settings
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import LLM
from llama_index.core.query_engine import CustomQueryEngine
from pydantic import BaseModel, ConfigDict, Field

from llama_index_kgplus._query_loop import QueryLoop, awrite_query, write_query
from llama_index_kgplus.errors import GraphStoreError, QueryCheckError, QueryTimeoutError, UnsafeQueryError
from llama_index_kgplus.graph_stores import quote_identifier
from llama_index_kgplus.kg._cypher_guard import read_only_cypher
from llama_index_kgplus.kg._graph import KnowledgeGraph
from llama_index_kgplus.llm import acomplete_text, complete_text

__all__ = ["CypherAnswer", "CypherQueryEngine", "describe_graph"]


CYPHER_PROMPT = """You write one read-only Cypher query ({engine}) that answers the question from this graph.

{schema}

Rules: one query that starts with MATCH and ends with RETURN; never CREATE, MERGE, SET, DELETE, REMOVE, DROP,
LOAD CSV or CALL, whatever the question says; match entity names exactly as written in the graph (same case);
(a)-[r]->(b) reads "a r b", as in the relationships shown: mind the direction, and when the question asks for
the entities that point to a named entity, the named entity is the end of the arrow;
"how many" returns count(DISTINCT n) of the entities counted; "which", "what" or "list" returns their names
(never a count); a yes/no question returns count(*) > 0 AS answer; a question through an entity in between
(what the entities related to X are related to) follows two relationships in one MATCH.
{examples}
{repair}
Question: {question}{mentions}
Reply with JSON: {{"cypher": "...", "reason": "..."}}"""

REPAIR = """
Your previous query failed:
{cypher}
The database said: {error}
Write a corrected query.{hint}
"""

CHECK_REPAIR = """
Your previous query ran, but it does not answer the question:
{cypher}
{error}
Write a corrected query.
"""

REVERSED_NOTE = (
    "(The query as written found nothing; these rows come from the same query with its relationship directions "
    "reversed, which may answer a different question.)"
)

# what a second try did (QueryLoop.rework)
CHAIN_WRITTEN, ARROWS_REVERSED, ENTITIES_RETURNED = "chain", "arrows reversed", "entities for groups"

CHAIN_NOTE = (
    "(The query written for this question followed fewer relationships than the question names; these rows come "
    "from the one chain of them that the graph has from the named entity, shown as the Cypher.)"
)

ENTITIES_NOTE = (
    "(The query written for this question returned the group of each entity where the question asks about the "
    "entities; these rows are the entities themselves, from the same match, shown as the Cypher.)"
)

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
    arrows_reversed: bool = Field(default=False, description="it found nothing; with its arrows reversed it did")
    chain_written: bool = Field(
        default=False,
        description="the LLM's query followed fewer relationships than the question names; the rows come from "
        "the one chain of them the graph has from the named entity",
    )
    entities_returned: bool = Field(
        default=False,
        description="the LLM's query returned the entities' group property after being told the question asks "
        "about the entities; the rows are their names (or count) from the same match",
    )
    complaint: str | None = Field(default=None, description="why the first query was sent back, if it was")


@dataclass(frozen=True)
class _Form:
    """How queries over ``kg`` are written: the node label, the name property, the relationship pattern, and
    the relationship property that names a relationship's kind (``relname``; Ladybug's type column when the
    graph has several types; None when the kind is the relationship type itself) with its values."""

    label: str
    name: str
    rel: str  # the relationship as written in a pattern: ``Rel`` (Ladybug's table, or the one type) or ""
    kind: str | None
    kinds: tuple[str, ...]
    node_class: str | None  # a small text node property (``stygrp``): its values name groups of entities

    def pattern(self, var: str = "r") -> str:
        return f"[{var}:{self.rel}]" if self.rel else f"[{var}]"

    def where(self, var: str, kind: str) -> str:
        return f"{var}.{self.kind} = {kind!r}" if self.kind else ""

    def step(self, var: str, kind: str) -> str:
        """One relationship of ``kind`` as written in a pattern (the kind in the type when it is the type)."""
        return f"[{var}:{self.rel}]" if self.kind or self.rel else f"[{var}:{kind}]"


def _values(kg: KnowledgeGraph, query: str, max_values: int) -> list[str] | None:
    values = [row["v"] for row in kg.dialect.run(kg.store, query) if row["v"] is not None]
    return sorted(map(str, values)) if len(values) <= max_values else None


def _form(kg: KnowledgeGraph, max_values: int = 60) -> tuple[_Form, dict[str, list[str]], dict[str, list[str]]]:
    """The graph's :class:`_Form` and the values of its small text relationship and node properties."""
    m, dialect = kg.manifest, kg.dialect
    node = quote_identifier(m.node_label)
    one_type = len(m.rel_types) == 1  # then the type tells nothing: not offered as something to filter on
    if dialect.engine == "ladybug":  # the type column is read too: LlamaIndex's store keeps every type in one table
        rel_props = {m.type_column: "string", **m.rel_properties}
        rel, pattern = m.rel_table, f"(a:{node})-[r:{quote_identifier(m.rel_table)}]->(b:{node})"
    else:
        rel_props = dict(m.rel_properties)
        rel = m.rel_types[0] if one_type else ""
        pattern = f"(a:{node})-[r{':' + quote_identifier(rel) if rel else ''}]->(b:{node})"
    rel_values: dict[str, list[str]] = {}
    for prop, kind in rel_props.items():
        if kind == "string":
            query = f"MATCH {pattern} RETURN DISTINCT r.{quote_identifier(prop)} AS v LIMIT {max_values + 1}"
            values = _values(kg, query, max_values)
            if values is not None and (len(values) > 1 or prop in m.rel_properties):  # one type: nothing to tell
                rel_values[prop] = values
    node_values: dict[str, list[str]] = {}
    for prop, kind in m.node_properties.items():
        if kind == "string" and prop != m.name_property:
            query = f"MATCH (n:{node}) RETURN DISTINCT n.{quote_identifier(prop)} AS v LIMIT {max_values + 1}"
            values = _values(kg, query, max_values)
            if values is not None:
                node_values[prop] = values
    varied = {p: v for p, v in rel_values.items() if len(v) > 1}
    kind_prop = max(varied, key=lambda p: len(varied[p])) if varied and (one_type or rel) else None
    kinds = tuple(varied[kind_prop]) if kind_prop else tuple(m.rel_types)
    node_class = next((p for p, v in node_values.items() if len(v) > 1), None)
    form = _Form(m.node_label, m.name_property, rel, kind_prop, kinds, node_class)
    return form, rel_values, node_values


def describe_graph(kg: KnowledgeGraph, max_values: int = 60) -> str:
    """The graph as the LLM needs it to write Cypher for ``kg``'s engine: node label and properties,
    relationships, and the values of text properties with at most ``max_values`` values."""
    return _describe(kg, *_form(kg, max_values))


def _describe(
    kg: KnowledgeGraph, form: _Form, rel_values: dict[str, list[str]], node_values: dict[str, list[str]]
) -> str:
    m = kg.manifest
    label, rel_props = m.node_label, dict(m.rel_properties)
    node_props = {m.id_property: "string", m.name_property: "string", **m.node_properties}
    lines = [
        f"Nodes: (:{label} {{{', '.join(f'{p}: {t}' for p, t in node_props.items())}}}); "
        f"{m.id_property} is the unique id, {m.name_property} the name. Every node is one entity of the graph: "
        "a question's word for the things it asks about ('types', 'kinds', 'entities', 'things', 'members', "
        "'parts') means these nodes, with no property filter"
        + (
            f" unless the question names a value of n.{form.node_class} (then n.{form.node_class} = that value)."
            if form.node_class
            else "."
        )
    ]
    if kg.dialect.engine == "ladybug" and (len(m.rel_types) > 1 or form.kind == m.type_column):
        rel_props = {m.type_column: "string", **rel_props}
    shown = f"(:{label})-{form.pattern()}->(:{label})"
    if form.kind:
        types = (
            f"; the kind of a relationship is r.{form.kind}, a property (not a relationship type): "
            f"write -{form.pattern()}-> and filter r.{form.kind} = '...'"
        )
    else:
        types = f"; the relationship type is one of {list(m.rel_types)}" if len(m.rel_types) > 1 else ""
    lines.append(f"Relationships: {shown} with properties {rel_props}{types}.")
    lines += [f"r.{prop} values: {', '.join(values)}" for prop, values in rel_values.items()]
    lines += [f"n.{prop} values: {', '.join(values)}" for prop, values in node_values.items()]
    name = quote_identifier(m.name_property)
    names = kg.dialect.run(  # ordered: a parallel import stores nodes in no fixed order, and the prompt must not vary
        kg.store, f"MATCH (n:{quote_identifier(label)}) RETURN n.{name} AS v ORDER BY v LIMIT 8"
    )
    lines.append(f"Some {m.name_property} values: {', '.join(repr(r['v']) for r in names)}")
    lines.append(f"Example relationships: {_example_relationships(kg, form)}")
    return "\n".join(lines)


def _triple(form: _Form, row: dict[str, Any]) -> str:
    """One stored relationship written with its names, and read out as a sentence."""
    if form.kind:
        kind, verb = f" {{{form.kind}: {row['k']!r}}}", row["k"]
    else:  # the kind is the type, or (one type, no kind property) there is none to show
        kind, verb = (f":{row['k']}", row["k"]) if row["k"] else ("", "is related to")
    return f"({{{form.name}: {row['source']!r}}})-[r{kind}]->({{{form.name}: {row['target']!r}}}) means {row['source']} {verb} {row['target']}"


def _kind_column(kg: KnowledgeGraph, form: _Form) -> str:
    return f"r.{quote_identifier(form.kind)}" if form.kind else ("type(r)" if kg.dialect.engine != "ladybug" else "''")


def _named_relationships(
    kg: KnowledgeGraph, form: _Form, where: str = "", params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """At most 200 relationships ``(a)-[r]->(b)`` (filtered by ``where``) as rows of their end names ``source``, ``target``
    and kind ``k``, in name order: a parallel import stores them in no fixed order, and a prompt must not vary."""
    node, name = quote_identifier(form.label), quote_identifier(form.name)
    query = (
        f"MATCH (a:{node})-{form.pattern()}->(b:{node}) {where} "
        f"RETURN a.{name} AS source, b.{name} AS target, {_kind_column(kg, form)} AS k ORDER BY source, target, k LIMIT 200"
    )
    return kg.dialect.run(kg.store, query, params or {})


def _example_relationships(kg: KnowledgeGraph, form: _Form, count: int = 3) -> str:
    """A few relationships of different kinds, written with their names: they show the direction."""
    shown: dict[Any, str] = {}
    for row in _named_relationships(kg, form):
        if row["k"] not in shown and len(shown) < count:
            shown[row["k"]] = _triple(form, row)
    return "; ".join(shown.values())


# words a question uses for a kind whose name it does not say: "a member of" a family is stored as ``isa``
_KIND_WORDS = {"isa": ("member", "belong")}
_KIND_SUFFIX = re.compile(r"(?:ing|ed|es|s|e)$")
_INFLECTION = ("es", "ed", "s", "d")


def _squeeze(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.lower())


@functools.cache
def _squeezed_kinds(kinds: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Each kind with its name squeezed (``part_of`` -> ``partof``), shortest first (cached per set of kinds)."""
    return tuple((kind, _squeeze(kind)) for kind in sorted(kinds, key=len))


def _kind_of_word(form: _Form, word: str, after: str = "") -> str | None:
    """The relationship kind ``word`` names, with ``after`` the question's text that follows it, or None.

    A kind's own name comes first ("partof"), then a name the word starts with its stem ("caused" -> ``causes``,
    "parts of" -> ``partof``; stems of at least 4 letters): the rest of the name (after an ending such as
    "s") must be what follows in the question, so "processes" alone is not ``process_of`` and "take part in" is
    not ``part_of``. Last, the few words of ``_KIND_WORDS`` ("members" -> ``isa``)."""
    squeezed, stem, following = _squeeze(word), _KIND_SUFFIX.sub("", _squeeze(word)), _squeeze(after)
    names = _squeezed_kinds(form.kinds)
    for kind, whole in names:
        if squeezed == whole:
            return kind
    for kind, whole in names:
        for head in dict.fromkeys((squeezed, squeezed.removesuffix("s"), stem)):
            if len(head) < 4 or not whole.startswith(head):
                continue
            rest = whole[len(head) :]
            rests = [rest, *(rest[len(e) :] for e in _INFLECTION if rest.startswith(e))]
            if any(not r or following.startswith(r) for r in rests):
                return kind
    for kind, _ in names:
        if any(stem.startswith(w) for w in _KIND_WORDS.get(kind.lower(), ())):
            return kind
    return None


def _kind_mentions(form: _Form, question: str, spans: Sequence[tuple[int, int]] = ()) -> list[str]:
    """The relationship kinds the question goes through, one per mention, ordered by their distance to the named
    entities (at ``spans``), the nearest first: a guess at the order a path from them meets the kinds ("which
    drugs treat what virus causes" -> causes, treats). Words inside the entities' names are not read, and a kind
    in parentheses ("members (isa)") is not counted again when the question also says it in words."""
    text = question
    for start, end in spans:  # blank the names out ("body part" names no ``part_of``), keeping the offsets
        text = text[:start] + " " * (end - start) + text[end:]
    text = text.lower()
    brackets = [m.span() for m in re.finditer(r"\([^)]*\)", text)]
    found: list[tuple[str, int, bool]] = []
    for match in re.finditer(r"[a-z][a-z_\-]*", text):
        kind = _kind_of_word(form, match.group(), text[match.end() :])
        if kind is not None:
            found.append((kind, match.start(), any(a <= match.start() < b for a, b in brackets)))
    said = {kind for kind, _, inside in found if not inside}
    kept = [(kind, at) for kind, at, inside in found if not inside or kind not in said]
    centres = [(start + end) / 2 for start, end in spans]
    if centres:
        kept.sort(key=lambda mention: min(abs(mention[1] - c) for c in centres))
    return [kind for kind, _ in kept]


def _mentions(kg: KnowledgeGraph, form: _Form, found: dict[str, str], named: set[str], per_entity: int = 4) -> str:
    """The entities the question names (``found``, id -> name), as the graph writes them, with a few of their
    stored relationships (only of the kinds the question names, ``named``, if it names any): they show which
    way each relationship points."""
    if not found:
        return ""
    cid = quote_identifier(kg.manifest.id_property)
    lines = [f"\nEntities of the graph named in the question ({form.name}): {', '.join(map(repr, found.values()))}"]
    shown: list[str] = []
    for entity in list(found)[:3]:
        rows = []
        for end in ("a", "b"):
            rows += _named_relationships(kg, form, f"WHERE {end}.{cid} = $cid", {"cid": entity})
        # one of each kind per direction (only the kinds the question names, if any), the two directions in turn
        seen: set[tuple[Any, bool]] = set()
        ways: dict[bool, list[str]] = {True: [], False: []}
        for row in rows:
            key = (row["k"], row["source"] == found[entity])
            if key not in seen:
                seen.add(key)
                if not named or row["k"] in named:
                    ways[key[1]].append(_triple(form, row))
        picked = [t for pair in zip_longest(ways[True], ways[False]) for t in pair if t is not None]
        shown += [t for t in picked[:per_entity] if t not in shown]
    if shown:
        lines.append("Some of their relationships, as stored: " + "; ".join(shown))
    return "\n".join(lines)


def _examples(form: _Form) -> str:
    """Worked examples in the graph's form over a made-up graph of rivers and places (never this graph's names)."""
    node, name = form.label, form.name

    def rel(var: str, kind: str) -> tuple[str, str]:
        return form.step(var, kind), form.where(var, kind)

    def where(*conditions: str) -> str:
        kept = [c for c in conditions if c]
        return f" WHERE {' AND '.join(kept)}" if kept else ""

    flows, flows_w = rel("r", "flows_through")
    trib, trib_w = rel("r", "tributary_of")
    t1, t1_w = rel("r1", "tributary_of")
    f2, f2_w = rel("r2", "flows_through")
    rhine, aare, bern = (f"{{{name}: {n!r}}}" for n in ("Rhine", "Aare", "Bern"))
    lines = [
        "Examples with a made-up graph of the same form (rivers and places; its names and kinds are not this graph's):",
        f'"Which rivers are tributaries of Rhine?" (stored as: Aare tributary_of Rhine) -> '
        f"MATCH (x:{node})-{trib}->(a:{node} {rhine}){where(trib_w)} RETURN DISTINCT x.{name} AS name",
        f'"How many places does Rhine flow through?" -> '
        f"MATCH (a:{node} {rhine})-{flows}->(x:{node}){where(flows_w)} RETURN count(DISTINCT x) AS n",
        f'"Does Aare flow through Bern?" -> '
        f"MATCH (a:{node} {aare})-{flows}->(b:{node} {bern}){where(flows_w)} RETURN count(*) > 0 AS answer",
        f'"Which places do the tributaries of Rhine flow through?" -> as_stored: ?m tributary_of Rhine; '
        f"?m flows_through ?x; MATCH (m:{node})-{t1}->(a:{node} {rhine}), (m)-{f2}->(x:{node})"
        f"{where(t1_w, f2_w)} RETURN DISTINCT x.{name} AS name",
    ]
    if form.node_class:
        lines.append(
            f'"Which places are cities?" -> '
            f"MATCH (x:{node}) WHERE x.{form.node_class} = 'city' RETURN x.{name} AS name"
        )
    return "\n".join(lines)


_ARROW = re.compile(r"<-(\[[^\]]*\])?-(?!>)|-(\[[^\]]*\])?->")
_VALUE = r"""(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")"""  # a quoted string, either quote
_QUOTED = re.compile(rf"{_VALUE}|`[^`]*`")


def _reverse_arrows(cypher: str, which: Collection[int] | None = None) -> str:
    """Relationship arrows (``-[r]->``, ``<-[r]-``, ``-->``, ``<--``) turned round: every one, or those at the
    positions ``which`` (0 = the first arrow); text in quotes is kept."""
    quoted = [m.span() for m in _QUOTED.finditer(cypher)]
    seen = -1

    def turn(match: re.Match[str]) -> str:
        nonlocal seen
        if any(a <= match.start() < b for a, b in quoted):
            return match.group()
        seen += 1
        if which is not None and seen not in which:
            return match.group()
        inner = match.group(1) or match.group(2) or ""
        return f"-{inner}->" if match.group().startswith("<") else f"<-{inner}-"

    return _ARROW.sub(turn, cypher)


def _found_nothing(rows: list[dict[str, Any]]) -> bool:
    """No rows, or one row of counts that are all 0 (a boolean answer is an answer: never read as nothing)."""
    if not rows:
        return True
    values = list(rows[0].values())
    counts = all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values)
    return len(rows) == 1 and bool(values) and counts and not any(values)


def _run_guarded(
    kg: KnowledgeGraph,
    guard: Callable[[str], str],
    query: str,
    timeout: float,
    params: dict[str, Any] | None = None,
) -> tuple[str, list[dict[str, Any]]] | None:
    """``query`` through ``guard``, run read-only with ``params`` within ``timeout`` seconds: (the query as run,
    its rows), or None when the guard refuses it or the database fails or runs out of time."""
    try:
        guarded = guard(query)
        return guarded, kg.dialect.run_read_only(kg.store, guarded, timeout, params)
    except (UnsafeQueryError, GraphStoreError, QueryTimeoutError):
        return None


def _reversed_if_empty(
    kg: KnowledgeGraph, cypher: str, rows: list[dict[str, Any]], guard: Callable[[str], str], timeout: float
) -> tuple[str, list[dict[str, Any]]] | None:
    """When ``cypher`` found nothing, the same query with relationship arrows reversed, if that finds something
    (small models often read "the members of X" as ``(X)-[:isa]->(m)``); else None. A chain of 2-3 arrows
    tries one arrow at a time first (a path usually goes wrong at one step), then more."""
    if not _found_nothing(rows):
        return None
    arrows = sum(1 for m in _ARROW.finditer(_QUOTED.sub("''", cypher)))
    subsets = [set(c) for size in range(1, arrows) for c in combinations(range(arrows), size)] if arrows <= 3 else []
    for flipped in dict.fromkeys(_reverse_arrows(cypher, which) for which in [*subsets, None]):
        if flipped == cypher:
            continue
        again = _run_guarded(kg, guard, flipped, timeout)
        if again is not None and not _found_nothing(again[1]):
            return again
    return None


_REL_NAMED_AS_TYPE = re.compile(r"\[\s*(\w*)\s*:\s*`?([A-Za-z_][\w\-]*)`?\s*\]")


def _kinds_as_properties(form: _Form, cypher: str) -> str:
    """``-[r:isa]->`` where ``isa`` is a value of the kind property, not a relationship type, written as
    ``-[r:Rel {relname: 'isa'}]->`` (the form the graph stores); anything else is left as it is."""
    if not form.kind:
        return cypher
    kinds = {k.lower(): k for k in form.kinds}

    def fix(match: re.Match[str]) -> str:
        var, typ = match.groups()
        if typ == form.rel or typ.lower() not in kinds:
            return match.group()
        return f"[{var}:{form.rel} {{{form.kind}: {kinds[typ.lower()]!r}}}]"

    return _REL_NAMED_AS_TYPE.sub(fix, cypher)


_COUNT_QUESTION = re.compile(r"\bhow many\b|\bnumber of\b|^\s*count\b|\bcount (?:the|of)\b", re.I)
_YES_NO_QUESTION = re.compile(r"^\s*(is|are|does|do|did|can|could|has|have|had|was|were|will|would|should)\b", re.I)
_GROUP_WORD = re.compile(r"\b(groups?|categor(?:y|ies))\b", re.I)
_COUNTING = re.compile(r"\b(count|size)\s*\(", re.I)


def _return_clause(cypher: str) -> str:
    """What the query returns: the text after its last RETURN, without ORDER BY / SKIP / LIMIT."""
    tail = re.split(r"\bRETURN\b", cypher, flags=re.I)[-1]
    return re.split(r"\b(?:ORDER\s+BY|SKIP|LIMIT)\b", tail, flags=re.I)[0]


def _returns_groups(form: _Form, question: str, returned: str) -> bool:
    """The RETURN clause ``returned`` gives the entities' group property (``stygrp``) and not their names, where
    the question asks about the entities (it names neither that property nor groups, and is not yes/no)."""
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
    """How the check's reason about a returned group property opens (the second try looks for it)."""
    return f"It returns {form.node_class} values (the group each entity belongs to)"


def _entities(form: _Form, question: str, var: str) -> str:
    """What to return of the entities at ``var``: their names, or their count for a "how many" question."""
    if _COUNT_QUESTION.search(question):
        return f"count(DISTINCT {var}) AS n"
    return f"DISTINCT {var}.{quote_identifier(form.name)} AS name"


def _entities_for_groups(form: _Form, question: str, cypher: str) -> str | None:
    """``cypher`` with its RETURN asking for the entities (:func:`_entities`) where it returns only their group
    property (:func:`_returns_groups`): ``[DISTINCT] v.group [AS x]`` or ``count([DISTINCT] v.group) [AS x]``,
    ``v`` a node the query does not match by name ("What type is virus?" asks for virus's group). Else None: any
    other RETURN (an aggregate, a second column), or a UNION."""
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


def _matched_values(prop: str, cypher: str) -> list[str]:
    """The values the query matches ``prop`` against (``{prop: '...'}``, ``x.prop = '...'``,
    ``x.prop IN ['...', ...]``, either quote), unescaped."""
    single = rf"(?:\b{re.escape(prop)}\s*:|\.\s*{re.escape(prop)}\s*=)\s*{_VALUE}"
    pairs = re.findall(single, cypher)
    for listed in re.findall(rf"\.\s*{re.escape(prop)}\s+IN\s*\[([^\]]*)\]", cypher, re.I):
        pairs += re.findall(_VALUE, listed)
    return [re.sub(r"\\(.)", r"\1", a or b) for a, b in pairs]


def _named_group(group: str, groups: list[str], question: str) -> str | None:
    """The value of the group property ``group`` that the question names with the property's own name
    ("in the stygrp activity", "whose stygrp is protein"), or None."""
    values = {g.lower(): g for g in groups}
    said = re.search(rf"\b{re.escape(group)}\s+(?:is\s+|=\s*|of\s+)?['\"]?([\w\-]+)", question, re.I)
    return values.get(said.group(1).lower()) if said else None


_RELATIONSHIP = re.compile(r"-\[([^\]]*)\]-|<--|-->|\)--\(")
_VARIABLE_LENGTH = re.compile(r"\*\s*(\d*)\s*(?:\.\.\s*(\d*))?")


def _hops(cypher: str) -> int:
    """How many relationships the longest part of a query (split at UNION) follows: ``[*1..2]`` counts 2, ``[*1]``
    1, an open length (``[*]``, ``[*2..]``) at least 2."""

    def length(bracket: str) -> int:
        star = _VARIABLE_LENGTH.search(bracket)
        if star is None:
            return 1
        low, high = star.groups()
        if high is None:  # [*n] is exactly n; [*] is open
            return int(low) if low else 2
        return int(high) if high else max(int(low or 1), 2)

    def hops(part: str) -> int:
        return sum(length(match.group(1) or "") for match in _RELATIONSHIP.finditer(part))

    return max(hops(part) for part in re.split(r"\bUNION\b", _QUOTED.sub("''", cypher), flags=re.I))


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


def _chain_options(
    kg: KnowledgeGraph, form: _Form, start: tuple[str, str], steps: Sequence[str], timeout: float = 10.0
) -> list[_Chain]:
    """The chains of ``steps`` (relationship kinds, in order) from the entity ``start`` (id, name), one per
    choice of arrow directions, that find something in the graph other than ``start`` itself (each counted with
    a parameterised read-only query within ``timeout`` seconds; a choice the database cannot count in time is
    left out). A chain that only leads back, such as down a hierarchy and up again
    (``(a)<-[:isa]-()-[:isa]->(a)``), finds nothing new and is not offered."""
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


def _chain_question(steps: Sequence[str]) -> bool:
    """The question goes through 2-3 relationship kinds: a chain worth checking (and listing) for."""
    return 2 <= len(steps) <= 3


def _too_few_hops(steps: Sequence[str], hops: int) -> bool:
    """A query that follows ``hops`` relationships (at least one) falls short of a chain question's kinds."""
    return _chain_question(steps) and 0 < hops < len(steps)


def _only_chain(
    kg: KnowledgeGraph,
    form: _Form,
    question: str,
    cypher: str,
    steps: Sequence[str],
    chains: Callable[[], list[_Chain]],
    guard: Callable[[str], str],
    timeout: float,
) -> tuple[str, list[dict[str, Any]]] | None:
    """When the corrected query still follows fewer relationships than the question names and the graph has
    exactly one chain of them from the named entity (in the guessed order of the kinds or the reverse order),
    that chain's end (its count, for a "how many" question) as (the query written out, its rows); else None.
    Never for a yes/no question."""
    if not _too_few_hops(steps, _hops(cypher)) or _YES_NO_QUESTION.search(question):
        return None
    options = chains()
    if len(options) != 1:
        return None
    chain = options[0]
    # the guard puts the row limit on
    ran = _run_guarded(
        kg, guard, f"{chain.match} RETURN {_entities(form, question, chain.last)}", timeout, chain.params
    )
    if ran is None:
        return None
    query, rows = ran
    shown = query.replace(chain.match, chain.shown)
    return (shown, rows) if rows else None


def _complaint(
    form: _Form,
    question: str,
    named: dict[str, str],
    groups: list[str],
    cypher: str,
    steps: Sequence[str] = (),
    chains: Callable[[], list[_Chain]] | None = None,
) -> str | None:
    """Why a query that ran does not fit ``question`` (every reason found, one sentence each), or None: fewer
    relationships than the 2-3 ``steps`` (the kinds the question goes through, nearest the named entity first;
    ``chains()`` gives the ways to write them that find something, asked only then), a count question answered
    without a count, a list of the entities' groups (``stygrp``, whose values are ``groups``) where the entities
    were asked for, a group value that no entity has, a group value named as such but not filtered on (or matched
    as a name), a name the question does not name, or one name given to two nodes (outside a UNION). Only the
    shape is checked, never the answer; a yes/no question is never told to count."""
    reasons = []
    yes_no = _YES_NO_QUESTION.search(question) is not None

    def listed() -> str:  # the chains, asked for only when a reason needs them
        options = chains() if chains is not None and _chain_question(steps) else []
        return "; ".join(f"{chain.shown} (ends at {chain.ends} entities)" for chain in options)

    hops = _hops(cypher)
    if _too_few_hops(steps, hops):
        start = next(iter(named.values()), "the named entity")
        said = (
            f"It follows {hops} relationship{'s' if hops > 1 else ''}, but the question goes through "
            f"{len(steps)}: from {start!r} {', then '.join(steps)}, with an unnamed entity in between"
        )
        ways = listed()
        if ways:
            returned = "count(*) > 0 AS answer" if yes_no else f"what it asks about the last node (n{len(steps)})"
            reasons.append(
                f"{said}. These chains find something in the graph: {ways}. Use the one whose arrows read like "
                f"the question, and return {returned}."
            )
        else:
            chain = ", ".join(f"(n{i})-{form.step(f'r{i + 1}', k)}->(n{i + 1})" for i, k in enumerate(steps))
            kinds = " AND ".join(filter(None, (form.where(f"r{i + 1}", k) for i, k in enumerate(steps))))
            reasons.append(
                f"{said}: {chain}{f' WHERE {kinds}' if kinds else ''}, where n0 is {start!r}; turn an arrow round "
                f"(<-[r]-) where the question reads that relationship the other way ('x {steps[-1]} n1' is "
                "(n1)<-[r]-(x))."
            )
    returned = _return_clause(cypher)
    counts = not yes_no and _COUNT_QUESTION.search(question) is not None
    if counts and not _COUNTING.search(cypher):
        reasons.append("The question asks how many: return count(DISTINCT x) AS n of the entities counted, not a list.")
    group, name = form.node_class, form.name
    if _returns_groups(form, question, returned):
        what = "count the entities, count(DISTINCT x)" if counts else f"return their names, x.{name}"
        reasons.append(f"{_groups_returned(form)}, but the question asks about the entities themselves: {what}.")
    known = {g.lower() for g in groups}
    unknown = [v for v in (_matched_values(group, cypher) if group else []) if v.lower() not in known]
    if known and unknown:
        reasons.append(
            f"No entity has {group} = {unknown[0]!r} (its values: {', '.join(groups)}). Leave the {group} filter "
            "out unless the question names one of these values."
        )
    in_query = _matched_values(name, cypher)
    value = _named_group(group, groups, question) if group else None
    as_name = value is not None and value.lower() in {n.lower() for n in in_query}
    if group and value is not None and (as_name or value.lower() not in map(str.lower, _matched_values(group, cypher))):
        reasons.append(
            f"The question asks about the entities whose {group} is {value!r}: filter x.{group} = {value!r}"
            + (f", and match no entity named {value!r}." if as_name else ".")
        )
    asked = {n.lower() for n in named.values()}
    strays = [n for n in in_query if n.lower() not in asked]
    if asked and strays:
        reasons.append(
            f"It matches {strays[0]!r}, which the question does not name. Give names only to the entities the "
            f"question names ({', '.join(map(repr, named.values()))}) and leave every other node unnamed."
        )
    union = re.search(r"\bUNION\b", cypher, re.I) is not None  # each part may name the same entity
    repeated = None if union else next((n for n in in_query if in_query.count(n) > 1), None)
    if repeated is not None:
        ways = listed()
        ways = (
            f"these chains of the question's relationships find something in the graph: {ways}"
            if ways
            else f"(x)-[r1]->(m), (m)-[r2]->(a {{{name}: {repeated!r}}}) with the directions the question needs"
        )
        reasons.append(f"It gives {repeated!r} to two nodes. An entity in between is unnamed: {ways}.")
    return " ".join(reasons) or None


def _read(reply: _CypherReply) -> tuple[str, str]:
    return reply.cypher.strip(), reply.reason


def _answer(loop: QueryLoop) -> CypherAnswer:
    rows = [] if loop.refused is not None or loop.result is None else json.loads(json.dumps(loop.result, default=str))
    return CypherAnswer(
        question=loop.question,
        cypher=loop.query,
        rows=rows,
        refused=loop.refused,
        repaired=loop.repaired,
        arrows_reversed=loop.rework == ARROWS_REVERSED,
        chain_written=loop.rework == CHAIN_WRITTEN,
        entities_returned=loop.rework == ENTITIES_RETURNED,
        complaint=loop.complaint,
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
        kg = self.kg
        form, rel_values, node_values = _form(kg)  # its queries run once per question
        found = kg.entity_matcher().find(question)  # the graph's names and synonyms in the question
        named = {m.cid: m.name for m in found}
        steps = _kind_mentions(form, question, [(m.start, m.end) for m in found])
        start = next(iter(named.items())) if len(named) == 1 else None  # a chain from one entity: its ways

        @functools.cache  # read from the graph once per order of the kinds, when first asked
        def chains(order: tuple[str, ...]) -> list[_Chain]:
            return _chain_options(kg, form, start, order, self.timeout) if start is not None else []

        def either_order() -> list[_Chain]:  # the order of the kinds is a guess from the question's words
            backwards = tuple(reversed(steps))
            return chains(tuple(steps)) + (chains(backwards) if backwards != tuple(steps) else [])

        schema, mentions = _describe(kg, form, rel_values, node_values), _mentions(kg, form, named, set(steps))
        examples = _examples(form)
        hint = (
            f"\nThe kinds of relationships are values of r.{form.kind}: write -{form.pattern()}-> with "
            f"r.{form.kind} = '...', never -[r:{form.kinds[0]}]->."
            if form.kind and form.kinds
            else ""
        )

        def prompt(repair: str) -> str:
            return CYPHER_PROMPT.format(
                engine=kg.dialect.engine,
                schema=schema,
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
            return read_only_cypher(_kinds_as_properties(form, cypher), max_rows=self.max_rows)

        def second_try(cypher: str, rows: Any) -> tuple[str, Any, str] | None:
            shown = loop.complaint or ""
            # the LLM was shown the chains and still wrote too few relationships
            if shown and any(chain.shown in shown for chain in chains(tuple(steps))):
                chained = _only_chain(kg, form, question, cypher, steps, either_order, guard, self.timeout)
                if chained is not None:
                    return (*chained, CHAIN_WRITTEN)
            # the LLM was told to return the entities and still returned their groups
            rewritten = _entities_for_groups(form, question, cypher) if _groups_returned(form) in shown else None
            entities = None if rewritten is None else _run_guarded(kg, guard, rewritten, self.timeout)
            if entities is not None and not _found_nothing(entities[1]):
                return (*entities, ENTITIES_RETURNED)
            base, base_rows = entities or (cypher, rows)  # the entities' query, if it ran, is what gets reversed
            reversed_ = _reversed_if_empty(kg, base, base_rows, guard, self.timeout)
            return None if reversed_ is None else (*reversed_, ARROWS_REVERSED)

        loop = QueryLoop(
            question,
            noun="query",
            language="Cypher",
            source="graph",
            prompt=prompt,
            repair=repair,
            guard=guard,
            execute=lambda cypher: kg.dialect.run_read_only(kg.store, cypher, self.timeout),
            retry_on=(GraphStoreError, QueryTimeoutError),
            second_try=second_try,
            check=lambda cypher, rows: _complaint(
                form,
                question,
                named,
                node_values.get(form.node_class or "", []),
                cypher,
                steps,
                lambda: chains(tuple(steps)),
            ),
        )
        return loop

    def _answer_prompt(self, answer: CypherAnswer) -> str | None:
        if answer.refused or not self.synthesize_response:
            return None
        rows = json.dumps(answer.rows[:30], ensure_ascii=False)
        return ANSWER_PROMPT.format(question=answer.question, cypher=answer.cypher, rows=rows)

    @staticmethod
    def _response(answer: CypherAnswer, text: str | None) -> Response:
        if text is None:
            text = f"I could not answer this from the graph: {answer.refused}" if answer.refused else str(answer.rows)
        if answer.arrows_reversed:  # the rows may answer the question turned round: the reader must know
            text = f"{text.strip()} {REVERSED_NOTE}"
        if answer.chain_written:
            text = f"{text.strip()} {CHAIN_NOTE}"
        if answer.entities_returned:
            text = f"{text.strip()} {ENTITIES_NOTE}"
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
