"""The graph as text-to-Cypher sees it: how queries over it are written (:class:`_Form`), the description the LLM
is shown (:func:`describe_graph`), read once per graph and cached (:class:`DescriptionCache`), and the stored
relationships of the entities a question names (:func:`_mentions`).

Example:

```python
describe_graph(KnowledgeGraph.open("ladybug:///data/kg.lbug"))   # 'Nodes: (:Ent {...}); ...'
```
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

from llama_index_kgplus.graph_stores._dialect_base import quote_identifier
from llama_index_kgplus.kg._graph import KnowledgeGraph


@dataclass(frozen=True)
class _Form:
    """How queries over ``kg`` are written: the node label, the name property, the relationship pattern, and
    the relationship property that names a relationship's kind (e.g. ``predicate``; Ladybug's type column when the
    graph has several types; None when the kind is the relationship type itself) with its values."""

    label: str
    name: str
    rel: str  # the relationship as written in a pattern: ``Rel`` (Ladybug's table, or the one type) or ""
    kind: str | None
    kinds: tuple[str, ...]
    node_class: str | None  # a small text node property (e.g. ``category``): its values name groups of entities

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
    return GraphDescription.read(kg, max_values).text


@dataclass(frozen=True)
class GraphDescription:
    """What is read from the graph once for all its questions: its :class:`_Form`, the values of its small text
    relationship and node properties, and the description shown to the LLM (``text``)."""

    form: _Form
    rel_values: dict[str, list[str]]
    node_values: dict[str, list[str]]
    text: str

    @classmethod
    def read(cls, kg: KnowledgeGraph, max_values: int = 60) -> GraphDescription:
        """Read from the store: a few DISTINCT queries, the first names in order and a few ordered relationships."""
        form, rel_values, node_values = _form(kg, max_values)
        return cls(form, rel_values, node_values, _describe(kg, form, rel_values, node_values))

    @property
    def groups(self) -> list[str]:
        """The values of the group property (``form.node_class``), or [] when the graph has none."""
        return self.node_values.get(self.form.node_class or "", [])


def _graph_key(kg: KnowledgeGraph) -> tuple[Any, ...]:
    """What identifies the content of ``kg``'s graph: the import id, which every import writes anew, or for a
    graph LlamaIndex's store wrote (no import id: it changes under us) its node and relationship counts."""
    manifest = kg.manifest
    if manifest.import_id:
        return (manifest.node_label, manifest.import_id)
    node = quote_identifier(manifest.node_label)
    rows = kg.dialect.run(kg.store, f"MATCH (n:{node}) RETURN count(n) AS n")
    rels = kg.dialect.run(kg.store, f"MATCH (:{node})-[r]->(:{node}) RETURN count(r) AS n")
    return (manifest.node_label, "", rows[0]["n"] if rows else 0, rels[0]["n"] if rels else 0)


class DescriptionCache:
    """The :class:`GraphDescription` of a graph, read once and kept while the graph is the same one (the key of
    :func:`_graph_key`; a re-import through another handle is seen after ``kg.refresh()``, as for the entity
    dictionary); :meth:`clear` forgets it. A graph LlamaIndex's store wrote is re-read when its counts change,
    not when a property changes in place: clear the cache then."""

    def __init__(self, max_values: int = 60) -> None:
        self.max_values = max_values
        self._key: tuple[Any, ...] | None = None
        self._description: GraphDescription | None = None

    def get(self, kg: KnowledgeGraph) -> GraphDescription:
        """The description of ``kg``: from memory when its key has not changed, else read from the store."""
        key = (id(kg), *_graph_key(kg))
        if self._description is None or key != self._key:
            self._key, self._description = key, GraphDescription.read(kg, self.max_values)
        return self._description

    def clear(self) -> None:
        """Forget the description: the next question reads it from the store again."""
        self._key = self._description = None


def _describe(
    kg: KnowledgeGraph, form: _Form, rel_values: dict[str, list[str]], node_values: dict[str, list[str]]
) -> str:
    m = kg.manifest
    label, rel_props = m.node_label, dict(m.rel_properties)
    node_props = {m.id_property: "string", m.name_property: "string", **m.node_properties}
    lines = [
        f"Nodes: (:{label} {{{', '.join(f'{p}: {t}' for p, t in node_props.items())}}}); "
        f"{m.id_property} is the unique id, {m.name_property} the name. Every node is one entity of the graph: "
        "a question's word for the things it asks about ('types', 'kinds', 'entities', 'things') means these "
        "nodes, with no property filter"
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
