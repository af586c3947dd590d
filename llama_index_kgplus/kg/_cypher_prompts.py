"""The texts of text-to-Cypher: the prompt that asks for a query, the two repair prompts, the worked examples
(over a made-up graph, written in the graph's own form), the notes an answer gets when a repair policy changed
its rows, and the answer prompt.

Example:

```python
CYPHER_PROMPT.format(engine="ladybug", schema=describe_graph(kg), examples=_examples(form), repair="",
                     question="How many rivers flow through Bern?", mentions="")
```
"""

from __future__ import annotations

from llama_index_kgplus.kg._cypher_schema import _Form

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


def _kind_hint(form: _Form) -> str:
    """What the repair of a failed query is told about where the kinds are (when they are a property's values)."""
    if not (form.kind and form.kinds):
        return ""
    return (
        f"\nThe kinds of relationships are values of r.{form.kind}: write -{form.pattern()}-> with "
        f"r.{form.kind} = '...', never -[r:{form.kinds[0]}]->."
    )


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
