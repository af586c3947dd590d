"""The zero-LLM question router (real embedding model, real tables and a real entity matcher) and the routed query
engine (its engines are small real engines over scripted LLMs: what is tested is the routing, not the answers)."""

from __future__ import annotations

import json

import pytest
from llama_index.core.query_engine import CustomQueryEngine

from llama_index_kgplus._sample import SAMPLE_STOCKS_TABLE
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.kg import EntityMatcher
from llama_index_kgplus.router import QuestionRouter, RoutedQueryEngine, RouteFeature
from llama_index_kgplus.router._features import kg_entity_feature, table_feature
from llama_index_kgplus.router._router import ROUTES, load_examples
from llama_index_kgplus.sample import SAMPLE_WEATHER_TABLE
from llama_index_kgplus.tables import SQLTables


@pytest.fixture(scope="module")
def tables() -> SQLTables:
    tables = SQLTables()
    tables.add("weather", SAMPLE_WEATHER_TABLE)
    tables.add("stocks", SAMPLE_STOCKS_TABLE)
    return tables


@pytest.fixture(scope="module")
def router(embed_model, tables) -> QuestionRouter:
    matcher = EntityMatcher.from_pairs([("C1", "virus"), ("C2", "disease or syndrome"), ("C3", "insulin")])
    return QuestionRouter.from_defaults(embed_model, features=[kg_entity_feature(matcher), table_feature(tables)])


def test_the_shipped_examples_cover_every_route():
    examples = load_examples()
    assert set(examples) == set(ROUTES) and all(len(v) >= 20 for v in examples.values())


@pytest.mark.parametrize(
    ("question", "route"),
    [
        ("What was the total precipitation in 2014?", "sql"),
        ("How many days of snow were there in 2012?", "sql"),
        ("How is a virus related to a disease or syndrome?", "kg"),
        ("What are the main themes across all of these documents?", "global"),
        ("Where was the director of the film Casablanca born?", "multihop"),
        ("How do I write a list comprehension?", "local"),
    ],
)
def test_clear_questions_take_their_route(router, question, route):
    decision = router.route(question)
    assert decision.route == route, decision.reason
    assert set(decision.scores) == set(ROUTES) and decision.scores[route] == max(decision.scores.values())


def test_features_fire_and_explain_the_decision(router):
    decision = router.route("What was the total precipitation in 2014?")
    hits = decision.features["table terms"]
    assert "column precipitation" in hits and "asks for total" in hits and "year 2014" in hits
    assert "table terms" in decision.reason and "+0.15 sql" in decision.reason
    kg = router.route("How is a virus related to a disease or syndrome?")
    assert kg.features["knowledge-graph entities"] == ["virus", "disease or syndrome"]
    # one entity is not a path question: the kg feature needs two
    assert "knowledge-graph entities" not in router.route("What is a virus?").features
    # a table term without a computation is no table question
    assert "table terms" not in router.route("What is the weather like in Seattle?").features


def test_route_many_matches_route_and_the_async_twin(router):
    questions = ["What was the total precipitation in 2014?", "How is insulin related to a virus?"]
    many = router.route_many(questions)
    assert [d.route for d in many] == [router.route(q).route for q in questions]


async def test_aroute(router):
    decision = await router.aroute("How is insulin related to a virus?")
    assert decision.route == "kg"


def test_bad_router_input(embed_model, tmp_path):
    bad = tmp_path / "examples.json"
    for content in ('{"local": []}', '{"weird": ["q"]}', "[1, 2]", "{not json"):
        bad.write_text(content)
        with pytest.raises(InputDataError, match="Router examples"):
            load_examples(bad)
    router = QuestionRouter(embed_model, examples={"local": ["a question"]}, features=[RouteFeature("x", "x", list)])
    with pytest.raises(InputDataError, match="unknown routes"):
        router.fit()
    with pytest.raises(InputDataError, match="empty question"):
        QuestionRouter(embed_model).route_many(["ok?", "  "])


class _Echo(CustomQueryEngine):
    """A real query engine that answers with its own name (which engine answered is what these tests check)."""

    name: str

    def custom_query(self, query_str: str) -> str:
        return self.name


def test_the_routed_engine_answers_with_the_route_engine_or_says_why_not(router):
    built = []

    def sql_engine() -> _Echo:
        built.append("sql")
        return _Echo(name="sql")

    engine = RoutedQueryEngine.from_defaults({"local": _Echo(name="local"), "sql": sql_engine}, router=router)
    response = engine.query("What was the total precipitation in 2014?")
    assert (str(response), response.metadata["route"], response.metadata["engine"]) == ("sql", "sql", "sql")
    assert response.metadata["routing"]["fallback"] is None
    engine.query("How many days of snow were there in 2012?")
    assert built == ["sql"]  # a factory is built once, on first use

    response = engine.query("How is a virus related to a disease or syndrome?")
    assert response.metadata["route"] == "kg" and response.metadata["engine"] in {"local", "sql"}
    assert "no kg engine is configured" in response.metadata["routing"]["fallback"]
    json.dumps(response.metadata)  # the routing explanation is plain data

    with pytest.raises(InputDataError, match="keys among"):
        RoutedQueryEngine.from_defaults({"tables": _Echo(name="x")}, router=router)


async def test_the_routed_engine_async(router):
    engine = RoutedQueryEngine.from_defaults({"global": _Echo(name="global")}, router=router)
    response = await engine.aquery("What are the main themes across all of these documents?")
    assert str(response) == "global" and response.metadata["route"] == "global"
