"""KGPlusSources, the library assembly of the routed engine: every source checked before any model loads (the
fast tier fails a test that loads one), one clear error per bad source, each route's retriever and engine."""

from __future__ import annotations

import json

import pytest
from llama_index.core import SimpleKeywordTableIndex, StorageContext
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import EntityNode, Relation
from llama_index.core.llms import MockLLM

from llama_index_kgplus import KGPlusSources, build_index, load_corpus
from llama_index_kgplus._indexing import persist_storage
from llama_index_kgplus.errors import GraphStoreError, InputDataError, KGPlusSetupError
from llama_index_kgplus.sample import SAMPLE_DOCS, SAMPLE_WEATHER_TABLE


@pytest.fixture
def foreign_index(tmp_path):
    """An (empty) index folder whose ingest record names another embedding model."""
    record = {"class": "OpenAIEmbedding", "model_name": "text-embedding-3-small", "server": None}
    persist_storage(StorageContext.from_defaults(), tmp_path / "index", embed_model=record)
    return tmp_path / "index"


def _bad_sources(tmp_path, foreign_index):
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "bad.json").write_text('{"terms": [{"term": "GIL"}]}')
    keyword_index = SimpleKeywordTableIndex([], llm=MockLLM())
    return [
        ({}, InputDataError, "Give at least one source"),
        ({"index": tmp_path / "none"}, InputDataError, "holds no index"),
        ({"index": foreign_index, "embed_model": "local"}, InputDataError, "was built with the embedding model"),
        ({"kg_store": "neo4j://127.0.0.1:1"}, GraphStoreError, "Cannot reach Neo4j at 127.0.0.1:1"),
        ({"graphrag": tmp_path}, InputDataError, "holds no GraphRAG index"),
        ({"tables": {"t": tmp_path / "empty.csv"}}, InputDataError, "is empty"),
        ({"tables": [("t", tmp_path / "none.csv")]}, InputDataError, "no file at"),
        ({"tables": {}}, InputDataError, "give {name: file}"),
        ({"index": keyword_index}, InputDataError, "a SimpleKeywordTableIndex is not a source; give an index folder"),
        ({"kg_store": 42}, InputDataError, "a int is not a source; give a graph store URI, a KnowledgeGraph"),
        ({"tables": {"t": SAMPLE_WEATHER_TABLE}, "llm": ""}, KGPlusSetupError, "spec is empty"),
        ({"tables": {"t": SAMPLE_WEATHER_TABLE}, "embed_model": "bogus"}, KGPlusSetupError, "Unknown embedding model"),
        ({"tables": {"t": SAMPLE_WEATHER_TABLE}, "embed_model": object()}, InputDataError, "give a LlamaIndex"),
        ({"tables": {"t": SAMPLE_WEATHER_TABLE}, "glossary": "g.json"}, InputDataError, "belongs to an index"),
        ({"index": foreign_index, "glossary": tmp_path / "bad.json"}, InputDataError, "bad.json:1:12: terms[0]"),
    ]


def test_each_bad_source_is_one_clear_error_before_any_model_loads(tmp_path, foreign_index):
    for given, error, message in _bad_sources(tmp_path, foreign_index):
        sources = KGPlusSources(**given)
        with pytest.raises(error) as caught:
            sources.open()
        assert message in str(caught.value) and "\n" not in str(caught.value), (given, str(caught.value))
        sources.close()  # a failed open leaves nothing open; closing again is harmless


def test_opening_is_cheap_idempotent_and_closing_twice_is_harmless():
    sources = KGPlusSources(tables={"weather": SAMPLE_WEATHER_TABLE})
    with sources:
        assert sources.open() is sources and sources.routes == ["sql"]
        assert sources.sql_tables.names == ["weather"] and sources.knowledge_graph is None
        with pytest.raises(InputDataError, match="No local route: the sources answer sql"):
            sources.query_engine("local")
        with pytest.raises(InputDataError, match="The sql route has no retriever"):
            sources.retriever("sql")
    sources.close()
    assert sources.routes == ["sql"]  # opened again on use


def test_a_property_graph_store_is_a_kg_source_without_cypher():
    store = SimplePropertyGraphStore()
    store.upsert_nodes([EntityNode(name=n, label="THING") for n in ("virus", "fever", "headache")])
    store.upsert_relations(
        [Relation(label="CAUSES", source_id="virus", target_id="fever"),
         Relation(label="COMES_WITH", source_id="fever", target_id="headache")]
    )  # fmt: skip
    with KGPlusSources(kg_store=store) as sources:
        assert sources.routes == ["kg"]
        [hit] = sources.retriever("kg").retrieve("How is a virus related to headache?")
        assert hit.node.text == "virus -[CAUSES]-> fever -[COMES_WITH]-> headache"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, embed_model):
    path = tmp_path_factory.mktemp("sources") / "index"
    build_index(load_corpus(SAMPLE_DOCS)[:3], path, embed_model=embed_model)
    return path


def test_the_routed_engine_in_a_few_lines(index_dir, embed_model, small_llm):
    with KGPlusSources(
        index=index_dir, tables={"weather": SAMPLE_WEATHER_TABLE}, llm=small_llm, embed_model=embed_model
    ) as sources:
        assert sources.routes == ["local", "sql"]
        hits = sources.retriever("local").retrieve("How do I create a virtual environment?")
        assert hits and all(h.node.metadata.get("doc_id") for h in hits)
        engine = sources.routed_query_engine()
        assert engine is sources.routed_query_engine()  # built once
        response = engine.query("What was the total precipitation in Seattle in 2014?")
        meta = response.metadata
        assert meta["route"] == "sql" and meta["engine"] == "sql" and meta["sql"].upper().startswith("SELECT")
        assert meta["usage"]["llm_calls"] >= 1 and meta["usage"]["prompt_tokens"] > 0
        assert sources.query_engine("sql") is engine.engine_for("sql")  # one engine per route


async def test_the_routed_engine_answers_async(index_dir, embed_model, small_llm):
    with KGPlusSources(index=index_dir, llm=small_llm, embed_model=embed_model, context_budget=256) as sources:
        response = await sources.routed_query_engine().aquery("How do I create a virtual environment?")
        assert response.metadata["route"] == "local" and str(response).strip()
        assert json.dumps(response.metadata["routing"]["scores"])  # the decision explains itself
