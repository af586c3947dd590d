"""KG paths over any LlamaIndex property graph store: ``SimplePropertyGraphStore`` (the default store of
``PropertyGraphIndex``) has no Cypher, so its graph is read through the store API and searched on the
in-process snapshot."""

from __future__ import annotations

import pickle

import pytest
from llama_index.core import Document, PropertyGraphIndex
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, ChunkNode, EntityNode, Relation
from llama_index.core.llms import MockLLM
from llama_index.core.schema import BaseNode, TransformComponent

from llama_index_kgplus import GraphStoreError
from llama_index_kgplus._testing import ScriptedLLM
from llama_index_kgplus.graph_stores._dialect_api import StoreAPIDialect
from llama_index_kgplus.graph_stores._dialects import dialect_for_store
from llama_index_kgplus.kg import CypherQueryEngine, KGPathRetriever, KGPathSubRetriever, KnowledgeGraph

# (source, relation, target): the facts the documents below state (what the extractor finds)
FACTS = [
    ("aspirin", "TREATS", "headache"),
    ("migraine", "IS_A", "headache"),
    ("ibuprofen", "TREATS", "fever"),
    ("influenza", "CAUSES", "fever"),
]
DOCUMENTS = [
    Document(text="Aspirin is taken for a headache.", id_="d1"),
    Document(text="A migraine is a kind of headache, often a severe one.", id_="d2"),
    Document(text="Influenza brings a fever, and ibuprofen lowers that fever.", id_="d3"),
]


class FixedSchemaExtractor(TransformComponent):
    """A kg_extractor that needs no LLM: each chunk gets the facts whose two entities it names (as a real
    extractor writes them, in the chunk's KG_NODES_KEY / KG_RELATIONS_KEY metadata)."""

    facts: list[tuple[str, str, str]]

    def __call__(self, nodes: list[BaseNode], **kwargs: object) -> list[BaseNode]:
        for node in nodes:
            text = node.get_content().lower()
            facts = [(s, r, t) for s, r, t in self.facts if s in text and t in text]
            names = dict.fromkeys(name for s, _, t in facts for name in (s, t))
            node.metadata[KG_NODES_KEY] = [EntityNode(name=name, label="CONCEPT") for name in names]
            node.metadata[KG_RELATIONS_KEY] = [Relation(label=r, source_id=s, target_id=t) for s, r, t in facts]
        return nodes


@pytest.fixture(scope="module")
def index(embed_model):
    # MockLLM: no LLM is called here (the extractor is given); it only keeps Settings.llm unresolved
    return PropertyGraphIndex.from_documents(
        DOCUMENTS, kg_extractors=[FixedSchemaExtractor(facts=FACTS)], llm=MockLLM(), embed_model=embed_model
    )


def _upserted() -> SimplePropertyGraphStore:
    store = SimplePropertyGraphStore()
    store.upsert_nodes(
        [
            ChunkNode(text="A virus causes fever, which comes with headache.", id_="c1"),
            EntityNode(name="virus", label="ORGANISM"),
            EntityNode(name="fever", label="SYMPTOM"),
            EntityNode(name="headache", label="SYMPTOM"),
            EntityNode(name='o"hara', label="PERSON"),  # its id is 'o hara' (EntityNode.id replaces the quote)
        ]
    )
    store.upsert_relations(
        [
            Relation(label="CAUSES", source_id="virus", target_id="fever"),
            Relation(label="comes with", source_id="fever", target_id="headache"),  # not a Cypher identifier
            Relation(label="KNOWS", source_id="o hara", target_id="virus"),
            Relation(label="MENTIONS", source_id="c1", target_id="virus"),
            Relation(label="MENTIONS", source_id="c1", target_id="headache"),
        ]
    )
    return store


def test_property_graph_index_with_its_default_store_answers_through_the_path_sub_retriever(index):
    store = index.property_graph_store
    assert isinstance(store, SimplePropertyGraphStore)
    paths = KGPathSubRetriever(store, max_paths=5)
    retriever = index.as_retriever(sub_retrievers=[paths])
    texts = [hit.node.text for hit in retriever.retrieve("Does aspirin help with a migraine?")]
    assert texts == ["aspirin -[TREATS]-> headache <-[IS_A]- migraine"]
    [hit] = paths.retrieve("How are influenza and ibuprofen related?")
    assert hit.node.text == "influenza -[CAUSES]-> fever <-[TREATS]- ibuprofen" and hit.score == 0.5
    assert hit.node.metadata["kg_entity_ids"] == ["influenza", "fever", "ibuprofen"]


async def test_async_retrieval_and_the_snapshot_over_the_store_api(index):
    kg = KnowledgeGraph(index.property_graph_store)
    assert isinstance(kg.dialect, StoreAPIDialect) and kg.path_engine == "auto"
    retriever = KGPathRetriever.from_defaults(kg, max_paths=5)
    hits = await retriever.aretrieve("Does aspirin help with a migraine?")
    assert [h.node.text for h in hits] == ["aspirin -[TREATS]-> headache <-[IS_A]- migraine"]
    snapshot = kg.path_snapshot()
    assert snapshot is not None and (snapshot.n_nodes, snapshot.n_relationships) == (6, 4)  # no chunk, no MENTIONS
    assert kg.snapshot_cache.path_ is None  # a graph LlamaIndex writes can change: kept in memory only


def test_a_store_filled_by_upserts_chunks_never_on_a_path_any_relation_label():
    store = _upserted()
    retriever = KGPathRetriever.from_defaults(store, max_paths=5)
    assert [h.node.text for h in retriever.retrieve("Does a virus give you a headache?")] == [
        "virus -[CAUSES]-> fever -[comes with]-> headache"
    ]
    assert [h.node.text for h in retriever.retrieve('Who is o"hara?')] == ['o"hara -[KNOWS]-> virus']
    kg = retriever.finder.graph
    assert sorted(kg.relationships()) == [
        ("fever", "headache", "comes with"),
        ("o hara", "virus", "KNOWS"),
        ("virus", "fever", "CAUSES"),
    ]


def test_a_change_to_the_store_is_seen_after_refresh():
    store = _upserted()
    retriever = KGPathRetriever.from_defaults(store, max_paths=5)
    question = 'Is headache related to o"hara?'
    assert [h.node.text for h in retriever.retrieve(question)] == []  # 3 hops apart, max_hops 2
    store.upsert_relations([Relation(label="HAS", source_id="o hara", target_id="headache")])
    retriever.finder.graph.refresh()
    assert [h.node.text for h in retriever.retrieve(question)] == ['headache <-[HAS]- o"hara']


def test_a_persisted_and_reloaded_store_gives_the_same_paths(tmp_path):
    path = tmp_path / "graph.json"
    _upserted().persist(str(path))
    retriever = KGPathRetriever.from_defaults(SimplePropertyGraphStore.from_persist_path(str(path)))
    assert [h.node.text for h in retriever.retrieve("Does a virus give you a headache?")] == [
        "virus -[CAUSES]-> fever -[comes with]-> headache"
    ]


def test_what_a_store_without_cypher_cannot_do_is_one_clear_error():
    kg = KnowledgeGraph(_upserted())
    with pytest.raises(GraphStoreError, match="path_engine 'auto' or 'snapshot'"):
        kg.shortest_paths([("virus", "headache")], engine="store")
    engine = CypherQueryEngine.from_defaults(kg, llm=ScriptedLLM(default='{"cypher": "MATCH (n) RETURN n"}'))
    with pytest.raises(GraphStoreError) as refused:
        engine.query("How many symptoms does a virus cause?")
    message = str(refused.value)
    assert (
        message.startswith("SimplePropertyGraphStore has no Cypher, so neither text-to-Cypher") and "\n" not in message
    )
    with pytest.raises(GraphStoreError, match="No entities in this SimplePropertyGraphStore"):
        KGPathRetriever.from_defaults(SimplePropertyGraphStore()).retrieve("anything")
    with pytest.raises(GraphStoreError, match="takes no import|nothing can be imported"):
        kg.dialect.write_meta(kg.store, "kg:Ent", "{}")
    with pytest.raises(GraphStoreError, match="open it by URI"):
        pickle.dumps(KGPathRetriever.from_defaults(kg))


def test_what_is_not_a_property_graph_store_is_refused_by_name():
    with pytest.raises(GraphStoreError, match="dict is not a LlamaIndex property graph store"):
        dialect_for_store({})
