"""The entity graph on bad input (issue 39): a question that names no entity, one title shared by a whole corpus,
names that are stop words or numbers, passages in other languages for the English ``ner`` pipeline, and a graph
file linked by another entity pipeline. Real embedding model and real spaCy pipeline, small hand-made corpora."""

from __future__ import annotations

import json

import numpy as np
import pytest
from llama_index.core import Document

from llama_index_kgplus import InputDataError, build_index
from llama_index_kgplus.entity_graph import EntityGraph, EntityGraphRetriever, EntityLinker
from llama_index_kgplus.entity_graph._graph import ENTITY_PIPELINE, GRAPH_FILE
from llama_index_kgplus.entity_graph._names import is_linkable_name
from llama_index_kgplus.entity_graph._retriever import _ranks, fuse

# An office handbook: every passage on another topic.
HANDBOOK = [
    "The printer on the third floor needs a badge to release print jobs.",
    "Expense reports are filed within thirty days of the purchase.",
    "The coffee machine is descaled every Friday by the facilities team.",
    "New laptops are ordered through the IT service desk portal.",
    "Parking permits are renewed each January at the front desk.",
    "Holiday requests need the approval of a line manager.",
    "The fire drill takes place twice a year, in spring and autumn.",
    "Visitors sign in at reception and wear a visitor badge.",
    "The VPN must be used when working from a cafe or hotel.",
    "Meeting rooms are booked in the shared calendar.",
    "Passwords are changed every ninety days.",
    "The library lends books for up to four weeks.",
]
QUESTIONS = [
    "How do I release a print job, says the Acme Handbook?",
    "According to the Acme Handbook, how long can books be borrowed?",
    "When is the coffee machine descaled?",
]


def _docs(texts, titles=None):
    return [
        Document(
            id_=f"d{i}",
            text=text,
            metadata={"doc_id": f"d{i}", **({"title": titles[i]} if titles else {})},
            excluded_embed_metadata_keys=["doc_id", "title"],
        )
        for i, text in enumerate(texts)
    ]


def _graph_index(docs, embed_model, sources=("titles",)):
    linker = EntityLinker.from_defaults(list(sources))
    index = build_index(docs, None, embed_model=embed_model, extra_transformations=[linker], show_progress=False)
    return index, EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id)


def _ids(retriever, question):
    return [h.node.ref_doc_id for h in retriever.retrieve(question)]


# ------------------------------------------------------------------------- a question that names no entity


def test_a_question_naming_no_entity_is_answered_by_the_dense_path(embed_model):
    titles = ["Printing", "Expenses", "Coffee", "Laptops", "Parking", "Holidays"]
    index, graph = _graph_index(_docs(HANDBOOK[:6], titles), embed_model)
    dense = index.as_retriever(similarity_top_k=6)
    question = "What is the boiling point of water at sea level?"
    for settings in ({}, {"entity_embedding_top_k": 2, "entity_similarity": 0.99}):
        retriever = EntityGraphRetriever.from_index(
            index, graph, similarity_top_k=6, embed_model=embed_model, **settings
        )
        hits = retriever.retrieve(question)
        assert [h.node.ref_doc_id for h in hits] == _ids(dense, question)
        assert all(h.node.metadata["entity_graph"]["question_entities"] == [] for h in hits)

    # a graph without a single entity (a corpus without titles): still the dense ranking
    index, graph = _graph_index(_docs(HANDBOOK[:6]), embed_model)
    assert graph.n_entities == 0
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=4, embed_model=embed_model)
    assert _ids(retriever, QUESTIONS[2]) == _ids(index.as_retriever(similarity_top_k=4), QUESTIONS[2])


# ------------------------------------------------------------------------- one title for the whole corpus


@pytest.mark.parametrize("named", [False, True], ids=["title-not-in-text", "title-in-text"])
def test_one_title_shared_by_every_passage_leaves_the_dense_ranking(embed_model, named):
    # the one entity links every passage: its IDF is 0, it tells no passage from another, and it is left out
    texts = [f"Acme Handbook. {t}" if named else t for t in HANDBOOK]
    index, graph = _graph_index(_docs(texts, ["Acme Handbook"] * len(texts)), embed_model)
    assert graph.entity_keys == ["acme handbook"]
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=len(texts), embed_model=embed_model)
    dense = index.as_retriever(similarity_top_k=len(texts))
    for question in QUESTIONS:
        assert _ids(retriever, question) == _ids(dense, question)


def test_a_title_shared_by_most_passages_ranks_them_first_in_dense_order(embed_model):
    # kept (one passage is not about it), the walk spreads evenly over its passages: the dense order breaks the tie
    texts = [*HANDBOOK, "The Loire is the longest river in France."]
    index, graph = _graph_index(_docs(texts, ["Acme Handbook"] * len(HANDBOOK) + ["Loire"]), embed_model)
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=len(texts), embed_model=embed_model)
    dense = index.as_retriever(similarity_top_k=len(texts))
    for question in QUESTIONS[:2]:
        ranked = _ids(retriever, question)
        assert ranked[-1] == "d12"  # the one passage not about the handbook comes last
        assert ranked[:-1] == [i for i in _ids(dense, question) if i != "d12"]


def test_equal_scores_share_a_rank_in_the_fusion():
    assert _ranks([("a", 0.5), ("b", 0.2), ("c", 0.2), ("d", 0.1)]) == {"a": 1, "b": 2, "c": 2, "d": 4}
    # the walk reaches b and c alike: the dense list orders them, whatever order the walk listed them in
    fused = fuse([("a", 0.5), ("c", 0.2), ("b", 0.2)], [("b", 0.9), ("c", 0.8), ("a", 0.1)])
    assert [pid for pid, _ in fused] == ["a", "b", "c"]


# ------------------------------------------------------------------------- stop words and numbers


def test_names_made_of_stop_words_and_numbers_never_link(embed_model):
    for name in ["The", "It", "1999", "1990s", "2nd", "No. 5", "Of The 2", "the 21st", "'80s"]:
        assert not is_linkable_name(name), name
    for name in ["Apollo 11", "The Who Sell Out", "Route 66", "Catch-22", "3M"]:
        assert is_linkable_name(name), name
    pytest.importorskip("spacy")
    titles = ["The", "1999", "It", "1990s", "Of The 2", "No. 5", "2nd", "Apollo 11"]
    texts = [
        "The film was released in 1999 and again in the 1990s.",
        "In 1999 the 2nd edition appeared.",
        "It was the 3rd time. No. 5 was sold out.",
        "The 1990s saw 42 releases.",
        "Numbers: 1, 2, 3.",
        "No. 5 is a perfume.",
        "The 2nd of May.",
        "Apollo 11 landed on the Moon in 1969.",
    ]
    index, graph = _graph_index(_docs(texts, titles), embed_model, sources=("titles", "ner"))
    assert "apollo 11" in graph.entities
    assert not {"the", "it", "1999", "1990s", "of the 2", "no 5", "2nd", "3rd", "42"} & set(graph.entity_keys)
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=3, embed_model=embed_model)
    hits = retriever.retrieve("What happened in the 1990s, in 1999?")
    assert hits and hits[0].node.metadata["entity_graph"]["question_entities"] == []
    assert _ids(retriever, "When did Apollo 11 land?")[0] == "d7"


# ------------------------------------------------------------------------- other languages with `ner`


def test_ner_on_passages_in_other_languages_does_not_fail(embed_model):
    pytest.importorskip("spacy")
    texts = [
        "Die Stadt Berlin liegt an der Spree. Der Bürgermeister eröffnete das neue Museum am Montag.",
        "Angela Merkel war Bundeskanzlerin der Bundesrepublik Deutschland von 2005 bis 2021.",
        "Москва — столица России. Владимир Путин живёт в Москве.",
        "东京是日本的首都。安倍晋三曾任首相。",
        "La ville de Paris est la capitale de la France. Emmanuel Macron est président.",
        "   ",
    ]
    index, graph = _graph_index(_docs(texts), embed_model, sources=("ner",))
    assert graph.n_passages == len(texts) - 1  # the blank one is not a chunk
    linked = {graph.passage_doc_ids[p]: {k for k, _, _ in graph.passage_entities(p)} for p in range(graph.n_passages)}
    assert linked["d3"] == set()  # no capitals, no English names: nothing read in Chinese
    assert "angela merkel" in linked["d1"] and "emmanuel macron" in linked["d4"]  # names in Latin script are read
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=3, embed_model=embed_model)
    for question in ["Wer war Angela Merkel?", "东京是哪个国家的首都?", "Кто живёт в Москве?"]:
        assert len(retriever.retrieve(question)) == 3


# ------------------------------------------------------------------------- a graph of another entity pipeline


def _rewrite_header(path, change):
    with np.load(path) as data:
        arrays = dict(data)
    header = json.loads(bytes(arrays["header"]))
    change(header)
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(path, **arrays)


def test_a_graph_of_another_entity_pipeline_is_refused_with_the_ingest_command(embed_model, tmp_path):
    index, graph = _graph_index(_docs(HANDBOOK[:3], ["Printing", "Expenses", "Coffee"]), embed_model)
    graph.persist(tmp_path)
    path = tmp_path / GRAPH_FILE
    with np.load(path) as data:
        header = json.loads(bytes(data["header"]))
    assert header["entity_pipeline"] == {"version": ENTITY_PIPELINE, "sources": ["titles"]}

    # written before the pipeline was recorded (this release's files): the same keys and records, so it loads
    _rewrite_header(path, lambda h: h.pop("entity_pipeline"))
    assert EntityGraph.load(tmp_path).entity_keys == graph.entity_keys

    _rewrite_header(path, lambda h: h.update(entity_pipeline={"version": ENTITY_PIPELINE - 1, "sources": ["titles"]}))
    with pytest.raises(InputDataError) as error:
        EntityGraph.load(tmp_path)
    message = str(error.value)
    assert "\n" not in message and "older entity pipeline" in message
    assert f"`kgplus ingest DOCS --index {tmp_path} --entities titles`" in message

    _rewrite_header(path, lambda h: h.update(entity_pipeline={"version": ENTITY_PIPELINE + 1}))
    with pytest.raises(InputDataError, match=r"another entity pipeline.*--entities SOURCES`"):
        EntityGraph.load(tmp_path)
