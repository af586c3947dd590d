"""Each named repair policy of text-to-Cypher, on and off, over a small made-up graph of rivers and places
imported into an embedded Ladybug store (its property names are none of the benchmark graphs'), and the graph
description read once per graph. The LLM's replies are scripted (ScriptedLLM): these tests are about what the
engine does with a query, not about a model."""

from __future__ import annotations

import csv
import json

import pytest

from llama_index_kgplus._testing import ScriptedLLM
from llama_index_kgplus.kg import (
    CypherQueryEngine,
    KnowledgeGraph,
    import_kg,
)
from llama_index_kgplus.kg._cypher_prompts import CHAIN_NOTE, ENTITIES_NOTE, REVERSED_NOTE

NODES = [
    ("rhine", "Rhine", "river"), ("aare", "Aare", "river"), ("reuss", "Reuss", "river"),
    ("moselle", "Moselle", "river"), ("bern", "Bern", "city"), ("basel", "Basel", "city"),
    ("lucerne", "Lucerne", "city"), ("koblenz", "Koblenz", "city"), ("ch", "Switzerland", "country"),
    ("de", "Germany", "country"),
]  # fmt: skip
RELS = [
    ("aare", "rhine", "tributary_of"), ("reuss", "aare", "tributary_of"), ("moselle", "rhine", "tributary_of"),
    ("rhine", "basel", "flows_through"), ("rhine", "koblenz", "flows_through"), ("aare", "bern", "flows_through"),
    ("reuss", "lucerne", "flows_through"), ("moselle", "koblenz", "flows_through"),
    ("basel", "ch", "located_in"), ("bern", "ch", "located_in"), ("lucerne", "ch", "located_in"),
    ("koblenz", "de", "located_in"),
]  # fmt: skip


def _write(folder, nodes=NODES, rels=RELS):
    with (folder / "nodes.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([("id:ID", "name", "category", ":LABEL"), *[(*n, "Ent") for n in nodes]])
    with (folder / "rels.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows(
            [(":START_ID", ":END_ID", ":TYPE", "predicate"), *[(s, e, "Rel", p) for s, e, p in rels]]
        )
    return folder / "nodes.csv", folder / "rels.csv"


@pytest.fixture(scope="module")
def rivers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rivers")
    uri = f"ladybug://{folder / 'rivers.lbug'}"
    import_kg(uri, *_write(folder))
    with KnowledgeGraph.open(uri) as kg:
        yield kg


def _ask(kg, question, *cyphers, exclude=()):
    llm = ScriptedLLM(replies=[json.dumps({"cypher": c}) for c in cyphers], rules=[("Answer the question in", "ok")])
    engine = CypherQueryEngine.from_defaults(kg, llm=llm, repairs=CypherQueryEngine.default_repairs(exclude=exclude))
    response = engine.query(question)
    return response.metadata, str(response), llm.prompts


def _names(meta):
    return sorted(v for row in meta["rows"] for v in row.values())


RHINE = "MATCH (a:Ent {name: 'Rhine'})-[r:Rel]->(b:Ent) WHERE r.predicate = "


@pytest.mark.parametrize("on", [True, False])
def test_kind_as_property_rewrites_a_kind_written_as_a_type(rivers, on):
    typed = "MATCH (x:Ent)-[r:tributary_of]->(a:Ent {name: 'Rhine'}) RETURN x.name AS name"
    meta, _, prompts = _ask(
        rivers, "Which rivers are tributaries of Rhine?", typed, typed, exclude=() if on else {"kind_as_property"}
    )
    if on:
        assert "[r:Rel {predicate: 'tributary_of'}]" in meta["cypher"] and _names(meta) == ["Aare", "Moselle"]
    else:  # the database knows no such table: one repair, then why
        assert "Your previous query failed" in prompts[1] and meta["refused"].startswith("the query failed after one")


@pytest.mark.parametrize("on", [True, False])
def test_count_check_sends_a_list_back_for_a_how_many_question(rivers, on):
    listed, counted = RHINE + "'flows_through' RETURN b.name AS name", RHINE + "'flows_through' RETURN count(b) AS n"
    meta, _, prompts = _ask(
        rivers, "How many cities does Rhine flow through?", listed, counted, exclude=() if on else {"count_check"}
    )
    if on:
        assert meta["complaint"].startswith("The question asks how many") and meta["rows"] == [{"n": 2}]
        assert "it does not answer the question" in prompts[1]
    else:
        assert meta["complaint"] is None and not meta["repaired"] and _names(meta) == ["Basel", "Koblenz"]


@pytest.mark.parametrize("off", [(), ("entities_for_groups",), ("groups_returned_check",)])
def test_groups_returned_twice_are_replaced_by_the_entities(rivers, off):
    groups = RHINE + "'flows_through' RETURN DISTINCT b.category AS c"
    meta, text, _ = _ask(rivers, "Which places does Rhine flow through?", groups, groups, exclude=off)
    if not off:
        assert meta["entities_returned"] and meta["reworked_by"] == "entities_for_groups"
        assert _names(meta) == ["Basel", "Koblenz"] and ENTITIES_NOTE in text
    elif off == ("entities_for_groups",):  # told, but nothing rewritten
        assert meta["complaint"].startswith("It returns category values") and meta["rows"] == [{"c": "city"}]
        assert not meta["entities_returned"] and meta["reworked_by"] is None
    else:  # no complaint, so the rewrite (which needs it) never acts either
        assert meta["complaint"] is None and meta["rows"] == [{"c": "city"}] and not meta["entities_returned"]


@pytest.mark.parametrize("on", [True, False])
def test_group_value_check_names_the_values_there_are(rivers, on):
    town = "MATCH (x:Ent) WHERE x.category = 'town' RETURN x.name AS name"
    city = "MATCH (x:Ent) WHERE x.category = 'city' RETURN x.name AS name"
    meta, _, _ = _ask(
        rivers, "List the places whose category is city.", town, city, exclude=() if on else {"group_value_check"}
    )
    if on:
        assert "No entity has category = 'town' (its values: city, country, river)" in meta["complaint"]
        assert "filter x.category = 'city'" in meta["complaint"] and _names(meta) == [
            "Basel",
            "Bern",
            "Koblenz",
            "Lucerne",
        ]
    else:
        assert meta["complaint"] is None and meta["rows"] == []


@pytest.mark.parametrize("on", [True, False])
def test_name_check_sends_back_a_name_the_question_does_not_name(rivers, on):
    stray = "MATCH (a:Ent {name: 'Rhine'})-[r:Rel]->(b:Ent {name: 'Basel'}) RETURN count(*) AS n"
    meta, _, _ = _ask(
        rivers, "How many cities does Rhine flow through?", stray, stray, exclude=() if on else {"name_check"}
    )
    if on:
        assert meta["complaint"].startswith("It matches 'Basel', which the question does not name")
    else:
        assert meta["complaint"] is None


@pytest.mark.parametrize("off", [(), ("one_chain",), ("chain_check",)])
def test_a_chain_question_answered_in_one_hop_twice_gets_the_graphs_one_chain(rivers, off):
    one_hop = RHINE + "'flows_through' RETURN b.name AS name"
    meta, text, _ = _ask(
        rivers, "Which cities does the river flow through that is a tributary of Rhine?", one_hop, one_hop, exclude=off
    )
    if not off:
        assert "the question goes through 2: from 'Rhine' tributary_of, then flows_through" in meta["complaint"]
        assert "(ends at 2 entities)" in meta["complaint"] and meta["chain_written"] and CHAIN_NOTE in text
        assert _names(meta) == ["Bern", "Koblenz"] and "<-[r1:Rel]-" in meta["cypher"]
    elif off == ("one_chain",):
        assert "(ends at 2 entities)" in meta["complaint"] and not meta["chain_written"]
        assert _names(meta) == ["Basel", "Koblenz"]
    else:  # the LLM was never shown the chains: the fallback, which needs that, does not act
        assert meta["complaint"] is None and not meta["chain_written"] and _names(meta) == ["Basel", "Koblenz"]


@pytest.mark.parametrize("on", [True, False])
def test_arrow_reversal_keeps_the_reversed_query_only_when_it_finds_something(rivers, on):
    backwards = RHINE + "'tributary_of' RETURN b.name AS name"
    meta, text, _ = _ask(
        rivers, "Which rivers are tributaries of Rhine?", backwards, exclude=() if on else {"arrow_reversal"}
    )
    if on:
        assert meta["arrows_reversed"] and _names(meta) == ["Aare", "Moselle"] and REVERSED_NOTE in text
        assert "<-[r:Rel]-" in meta["cypher"]
    else:
        assert meta["rows"] == [] and not meta["arrows_reversed"] and meta["reworked_by"] is None


def test_no_policies_leave_the_query_as_written(rivers):
    backwards = RHINE + "'tributary_of' RETURN DISTINCT b.category AS c"
    llm = ScriptedLLM(replies=[json.dumps({"cypher": backwards})], rules=[("Answer the question in", "ok")])
    meta = (
        CypherQueryEngine.from_defaults(rivers, llm=llm, repairs=()).query("How many rivers flow into Rhine?").metadata
    )
    assert meta["rows"] == [] and meta["complaint"] is None and meta["reworked_by"] is None and not meta["repaired"]


def test_an_unknown_policy_name_is_refused_with_the_names():
    with pytest.raises(ValueError, match="Unknown repair policy 'arrows'; the policies are kind_as_property, "):
        CypherQueryEngine.default_repairs(exclude={"arrows"})
    assert [r.name for r in CypherQueryEngine.default_repairs(exclude={"arrow_reversal", "name_check"})] == [
        "kind_as_property", "chain_check", "count_check", "groups_returned_check", "group_value_check", "one_chain",
        "entities_for_groups",
    ]  # fmt: skip


def _description_reads(kg, monkeypatch):
    """Count the description's own queries (its DISTINCT values and its ordered names) run on ``kg``."""
    reads = []
    run = kg.dialect.run

    def counting(store, query, *args, **kwargs):
        if "RETURN DISTINCT" in query or "ORDER BY v" in query:
            reads.append(query)
        return run(store, query, *args, **kwargs)

    monkeypatch.setattr(kg.dialect, "run", counting)
    return reads


def test_the_description_is_read_once_for_all_questions_until_refreshed(rivers, monkeypatch):
    reads = _description_reads(rivers, monkeypatch)
    query = json.dumps({"cypher": RHINE + "'flows_through' RETURN b.name AS name"})
    llm = ScriptedLLM(default=query, rules=[("Answer the question in", "ok")])
    engine = CypherQueryEngine.from_defaults(rivers, llm=llm)
    engine.query("Which cities does Rhine flow through?")
    first = len(reads)
    engine.query("Which places does Rhine flow through?")
    assert first > 0 and len(reads) == first  # the second question read nothing of the description
    written = [p.split("Question:")[0] for p in llm.prompts if p.startswith("You write one read-only Cypher")]
    assert len(written) == 2 and written[0] == written[1]
    engine.refresh()
    engine.query("Which cities does Rhine flow through?")
    assert len(reads) == 2 * first


def test_a_new_import_of_the_graph_is_described_anew(tmp_path):
    uri = f"ladybug://{tmp_path / 'g.lbug'}"
    import_kg(uri, *_write(tmp_path))
    with KnowledgeGraph.open(uri) as kg:
        engine = CypherQueryEngine.from_defaults(kg, llm=ScriptedLLM(default="{}"))
        assert "lake" not in engine.description().text
        import_kg(kg, *_write(tmp_path, [*NODES, ("constance", "Lake Constance", "lake")]), replace=True)
        kg.refresh()
        assert "n.category values: city, country, lake, river" in engine.description().text


def test_a_graph_without_an_import_id_is_described_anew_when_its_counts_change(tmp_path, monkeypatch):
    uri = f"ladybug://{tmp_path / 'g.lbug'}"
    import_kg(uri, *_write(tmp_path))
    with KnowledgeGraph.open(uri) as kg:
        monkeypatch.setattr(kg, "_manifest", kg.manifest.model_copy(update={"import_id": ""}))  # as LlamaIndex's store
        engine = CypherQueryEngine.from_defaults(kg, llm=ScriptedLLM(default="{}"))
        assert "lake" not in engine.description().text
        kg.dialect.run(kg.store, "CREATE (:Ent {id: 'constance', name: 'Lake Constance', category: 'lake'})")
        assert "n.category values: city, country, lake, river" in engine.description().text


def test_each_written_query_is_traced_with_the_guards_verdict(rivers):
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    from llama_index_kgplus.events import CypherGeneratedEvent

    class Recorder(BaseEventHandler):
        seen: list = []

        def handle(self, event, **kwargs):
            if isinstance(event, CypherGeneratedEvent):
                self.seen.append(event)

    recorder = Recorder()
    get_dispatcher().add_event_handler(recorder)
    try:
        _ask(rivers, "Which rivers flow through Basel?", "MATCH (n:Ent) DETACH DELETE n RETURN 1")
        _ask(
            rivers,
            "Which places does Rhine flow through?",
            "MATCH (a:Ent {name: 'Rhine'}) RETURN a.nope.x",
            RHINE + "'flows_through' RETURN b.name AS name",
        )
    finally:
        get_dispatcher().event_handlers.remove(recorder)
    refused, failed, ran = recorder.seen  # a refused query is not run, so it gets no repair
    assert refused.verdict == "refused" and "DELETE" in refused.query and refused.rows is None
    assert failed.verdict == "failed" and failed.reason and not failed.repair
    assert ran.verdict == "ran" and ran.repair and ran.rows == 2 and ran.executed_query.endswith("LIMIT 100")
