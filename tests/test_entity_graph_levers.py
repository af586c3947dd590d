"""The entity graph retriever's first-stage and seed options: passage seeds scaled by the dense score (checked
against networkx's personalized PageRank on a hand-made graph), the BM25 + dense first stage (fusion by hand,
then on a real index), and question entities matched by embedding (real embedding model)."""

from __future__ import annotations

import asyncio

import networkx as nx
import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from test_entity_graph import corpus_docs

from llama_index_kgplus import build_index
from llama_index_kgplus.entity_graph import (
    EntityDictionary,
    EntityGraph,
    EntityGraphRetriever,
    EntityLinker,
)
from llama_index_kgplus.entity_graph._hybrid import HybridRetriever, fuse_scores


class FixedHits(BaseRetriever):
    """A first stage that returns the same scored nodes for every question."""

    def __init__(self, hits: list[tuple[TextNode, float]]) -> None:
        self.hits = hits
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=node, score=score) for node, score in self.hits]


def hand_graph():
    """Passages a, b, c; entity X named by a and b, entity Y by b and c (no titles)."""
    entities = EntityDictionary()
    for name in ("Xavier", "Yvonne"):
        entities.add(name, "ner", doc_id="a")
    links = {"a": ["xavier"], "b": ["xavier", "yvonne"], "c": ["yvonne"]}
    nodes = []
    for pid, keys in links.items():
        node = TextNode(
            id_=pid,
            text=f"passage {pid}",
            metadata={"entities": [{"id": k, "name": entities.entities[k].name, "count": 1} for k in keys]},
        )
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=pid)
        nodes.append(node)
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    return EntityGraph.from_nodes(nodes, entities), docstore, {n.node_id: n for n in nodes}


def test_passage_seeds_scaled_by_dense_score_match_networkx():
    graph, docstore, nodes = hand_graph()
    dense = FixedHits([(nodes["a"], 0.9), (nodes["b"], 0.7), (nodes["c"], 0.5)])
    settings = {"damping": 0.5, "max_df": None, "walk_tolerance": 1e-9, "sentence_seeds": 0}
    retriever = EntityGraphRetriever(graph, dense, docstore, similarity_top_k=3, dense_seeds=3, **settings)  # minmax
    hits = retriever.retrieve("a question that names nobody")
    walk = {h.node.node_id: h.node.metadata["entity_graph"]["score"] for h in hits}
    reference = nx.Graph([("a", "xavier"), ("b", "xavier"), ("b", "yvonne"), ("c", "yvonne")])
    seeds = {"a": 1.0, "b": 0.5, "c": 1e-6, "xavier": 0.0, "yvonne": 0.0}  # (0.9-0.5)/(0.9-0.5), (0.7-0.5)/0.4, 0
    expected = nx.pagerank(reference, alpha=0.5, personalization=seeds, tol=1e-12)
    assert walk == pytest.approx({p: expected[p] for p in "abc"}, abs=1e-6)
    # by raw score the seeds are 0.9 : 0.7 : 0.5
    plain = EntityGraphRetriever(
        graph, dense, docstore, similarity_top_k=3, dense_seeds=3, dense_seed_scaling="score", **settings
    )
    expected = nx.pagerank(reference, alpha=0.5, personalization={"a": 0.9, "b": 0.7, "c": 0.5}, tol=1e-12)
    walk = {h.node.node_id: h.node.metadata["entity_graph"]["score"] for h in plain.retrieve("nobody")}
    assert walk == pytest.approx({p: expected[p] for p in "abc"}, abs=1e-6)


def test_fuse_scores_by_hand():
    a, b, c = (TextNode(id_=i, text=i) for i in "abc")
    lexical = [NodeWithScore(node=a, score=12.0), NodeWithScore(node=b, score=4.0), NodeWithScore(node=c, score=2.0)]
    dense = [NodeWithScore(node=c, score=0.8), NodeWithScore(node=b, score=0.6)]
    fused = fuse_scores([(0.5, lexical), (0.5, dense)], top_k=3)
    # lexical scaled: a 1, b 0.2, c 0; dense scaled: c 1, b 0 -> a 0.5, c 0.5, b 0.1 (ties by node id)
    assert [(h.node.node_id, round(h.score, 9)) for h in fused] == [("a", 0.5), ("c", 0.5), ("b", 0.1)]
    assert [h.node.node_id for h in fuse_scores([(1.0, lexical), (0.0, dense)], top_k=2)] == ["a", "b"]


def test_hybrid_first_stage_finds_a_rare_name_and_returns_stored_nodes(embed_model):
    pytest.importorskip("llama_index.retrievers.bm25")
    texts = {
        "loire": "The Loire is the longest river in France.",
        "tours": "Tours is a city in the west of France on the Loire.",
        "teutberga": "Teutberga (died 875) was a queen of Lotharingia by marriage to Lothair II.",
        "lloyd": "Lloyd is a 1929 silent film. Its star was Harold Lloyd.",
    }
    from llama_index.core import Document

    docs = [Document(id_=k, text=v, metadata={"doc_id": k}) for k, v in texts.items()]
    index = build_index(docs, None, embed_model=embed_model, show_progress=False)
    hybrid = HybridRetriever.from_index(index, similarity_top_k=2, lexical_weight=1.0)
    hits = hybrid.retrieve("Teutberga")
    assert hits[0].node.ref_doc_id == "teutberga"
    assert hits[0].node.node_id in index.docstore.docs  # the stored node, not BM25's rebuilt copy
    both = HybridRetriever.from_index(index, similarity_top_k=4, lexical_weight=0.5)
    question = "Which queen married Lothair II?"
    sync = [(h.node.node_id, round(h.score, 9)) for h in both.retrieve(question)]
    assert sync == [(h.node.node_id, round(h.score, 9)) for h in asyncio.run(both.aretrieve(question))]
    with pytest.raises(ValueError, match="lexical_weight"):
        HybridRetriever(index.as_retriever(), docstore=index.docstore, lexical_weight=2.0)


def test_graph_retriever_with_hybrid_first_stage(embed_model):
    pytest.importorskip("llama_index.retrievers.bm25")
    linker = EntityLinker.from_defaults(["titles"])
    index = build_index(corpus_docs(), None, embed_model=embed_model, extra_transformations=[linker],
                        show_progress=False)  # fmt: skip
    graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id)
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=5, first_stage="hybrid")
    assert isinstance(retriever.dense_retriever, HybridRetriever)
    ids = [h.node.ref_doc_id for h in retriever.retrieve("When did Lothair II's mother die?")]
    assert ids[0] == "Lothair II" and "Ermengarde of Tours" in ids


def test_question_entities_matched_by_embedding(embed_model):
    linker = EntityLinker.from_defaults(["titles"])
    index = build_index(corpus_docs(), None, embed_model=embed_model, extra_transformations=[linker],
                        show_progress=False)  # fmt: skip
    graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id)
    question = "Which waterway is the longest one in France?"  # names no entity of the dictionary
    plain = EntityGraphRetriever.from_index(index, graph, similarity_top_k=3, embed_model=embed_model)
    assert plain.question_entities(question) == [] and plain.similar_entities(question) == []
    retriever = EntityGraphRetriever.from_index(
        index, graph, similarity_top_k=3, embed_model=embed_model, entity_embedding_top_k=1, entity_similarity=0.2
    )
    retriever.warm_up()
    (best,) = retriever.similar_entities(question)
    assert best[0] == "loire" and 0.2 <= best[1] <= 1.0
    hits = retriever.retrieve(question)
    assert hits[0].node.ref_doc_id == "Loire"
    assert hits[0].node.metadata["entity_graph"]["question_entities"] == ["Loire"]
    strict = EntityGraphRetriever.from_index(
        index, graph, embed_model=embed_model, entity_embedding_top_k=1, entity_similarity=0.99
    )
    assert strict.similar_entities(question) == []


def test_similar_pairs_by_hand():
    from llama_index_kgplus.entity_graph._synonyms import similar_pairs

    vectors = [[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]]  # cosines: 0-1 0.8, 1-2 0.6, 0-2 0
    assert similar_pairs(vectors, 0.7) == [(0, 1, pytest.approx(0.8))]
    assert [(i, j) for i, j, _ in similar_pairs(vectors, 0.5, block=1)] == [(0, 1), (1, 2)]
    assert similar_pairs([[1.0, 0.0]], 0.0) == []


def test_synonym_edges_carry_the_walk_and_persist(embed_model, tmp_path):
    """a names "King Lothair II", b names "Lothair II" (cosine 0.92 with MiniLM), c names "Loire" (0.23): with
    SIMILAR_TO edges at 0.8 the walk from the question's "King Lothair II" reaches b, as networkx says."""
    entities = EntityDictionary()
    links = {"a": "King Lothair II", "b": "Lothair II", "c": "Loire"}
    for pid, name in links.items():
        entities.add(name, "ner", doc_id=pid)
    nodes = []
    for pid, name in links.items():
        key = next(k for k, e in entities.entities.items() if e.name == name)
        node = TextNode(id_=pid, text=f"passage {pid}", metadata={"entities": [{"id": key, "name": name, "count": 1}]})
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=pid)
        nodes.append(node)
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    graph = EntityGraph.from_nodes(nodes, entities)
    settings = {"similarity_top_k": 3, "damping": 0.5, "max_df": None, "dense_seeds": 0, "walk_tolerance": 1e-9}

    def walk():
        retriever = EntityGraphRetriever(graph, FixedHits([]), docstore, **settings)
        return {
            h.node.node_id: h.node.metadata["entity_graph"]["score"] for h in retriever.retrieve("King Lothair II?")
        }

    assert set(walk()) == {"a"}  # without the edge only a is reached
    with pytest.raises(ValueError, match="threshold"):
        graph.link_similar_entities(embed_model, threshold=2.0)
    assert graph.link_similar_entities(embed_model, threshold=0.8) == 1
    assert asyncio.run(graph.alink_similar_entities(embed_model, threshold=0.8)) == 0  # already there
    reference = nx.Graph([("a", "king lothair ii"), ("king lothair ii", "lothair ii"), ("lothair ii", "b"),
                          ("c", "loire")])  # fmt: skip
    expected = nx.pagerank(reference, alpha=0.5, personalization={"king lothair ii": 1.0}, tol=1e-12)
    assert walk() == pytest.approx({p: expected[p] for p in "ab"}, abs=1e-6)
    graph.persist(tmp_path)
    assert ("king lothair ii", "lothair ii", "SIMILAR_TO") in EntityGraph.load(tmp_path).entities.relationships


def test_sentence_seeds_seed_the_entities_of_the_sentences_nearest_the_question(embed_model):
    """Passage a (the one dense hit) has three sentences; the question names Blue Harbor. With sentence_seeds=2
    the two sentences nearest the question by embedding are a's first (Blue Harbor, the question's own entity)
    and second (Mira Solten): Mira Solten seeds the walk at that sentence's cosine times its specificity, and the
    passage about her marriage (b) now ranks above the one about Oslo (c), which tie without it; the scores are
    networkx's personalized PageRank with those seeds."""
    import numpy as np

    texts = {
        "a": "Blue Harbor is an album from 1998. Its singer is Mira Solten. The cover was shot in Oslo.",
        "b": "Mira Solten married the painter Ivo Brandt.",
        "c": "Oslo is the capital of Norway.",
    }
    names = {"a": ["Blue Harbor", "Mira Solten", "Oslo"], "b": ["Mira Solten", "Ivo Brandt"], "c": ["Oslo", "Norway"]}
    entities = EntityDictionary()
    for pid, found in names.items():
        for name in found:
            entities.add(name, "ner", doc_id=pid)
    key = {e.name: k for k, e in entities.entities.items()}
    nodes = []
    for pid, text in texts.items():
        records = [{"id": key[n], "name": n, "count": 1} for n in names[pid]]
        node = TextNode(id_=pid, text=text, metadata={"entities": records})
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=pid)
        nodes.append(node)
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    graph = EntityGraph.from_nodes(nodes, entities)
    question = "Who did the singer of Blue Harbor marry?"
    settings = {"similarity_top_k": 3, "damping": 0.5, "max_df": None, "dense_seeds": 1, "walk_tolerance": 1e-9}

    def retriever(sentence_seeds):
        dense = FixedHits([(nodes[0], 0.6)])
        return EntityGraphRetriever(
            graph, dense, docstore, embed_model=embed_model, sentence_seeds=sentence_seeds, **settings
        )

    def cosine(sentence):
        a, b = np.array(embed_model.get_text_embedding(sentence)), np.array(embed_model.get_query_embedding(question))
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    hits = retriever(2).retrieve(question)
    walk = {h.node.node_id: h.node.metadata["entity_graph"]["score"] for h in hits}
    singer = cosine("Its singer is Mira Solten.")
    named = retriever(2).sentence_entities(question, [NodeWithScore(node=nodes[0])])
    assert [k for k, _ in named] == [key["Blue Harbor"], key["Mira Solten"]]  # Oslo's sentence is the third
    # the walk's seeds: the question's entity as the question names it, Mira Solten at her sentence's cosine
    reference = nx.Graph([(p, key[n]) for p, found in names.items() for n in found])
    entity_seeds = {key["Blue Harbor"]: 1.0, key["Mira Solten"]: singer / 2}  # specificity: 1 / passages naming it
    total = sum(entity_seeds.values())
    personalization = {node: 0.9 * weight / total for node, weight in entity_seeds.items()} | {"a": 0.1}
    expected = nx.pagerank(reference, alpha=0.5, personalization=personalization, tol=1e-12)
    assert walk == pytest.approx({p: expected[p] for p in "abc"}, abs=1e-6)
    assert walk["b"] > walk["c"]
    path = next(h for h in hits if h.node.node_id == "b").node.metadata["entity_graph"]["path"]
    assert path[0] == {"seed": {"entity": "Mira Solten"}, "by": "sentence"}
    without = {h.node.node_id: h.node.metadata["entity_graph"]["score"] for h in retriever(0).retrieve(question)}
    assert without["b"] == pytest.approx(without["c"])
    again = asyncio.run(retriever(2).aretrieve(question))
    assert {h.node.node_id: h.node.metadata["entity_graph"]["score"] for h in again} == walk


def test_sentence_seeds_without_an_embedding_model_say_how_to_fix_it(monkeypatch):
    from llama_index.core import Settings

    from llama_index_kgplus import KGPlusSetupError

    def unresolved(self):  # stands in for LlamaIndex's default, OpenAI, with no key (an earlier test may set one)
        raise ValueError("No API key found for OpenAI.")

    graph, docstore, nodes = hand_graph()
    monkeypatch.setattr(type(Settings), "embed_model", property(unresolved))
    retriever = EntityGraphRetriever(graph, FixedHits([(nodes["a"], 0.9)]), docstore)
    with pytest.raises(KGPlusSetupError, match="sentence_seeds"):
        retriever.retrieve("Who is Xavier?")
    assert EntityGraphRetriever(graph, FixedHits([(nodes["a"], 0.9)]), docstore, sentence_seeds=0).retrieve("Xavier")
