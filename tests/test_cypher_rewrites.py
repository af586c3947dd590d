"""The deterministic steps around the generated Cypher: a relationship kind written as a type becomes the kind
filter, a query that finds nothing is run once more with its arrows reversed (kept only if that finds
something, and only after the read-only guard), and a query whose shape does not fit the question is sent back
to the LLM once with the reason."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from llama_index_kgplus._query_loop import QueryLoop
from llama_index_kgplus.errors import GraphStoreError, QueryTimeoutError, UnsafeQueryError
from llama_index_kgplus.kg._cypher_checks import _complaint
from llama_index_kgplus.kg._cypher_guard import read_only_cypher
from llama_index_kgplus.kg._cypher_policy import _chain_options
from llama_index_kgplus.kg._cypher_repairs import _entities_for_groups, _kinds_as_properties, _reversed_if_empty
from llama_index_kgplus.kg._cypher_schema import _Form
from llama_index_kgplus.kg._cypher_text import _found_nothing, _hops, _kind_mentions, _reverse_arrows

FORM = _Form("Ent", "name", "Rel", "relname", ("isa", "part_of"), None)


def guard(cypher: str) -> str:
    return read_only_cypher(cypher, max_rows=10)


@pytest.mark.parametrize(
    ("cypher", "expected"),
    [
        ("MATCH (a)-[r:isa]->(b) RETURN b", "MATCH (a)-[r:Rel {relname: 'isa'}]->(b) RETURN b"),
        ("MATCH (a)<-[:PART_OF]-(b) RETURN b", "MATCH (a)<-[:Rel {relname: 'part_of'}]-(b) RETURN b"),
        ("MATCH (a)-[r:Rel]->(b) WHERE r.relname = 'isa' RETURN b", None),  # already the stored form
        ("MATCH (a)-[r:treats]->(b) RETURN b", None),  # not a kind of this graph: the database says so
        ("MATCH (a)-[r:isa {rank: 1}]->(b) RETURN b", None),  # with properties: left alone
    ],
)
def test_a_kind_written_as_a_type_becomes_the_kind_filter(cypher, expected):
    assert _kinds_as_properties(FORM, cypher) == (expected or cypher)


def test_no_rewrite_when_the_kind_is_the_relationship_type():
    typed = _Form("Ent", "name", "", None, ("ISA",), None)
    assert _kinds_as_properties(typed, "MATCH (a)-[r:ISA]->(b) RETURN b") == "MATCH (a)-[r:ISA]->(b) RETURN b"


def test_found_nothing_is_no_rows_or_zero_counts_never_a_boolean():
    assert _found_nothing([]) and _found_nothing([{"n": 0}])
    assert not _found_nothing([{"answer": False}]) and not _found_nothing([{"n": 3}])
    assert not _found_nothing([{"name": "x"}])


def _kg(answers: dict[str, list[dict]]):
    ran: list[str] = []

    def run_read_only(store, cypher, timeout, params=None, max_rows=None):
        ran.append(cypher)
        if cypher not in answers:
            raise GraphStoreError("no such query")
        return answers[cypher]

    return SimpleNamespace(store=None, dialect=SimpleNamespace(run_read_only=run_read_only)), ran


def test_a_query_that_found_nothing_is_kept_reversed_only_when_that_finds_something():
    query = "MATCH (a {name: 'X'})-[r:Rel]->(m)<-[s:Rel]-(b) RETURN b.name AS name LIMIT 10"
    flipped = "MATCH (a {name: 'X'})<-[r:Rel]-(m)-[s:Rel]->(b) RETURN b.name AS name LIMIT 10"
    kg, ran = _kg({flipped: [{"name": "y"}]})
    assert _reversed_if_empty(kg, query, [], guard, 1.0) == (flipped, [{"name": "y"}])
    assert _reversed_if_empty(kg, query, [{"name": "z"}], guard, 1.0) is None  # it found something: kept
    assert _reversed_if_empty(kg, query, [{"answer": False}], guard, 1.0) is None  # a no is an answer
    kg, ran = _kg({flipped: []})
    assert _reversed_if_empty(kg, query, [{"n": 0}], guard, 1.0) is None and ran[-1] == flipped
    kg, ran = _kg({})
    assert _reversed_if_empty(kg, query, [], guard, 1.0) is None  # the reversed query failed: the first stands


def test_a_chain_that_found_nothing_tries_one_arrow_at_a_time_before_all():
    query = "MATCH (a {name: 'X'})-[r:Rel]->(m), (m)-[s:Rel]->(b) RETURN b.name AS name LIMIT 10"
    second = "MATCH (a {name: 'X'})-[r:Rel]->(m), (m)<-[s:Rel]-(b) RETURN b.name AS name LIMIT 10"
    both = "MATCH (a {name: 'X'})<-[r:Rel]-(m), (m)<-[s:Rel]-(b) RETURN b.name AS name LIMIT 10"
    kg, ran = _kg({second: [{"name": "y"}], both: [{"name": "z"}]})
    assert _reversed_if_empty(kg, query, [], guard, 1.0) == (second, [{"name": "y"}])
    assert ran == ["MATCH (a {name: 'X'})<-[r:Rel]-(m), (m)-[s:Rel]->(b) RETURN b.name AS name LIMIT 10", second]
    kg, ran = _kg({both: [{"name": "z"}]})
    assert _reversed_if_empty(kg, query, [], guard, 1.0) == (both, [{"name": "z"}]) and len(ran) == 3


def test_the_reversed_query_goes_through_the_guard_and_a_refusal_keeps_the_first():
    kg, ran = _kg({})
    refused = []

    def strict(cypher: str) -> str:
        try:
            return guard(cypher + " ; DELETE a")
        except UnsafeQueryError:
            refused.append(cypher)
            raise

    assert _reversed_if_empty(kg, "MATCH (a)-[r]->(b) RETURN b", [], strict, 1.0) is None
    assert refused == ["MATCH (a)<-[r]-(b) RETURN b"] and ran == []  # guarded, refused, never run


def test_arrows_are_reversed_outside_quoted_text_in_every_form():
    query = "MATCH (a)-[r:Rel {relname: 'isa'}]->(b)<-[s]-(c), (c)-->(d)<--(e) WHERE b.name = '-[q]->' RETURN a"
    assert _reverse_arrows(query) == (
        "MATCH (a)<-[r:Rel {relname: 'isa'}]-(b)-[s]->(c), (c)<--(d)-->(e) WHERE b.name = '-[q]->' RETURN a"
    )
    assert _reverse_arrows("MATCH (a)-[r]-(b) RETURN a") == "MATCH (a)-[r]-(b) RETURN a"  # no direction: unchanged


def test_zero_counts_of_any_integer_type_are_nothing():
    import numpy as np

    assert _found_nothing([{"n": np.int64(0)}]) and not _found_nothing([{"n": np.int64(2)}])
    assert not _found_nothing([{"n": None}])


def test_an_answer_from_reversed_arrows_says_so():
    from llama_index_kgplus._testing import ScriptedLLM
    from llama_index_kgplus.kg import CypherQueryEngine
    from llama_index_kgplus.kg._cypher import CypherAnswer
    from llama_index_kgplus.kg._cypher_prompts import REVERSED_NOTE

    engine = CypherQueryEngine(kg=None, llm=ScriptedLLM(rules=[("Answer the question", "Three.")]))
    answer = CypherAnswer(question="q", cypher="MATCH ...", rows=[{"n": 3}], reworked_by="arrow_reversal")
    response = engine.respond(answer)
    assert response.response == f"Three. {REVERSED_NOTE}" and response.metadata["arrows_reversed"] is True
    assert response.metadata["reworked_by"] == "arrow_reversal" and not response.metadata["chain_written"]
    plain = engine.respond(answer.model_copy(update={"reworked_by": None}))
    assert plain.response == "Three." and plain.metadata["arrows_reversed"] is False


def test_query_loop_second_try_replaces_the_result_without_a_repair():
    loop = QueryLoop(
        "q",
        noun="query",
        language="Cypher",
        source="graph",
        prompt=lambda repair: "p",
        repair=lambda query, exc: "r",
        execute=lambda query: [],
        retry_on=(GraphStoreError,),
        second_try=lambda query, rows: ("other", [{"n": 1}], "replaced"),
    )
    assert loop.step("MATCH (n) RETURN n", "") is None
    assert (loop.query, loop.result, loop.reworked, loop.repaired) == ("other", [{"n": 1}], True, False)
    assert loop.rework == "replaced"


CLASSED = _Form("Ent", "cfname", "Rel", "relname", ("isa", "causes"), "stygrp")
GROUPS = ["entity", "event"]
VIRUS = {"T005": "virus"}


@pytest.mark.parametrize(
    ("question", "cypher", "says"),
    [
        (
            "How many things does virus cause?",
            "MATCH (a:Ent {cfname: 'virus'})-[r:Rel]->(b:Ent) RETURN DISTINCT b.cfname AS name",
            "asks how many",
        ),
        (
            "Which semantic types does virus cause?",
            "MATCH (a:Ent {cfname: 'virus'})-[r:Rel]->(b:Ent) RETURN DISTINCT b.stygrp AS type LIMIT 5",
            "return their names, x.cfname",
        ),
        (
            "How many semantic types does virus cause?",
            "MATCH (a:Ent {cfname: 'virus'})-[r:Rel]->(b:Ent) RETURN count(DISTINCT b.stygrp) AS n",
            "count the entities, count(DISTINCT x)",
        ),
        (
            "Which semantic types does virus cause?",
            "MATCH (a:Ent {cfname: 'virus'})-[r:Rel]->(b:Ent) WHERE b.stygrp = 'semantic type' RETURN b.cfname",
            "No entity has stygrp = 'semantic type'",
        ),
        (
            "Which things does virus cause?",
            "MATCH (a:Ent {cfname: 'virus'})-[r:Rel]->(b:Ent) WHERE b.stygrp IN ['event', 'thing'] RETURN b.cfname",
            "No entity has stygrp = 'thing'",
        ),
        (
            "How many semantic types are in the stygrp event?",
            "MATCH (a:Ent {cfname: 'event'})<-[r:Rel]-(b:Ent) RETURN count(DISTINCT b) AS n",
            "whose stygrp is 'event': filter x.stygrp = 'event', and match no entity named 'event'",
        ),
        (
            "How many semantic types are in the stygrp event?",
            "MATCH (a:Ent {cfname: 'event'})<-[r:Rel]-(b:Ent {stygrp: 'event'}) RETURN count(DISTINCT b) AS n",
            "match no entity named 'event'",
        ),
        ("List the things whose stygrp is event.", "MATCH (b:Ent) WHERE b.stygrp = 'event' RETURN b.cfname", None),
        (
            "How many things does virus cause?",
            "MATCH (a:Ent {cfname: 'virus'})-[r:Rel]->(b:Ent {cfname: 'fever'}) RETURN count(*) AS n",
            "It matches 'fever', which the question does not name",
        ),
        (
            "Which things cause what virus causes?",
            "MATCH (a:Ent {cfname: 'virus'})-[r1:Rel]->(m:Ent {cfname: 'virus'})<-[r2:Rel]-(x) RETURN x.cfname",
            "It gives 'virus' to two nodes",
        ),
        (
            "Which things does Alzheimer's disease cause?",
            "MATCH (a {cfname: 'Alzheimer\\'s disease'})-->(b {cfname: \"Crohn's disease\"}) RETURN b.cfname",
            'It matches "Crohn\'s disease"',
        ),
        # shapes that fit: no complaint
        (
            "How many things does virus cause?",
            "MATCH (a {cfname: 'virus'})-->(b) WITH count(DISTINCT b) AS n RETURN n",
            None,
        ),
        ("Does virus count as an organism?", "MATCH (a {cfname: 'virus'})-->(b) RETURN count(*) > 0 AS answer", None),
        ("Which things count virus as a member?", "MATCH (a {cfname: 'virus'})<--(b) RETURN b.cfname", None),
        ("Which groups do the things virus causes belong to?", "MATCH ({cfname: 'virus'})-->(b) RETURN b.stygrp", None),
        (
            "Which things does virus cause or undergo?",
            "MATCH ({cfname: 'virus'})-->(b) RETURN b.cfname AS x UNION MATCH ({cfname: 'virus'})<--(b) RETURN b.cfname AS x",
            None,
        ),
        ("How many things does virus cause?", "MATCH (a {cfname: 'virus'})-->(b) RETURN count(DISTINCT b) AS n", None),
        (
            "Which events does virus cause?",
            "MATCH (a {cfname: 'virus'})-->(b) WHERE b.stygrp = 'event' RETURN b.cfname",
            None,
        ),
        ("Which stygrp do the things virus causes have?", "MATCH (a {cfname: 'virus'})-->(b) RETURN b.stygrp", None),
        ("Does virus cause anything?", "MATCH (a {cfname: 'VIRUS'})-->(b) RETURN count(*) > 0 AS answer", None),
    ],
)
def test_a_query_that_does_not_fit_its_question_gets_a_reason(question, cypher, says):
    named = {**VIRUS, "C1": "Alzheimer's disease"} if "Alzheimer" in question else VIRUS
    complaint = _complaint(CLASSED, question, named, GROUPS, cypher)
    assert complaint is None if says is None else says in complaint


KINDS = _Form("Ent", "cfname", "Rel", "relname", ("isa", "causes", "treats", "part_of", "location_of"), None)


@pytest.mark.parametrize(
    ("question", "names", "steps"),
    [
        ("Which drugs treat something that virus causes?", ["virus"], ["causes", "treats"]),
        ("What are the things caused by virus a kind of (isa)?", ["virus"], ["causes", "isa"]),
        # a word for a kind that is not the kind's own name ("members" for isa) is not read: no synonyms
        ("Which genes are members of the families that are members of MAPK?", ["MAPK"], []),
        ("Which entities are members (isa) of the parts of PI3K?", ["PI3K"], ["part_of", "isa"]),
        ("How many parts does the AMPK complex have (part_of)?", ["AMPK"], ["part_of"]),  # said twice, one step
        ("How many things is body part organ the location of?", ["body part organ"], ["location_of"]),  # a name
        ("Is virus an organism?", ["virus", "organism"], []),  # "is" is not isa
        ("Which relationships go from virus to fever?", ["virus", "fever"], []),
        ("Which processes does virus cause?", ["virus"], ["causes"]),  # "processes" alone is no process_of
        ("Does virus take part in fever?", ["virus", "fever"], []),  # part_of needs "part of"
        ("What is the location of virus?", ["virus"], ["location_of"]),
    ],
)
def test_the_kinds_a_question_goes_through_nearest_the_named_entity_first(question, names, steps):
    spans = [(question.index(n), question.index(n) + len(n)) for n in names]
    assert _kind_mentions(KINDS, question, spans) == steps


@pytest.mark.parametrize(
    ("cypher", "hops"),
    [
        ("MATCH (a)-[r:Rel {relname: '-[x]->'}]->(b) RETURN b", 1),
        ("MATCH (a)<-[r1]-(m), (m)<-[r2]-(x) RETURN x", 2),
        ("MATCH (a)-->(b)<--(c) RETURN c", 2),
        ("MATCH (a)-[*1..2]->(b) RETURN b", 2),
        ("MATCH (a)-[r:T*]->(b) RETURN b", 2),
        ("MATCH (a)-[*1]->(b) RETURN b", 1),
        ("MATCH (a)-[*..1]->(b) RETURN b", 1),
        ("MATCH (a)-[r:T*1..3]->(b) RETURN b", 3),
        ("MATCH (a)-[r]-(b) RETURN b", 1),
        ("MATCH (a)-[r]->(b) RETURN b UNION MATCH (a)-[r]->(b)-[s]->(c) RETURN c", 2),
    ],
)
def test_hops_counts_the_relationships_of_the_longest_part(cypher, hops):
    assert _hops(cypher) == hops


def test_a_kinds_own_name_comes_before_a_longer_name_or_a_word_for_it():
    form = _Form("Ent", "name", "Rel", "relname", ("isa", "member_of", "process_of", "part"), None)
    assert _kind_mentions(form, "Which genes are member_of MAPK?", [(25, 29)]) == ["member_of"]
    assert _kind_mentions(form, "Which genes are members of MAPK?", [(27, 31)]) == ["member_of"]  # not isa
    assert _kind_mentions(form, "What is a process of cell division?", [(21, 34)]) == ["process_of"]
    assert _kind_mentions(form, "Which parts of it?", []) == ["part"]


def test_chains_are_counted_with_parameters_and_one_the_database_cannot_count_in_time_is_left_out():
    ran: list[tuple[str, dict]] = []

    def run_read_only(store, query, timeout, params, max_rows=None):
        ran.append((query, params))
        if len(ran) == 1:
            raise GraphStoreError("cannot count this one")
        if len(ran) == 2:
            raise QueryTimeoutError("ran out of time")
        assert timeout == 3.0
        return [{"n": 2}]

    kg = SimpleNamespace(
        store=None, manifest=SimpleNamespace(id_property="cid"), dialect=SimpleNamespace(run_read_only=run_read_only)
    )
    chains = _chain_options(kg, KINDS, ("T005", "virus"), ["causes", "treats"], timeout=3.0)
    assert len(ran) == 4 and len(chains) == 2 and {c.ends for c in chains} == {2}
    assert all("virus" not in query and "$cid" in query for query, _ in ran)  # the name is shown, never run
    assert ran[0][1] == {"cid": "T005", "k1": "causes", "k2": "treats"}
    assert chains[0].shown.startswith("MATCH (a:Ent {cfname: 'virus'})<-[r1:Rel]-(n1:Ent)-[r2:Rel]->(n2:Ent)")


def test_a_chain_question_answered_with_one_hop_is_sent_back_with_the_chain():
    question = "Which drugs treat something that virus causes?"
    one_hop = "MATCH (a:Ent {cfname: 'virus'})-[r:Rel {relname: 'causes'}]->(b:Ent) RETURN b.cfname AS name"
    complaint = _complaint(KINDS, question, VIRUS, [], one_hop, ["causes", "treats"])
    assert complaint is not None and "goes through 2: from 'virus' causes, then treats" in complaint
    assert "r1.relname = 'causes' AND r2.relname = 'treats'" in complaint
    chain = "MATCH (a:Ent {cfname: 'virus'})-[r1:Rel]->(m), (m)<-[r2:Rel]-(x) RETURN x.cfname AS name"
    assert _complaint(KINDS, question, VIRUS, [], chain, ["causes", "treats"]) is None
    assert _complaint(KINDS, question, VIRUS, [], one_hop, ["causes"]) is None


def refuse_deletes(query: str) -> str:
    if "DELETE" in query:
        raise UnsafeQueryError("a write", query)
    return query


def _checked_loop(
    replies: dict[str, object],
    complaint: str | None = "a list where a count was asked",
    second_try=None,
):
    """A loop whose database answers ``replies[query]`` (an exception is raised) and whose check complains
    about the first query only."""

    def execute(query: str):
        reply = replies[query]
        if isinstance(reply, Exception):
            raise reply
        return reply

    return QueryLoop(
        "q",
        noun="query",
        language="Cypher",
        source="graph",
        prompt=lambda repair: "p",
        repair=lambda query, exc: f"repair: {exc}",
        execute=execute,
        retry_on=(GraphStoreError,),
        guard=refuse_deletes,
        check=lambda query, rows: complaint if query == "first" else None,
        second_try=second_try,
    )


def test_query_loop_check_sends_a_query_back_once_and_keeps_the_first_when_the_repair_fails():
    loop = _checked_loop({"first": [{"name": "a"}], "second": [{"n": 1}]})
    assert loop.step("first", "") == "repair: a list where a count was asked"
    assert loop.step("second", "") is None
    assert (loop.query, loop.result, loop.repaired, loop.refused) == ("second", [{"n": 1}], True, None)
    # a repair the database rejects, one the guard refuses, or no query at all: the first stands
    for repaired in ("broken", "MATCH (n) DETACH DELETE n", ""):
        loop = _checked_loop({"first": [{"name": "a"}], "broken": GraphStoreError("syntax")})
        assert loop.step("first", "") is not None
        assert loop.step(repaired, "") is None
        assert (loop.query, loop.result, loop.refused) == ("first", [{"name": "a"}], None)
    loop = _checked_loop({"first": [{"name": "a"}]}, complaint=None)
    assert loop.step("first", "") is None and not loop.repaired


def test_a_first_query_that_stands_still_gets_its_second_try():
    loop = _checked_loop(
        {"first": [], "broken": GraphStoreError("syntax")}, second_try=lambda q, rows: ("rev", [1], "reversed")
    )
    assert loop.step("first", "") is not None  # the check speaks before any second try
    assert loop.step("broken", "") is None
    assert (loop.query, loop.result, loop.reworked) == ("rev", [1], True)


GROUPED = _Form("Ent", "cfname", "Rel", "relname", ("causes",), "stygrp")
CAUSES = "MATCH (a:Ent {cfname: 'virus'})-[r:Rel]->(m:Ent) WHERE r.relname = 'causes' "


@pytest.mark.parametrize(
    ("question", "returned", "expected"),
    [
        ("Which types does virus cause?", "RETURN DISTINCT m.stygrp AS t", "RETURN DISTINCT m.`cfname` AS name"),
        ("How many types does virus cause?", "RETURN m.stygrp ORDER BY m.stygrp", "RETURN count(DISTINCT m) AS n"),
        ("How many types does virus cause?", "RETURN count(DISTINCT m.stygrp) AS n", "RETURN count(DISTINCT m) AS n"),
        ("Which types does virus cause?", "RETURN m.cfname, m.stygrp", None),  # the names are there
        ("Which groups does virus cause?", "RETURN DISTINCT m.stygrp", None),  # groups asked for
        ("Which stygrp does virus cause?", "RETURN DISTINCT m.stygrp", None),
        ("Does virus cause anything?", "RETURN DISTINCT m.stygrp", None),  # yes/no
        ("Which types does virus cause?", "RETURN a.stygrp, m.stygrp", None),  # whose entities: not one variable
        ("Which types does virus cause most?", "RETURN m.stygrp AS t, count(*) AS c ORDER BY c DESC LIMIT 1", None),
        ("Which types does virus cause?", "RETURN collect(DISTINCT m.stygrp) AS t", None),  # only the exact shapes
        ("What type is virus?", "RETURN DISTINCT a.stygrp AS t", None),  # a's name is matched: its group asked
        ("Which types does virus cause?", "RETURN m.stygrp UNION MATCH (m:Ent) RETURN m.stygrp", None),
    ],
)
def test_a_returned_group_property_is_rewritten_to_the_entities_only_where_they_were_asked_for(
    question, returned, expected
):
    rewritten = _entities_for_groups(GROUPED, question, CAUSES + returned)
    assert rewritten == (None if expected is None else CAUSES + expected)
    assert _entities_for_groups(KINDS, question, CAUSES + returned) is None  # a graph without groups
