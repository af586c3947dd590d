"""The entity graph: name rules, the dictionary, personalized PageRank by hand, linking from every source, the
graph's build / update / delete / persistence, and the retriever on a small multi-hop corpus (real embedding
model, real spaCy pipeline, real embedded stores)."""

from __future__ import annotations

import asyncio
import json

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from llama_index.core import Document, StorageContext
from llama_index.core.schema import MetadataMode, TextNode

from llama_index_kgplus import InputDataError, build_index
from llama_index_kgplus.entity_graph import EntityDictionary, EntityGraph, EntityGraphRetriever, EntityLinker
from llama_index_kgplus.entity_graph._graph import GRAPH_FILE
from llama_index_kgplus.entity_graph._names import entity_key, is_linkable_name, strip_qualifier
from llama_index_kgplus.entity_graph._pagerank import personalized_pagerank, transition_matrix
from llama_index_kgplus.entity_graph._sources import parse_sources

# A small 2WikiMultihopQA-like corpus: the answer to "When did Lothair II's mother die?" is in a passage that
# the question does not name (Ermengarde of Tours), reached through the Lothair II passage.
CORPUS = [
    (
        "Lothair II",
        "Lothair II (835-869) was king of Lotharingia. He was the second son of Emperor Lothair I and "
        "Ermengarde of Tours. He married Teutberga.",
    ),
    (
        "Ermengarde of Tours",
        "Ermengarde of Tours (died 20 March 851) was a Frankish noblewoman and the wife of the emperor Lothair I.",
    ),
    ("Teutberga", "Teutberga (died 875) was a queen of Lotharingia by marriage to Lothair II."),
    ("Lothair I", "Lothair I was Emperor of the Franks. He was the eldest son of Louis the Pious."),
    ("Lotharingia", "Lotharingia was a medieval kingdom named after Lothair II, its first king."),
    ("Tours", "Tours is a city in the west of France on the Loire."),
    ("Loire", "The Loire is the longest river in France."),
    ("Lloyd (film)", "Lloyd is a 1929 silent film. Its star was Harold Lloyd."),
]


def corpus_docs(corpus=CORPUS) -> list[Document]:
    return [
        Document(id_=t, text=x, metadata={"doc_id": t, "title": t}, excluded_embed_metadata_keys=["doc_id"])
        for t, x in corpus
    ]


def linked_nodes(sources=("titles",), corpus=CORPUS, **kwargs):
    linker = EntityLinker.from_defaults(list(sources), **kwargs)
    nodes = [TextNode(id_=f"n-{d.id_}", text=d.text, metadata=dict(d.metadata)) for d in corpus_docs(corpus)]
    for node, doc in zip(nodes, corpus_docs(corpus)):
        node.relationships = {}
        node.metadata["doc_id"] = doc.id_
        from llama_index.core.schema import NodeRelationship, RelatedNodeInfo

        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc.id_)
    return linker(nodes), linker


def entities_of(node) -> dict[str, dict]:
    return {r["id"]: r for r in node.metadata["entities"]}


# ----------------------------------------------------------------------------------------------- names


def test_entity_key_rule():
    assert entity_key("God's Gift to Women") == entity_key("GODS GIFT TO WOMEN") == "gods gift to women"
    assert entity_key("Lambert, Margrave of Tuscany") == "lambert margrave of tuscany"
    assert entity_key("Wrong Turn 5: Bloodlines") == "wrong turn 5 bloodlines"
    assert entity_key("  Ｆｕｌｌwidth  name ") == "fullwidth name"  # NFKC
    assert entity_key("Bråk") == "bråk"  # accents are kept
    assert entity_key("...") == ""
    assert strip_qualifier("Dark River (2017 film)") == "Dark River"
    assert strip_qualifier("(film)") == "(film)"
    assert not is_linkable_name("It") and not is_linkable_name("The Who") and not is_linkable_name("1950")
    assert not is_linkable_name("x") and is_linkable_name("Changed It") and is_linkable_name("3 Dots")
    assert not is_linkable_name("Paris", stop_names=frozenset({"paris"}))


def test_parse_sources_lists_the_valid_ones():
    assert parse_sources("titles, ner,titles") == ["titles", "ner"]
    with pytest.raises(InputDataError, match="choose from titles, kg, glossary, ner, llm"):
        parse_sources("titles,wikidata")
    with pytest.raises(InputDataError, match="No entity source"):
        parse_sources(" , ")


# ----------------------------------------------------------------------------------------------- dictionary


def test_exact_name_beats_alias_and_shared_alias_names_both():
    entities = EntityDictionary()
    entities.add("Lloyd (film)", "titles", aliases=["Lloyd"], doc_id="d1")
    entities.add("Lloyd (actor)", "titles", aliases=["Lloyd"], doc_id="d2")
    assert sorted(m.key for m in entities.find("Lloyd starred.")) == ["lloyd actor", "lloyd film"]
    assert [m.key for m in entities.find("In Lloyd (film) he starred.")] == ["lloyd film"]
    entities.add("Lloyd", "titles", doc_id="d3")
    assert [(m.key, m.exact) for m in entities.find("Lloyd starred.")] == [("lloyd", True)]
    assert entities.same_as() == [("lloyd actor", "lloyd"), ("lloyd film", "lloyd")]


def test_punctuation_variants_and_unicode_names_match():
    entities = EntityDictionary()
    entities.add("Wrong Turn 5: Bloodlines", "titles", doc_id="d1")
    entities.add('Das "Boot"', "titles", doc_id="d2")
    entities.add("Yeşim Ustaoğlu", "titles", doc_id="d3")
    long_name = " ".join(["Very"] * 40 + ["Long Name"])
    entities.add(long_name, "titles", doc_id="d4")
    text = f'Wrong Turn 5 Bloodlines and Das "Boot" by YEŞİM USTAOĞLU? No: Yeşim Ustaoğlu. {long_name}.'
    keys = [m.key for m in entities.find(text)]
    assert keys[:2] == ["wrong turn 5 bloodlines", "das boot"]
    assert "yeşim ustaoğlu" in keys and entity_key(long_name) in keys


def test_merge_and_forget_documents_keep_standing_sources():
    a = EntityDictionary()
    a.add("Virus", "kg", kg_id="T005")
    a.add("Virus", "titles", doc_id="d1")
    a.add("Aspirin", "titles", doc_id="d2")
    b = EntityDictionary()
    b.add("Aspirin", "ner", doc_id="d3")
    a.merge(b)
    assert a.entities["aspirin"].sources == {"titles": {"d2"}, "ner": {"d3"}}
    assert a.forget_documents(["d1", "d2"]) == []
    assert a.entities["virus"].sources == {"kg": set()} and a.entities["virus"].kg_id == "T005"
    assert a.forget_documents(["d3"]) == ["aspirin"]


# ----------------------------------------------------------------------------------------------- PageRank


def test_personalized_pagerank_by_hand():
    # path a - b - c, restart at a, damping 1/2: pi_a = 1/2 + pi_b/4, pi_b = (pi_a + pi_c)/2, pi_c = pi_b/4
    adjacency = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    scores = personalized_pagerank(transition_matrix(adjacency), np.array([1.0, 0, 0]), damping=0.5, tol=1e-13)
    assert scores == pytest.approx([7 / 12, 4 / 12, 1 / 12], abs=1e-12)
    # one step of the walk: c is two edges away and gets nothing
    one_step = personalized_pagerank(transition_matrix(adjacency), np.array([1.0, 0, 0]), damping=0.5, max_steps=1)
    assert one_step == pytest.approx([0.5, 0.5, 0.0])


def test_personalized_pagerank_matches_networkx_with_weights_and_a_dangling_node():
    graph = nx.Graph()
    graph.add_weighted_edges_from([(0, 1, 2.0), (1, 2, 1.0), (2, 3, 3.0), (3, 0, 1.0), (1, 3, 0.5)])
    graph.add_node(4)  # no edge: its mass goes back to the seeds
    adjacency = nx.to_scipy_sparse_array(graph, nodelist=range(5), weight="weight")
    seeds = np.array([0.7, 0, 0, 0.1, 0.2])
    ours = personalized_pagerank(transition_matrix(adjacency), seeds, damping=0.85, tol=1e-13)
    theirs = nx.pagerank(graph, alpha=0.85, personalization=dict(enumerate(seeds)), weight="weight", tol=1e-12)
    assert ours == pytest.approx([theirs[i] for i in range(5)], abs=1e-8)
    assert ours.sum() == pytest.approx(1.0)


def test_push_matches_networkx_within_its_tolerance():
    """The local push on a star (one wide round, done as a product over the graph) with a long tail (narrow
    rounds, done edge by edge) and a node without edges: never above the exact score, short of it by at most
    tol x the node's edge count (the unweighted bound of Andersen, Chung and Lang)."""
    graph = nx.star_graph(40)  # hub 0
    nx.add_path(graph, [40, *range(41, 80)])
    graph.add_node(80)
    adjacency = nx.to_scipy_sparse_array(graph, nodelist=range(81))
    seeds = np.zeros(81)
    seeds[[0, 60, 80]] = [0.5, 0.3, 0.2]
    exact = nx.pagerank(graph, alpha=0.85, personalization=dict(enumerate(seeds)), tol=1e-14, max_iter=1000)
    exact = np.array([exact[i] for i in range(81)])
    degree = np.maximum(np.diff(sp.csr_matrix(adjacency).indptr), 1)
    for tol in (1e-4, 1e-7, 1e-10):
        pushed = personalized_pagerank(transition_matrix(adjacency), seeds, damping=0.85, tol=tol, method="push")
        assert (pushed <= exact + 1e-12).all()
        assert ((exact - pushed) <= tol * degree + 1e-12).all()
    assert pushed == pytest.approx(exact, abs=1e-8)


def test_push_touches_only_the_seeds_neighbourhood():
    # a path of 100 nodes seeded at one end: the power iteration scores every node, the push only those the
    # walk reaches with more than tol x their edge count
    adjacency = nx.to_scipy_sparse_array(nx.path_graph(100))
    seeds = np.zeros(100)
    seeds[0] = 1.0
    t = transition_matrix(adjacency)
    assert (personalized_pagerank(t, seeds, damping=0.5, tol=0.0, method="power") > 0).all()
    pushed = personalized_pagerank(t, seeds, damping=0.5, tol=1e-6, method="push")
    reached = np.flatnonzero(pushed)
    assert reached.tolist() == list(range(reached.size)) and 5 < reached.size < 40


def test_pagerank_rejects_bad_arguments():
    t = transition_matrix(sp.csr_matrix(np.eye(2)))
    for kwargs in ({"damping": 1.0}, {"max_steps": -1}, {"method": "walk"}, {"method": "push", "max_steps": 2}):
        with pytest.raises(ValueError):
            personalized_pagerank(t, np.ones(2), **kwargs)
    with pytest.raises(ValueError, match="positive sum"):
        personalized_pagerank(t, np.zeros(2))


# ----------------------------------------------------------------------------------------------- linking


def test_titles_link_mentions_title_and_qualified_alias():
    nodes, linker = linked_nodes()
    by_doc = {n.ref_doc_id: entities_of(n) for n in nodes}
    lothair = by_doc["Lothair II"]
    assert lothair["lothair ii"] == {"id": "lothair ii", "name": "Lothair II", "count": 1, "about": "title"}
    assert lothair["ermengarde of tours"]["count"] == 1 and "tours" not in lothair  # leftmost-longest
    assert set(lothair) == {"lothair ii", "lotharingia", "lothair i", "ermengarde of tours", "teutberga"}
    # "Lloyd" (the alias without the qualifier) also matches inside "Harold Lloyd": 2 mentions
    assert by_doc["Lloyd (film)"]["lloyd film"] == {
        "id": "lloyd film",
        "name": "Lloyd (film)",
        "count": 2,
        "about": "title",
    }
    assert linker.n_entities_ == len(CORPUS) and linker.n_linked_nodes_ == len(CORPUS) and linker.llm_calls_ == 0
    node = nodes[0]
    assert "entities" not in node.get_content(MetadataMode.EMBED) and "entities" not in node.get_content(
        MetadataMode.LLM
    )


def test_linker_async_equals_sync_and_cache_key_follows_settings():
    nodes, linker = linked_nodes()
    again = [
        TextNode(
            id_=n.node_id,
            text=n.text,
            metadata={k: v for k, v in n.metadata.items() if k != "entities"},
            relationships=n.relationships,
        )
        for n in nodes
    ]
    asyncio.run(EntityLinker.from_defaults(["titles"]).acall(again))
    assert [n.metadata["entities"] for n in again] == [n.metadata["entities"] for n in nodes]
    assert (
        EntityLinker(sources=["titles"]).to_dict() != EntityLinker(sources=["titles"], stop_names=["Tours"]).to_dict()
    )
    assert EntityLinker(sources=["titles"]).to_dict() == EntityLinker(sources="titles", num_workers=9).to_dict()


def test_stop_names_and_a_corpus_without_titles():
    nodes, _ = linked_nodes(stop_names=["Tours", "Lothair I"])
    assert "tours" not in entities_of(nodes[0]) and "lothair i" not in entities_of(nodes[0])
    untitled = [TextNode(id_="u1", text="Lothair II was a king.", metadata={"doc_id": "u1"})]
    linker = EntityLinker.from_defaults(["titles"])
    linker(untitled)
    assert untitled[0].metadata["entities"] == [] and linker.n_entities_ == 0


def test_repeated_titles_are_one_entity_of_both_documents():
    corpus = [("Paris", "Paris is the capital of France."), ("paris", "PARIS is a 1926 film set in Paris.")]
    nodes, linker = linked_nodes(corpus=corpus)
    assert linker.dictionary_.entities["paris"].sources == {"titles": {"Paris", "paris"}}
    assert all(entities_of(n)["paris"]["about"] == "title" for n in nodes)


def test_glossary_source(tmp_path):
    path = tmp_path / "glossary.json"
    path.write_text(
        json.dumps(
            {
                "terms": [
                    {"term": "iterator", "explanation": "An object that yields items.", "aliases": ["iterator object"]},
                    {"term": "Frankish noblewoman", "explanation": "A noble lady of the Franks."},
                ]
            }
        ),
        encoding="utf-8",
    )
    nodes, linker = linked_nodes(["glossary"], glossary=str(path))
    assert set(entities_of(nodes[1])) == {"frankish noblewoman"}
    assert linker.dictionary_.entities["iterator"].sources == {"glossary": set()}
    with pytest.raises(InputDataError, match="needs a glossary"):
        linked_nodes(["glossary"])
    with pytest.raises(InputDataError):
        EntityLinker.from_defaults(["glossary"], glossary=tmp_path / "missing.json")


def test_kg_source_links_names_synonyms_and_relationships(tmp_path):
    from llama_index_kgplus import import_kg

    nodes_csv, rels_csv, syn_csv = tmp_path / "n.csv", tmp_path / "r.csv", tmp_path / "s.csv"
    nodes_csv.write_text("cid:ID,name,:LABEL\nK1,Loire,Ent\nK2,France,Ent\nK3,Europe,Ent\n", encoding="utf-8")
    rels_csv.write_text(
        ":START_ID,:END_ID,:TYPE,relname\nK1,K2,Rel,flows through\nK2,K3,Rel,part of\n", encoding="utf-8"
    )
    syn_csv.write_text("cid,synonym\nK2,French Republic\n", encoding="utf-8")
    uri = f"ladybug://{tmp_path / 'kg.lbug'}"
    import_kg(uri, nodes_csv, rels_csv, syn_csv, show_progress=False)
    corpus = [*CORPUS, ("Republic", "The French Republic has a long coast.")]
    nodes, linker = linked_nodes(["titles", "kg"], corpus=corpus, kg_store=uri)
    by_doc = {n.ref_doc_id: entities_of(n) for n in nodes}
    assert "france" in by_doc["Tours"] and "france" in by_doc["Republic"]
    assert linker.dictionary_.entities["loire"].sources == {"titles": {"Loire"}, "kg": set()}
    assert linker.dictionary_.entities["france"].kg_id == "K2"
    assert ("loire", "france", "flows through") in linker.dictionary_.relationships
    with pytest.raises(InputDataError, match="kg_store"):
        linked_nodes(["kg"])


def test_kg_source_reads_a_graph_llamaindex_wrote(tmp_path):
    """No import: the entities and relations LlamaIndex's store wrote (as PropertyGraphIndex does) are the dictionary."""
    from llama_index.core.graph_stores.types import EntityNode, Relation

    from llama_index_kgplus.graph_stores import open_graph_store

    uri = f"ladybug://{tmp_path / 'pg.lbug'}"
    store = open_graph_store(uri)
    store.upsert_nodes([EntityNode(name="Loire", label="RIVER"), EntityNode(name="France", label="COUNTRY")])
    store.upsert_relations([Relation(label="FLOWS_THROUGH", source_id="Loire", target_id="France")])
    store.connection.close()
    store.db.close()
    nodes, linker = linked_nodes(["kg"], kg_store=uri)
    assert linker.dictionary_.entities["france"].sources == {"kg": set()}
    assert ("loire", "france", "FLOWS_THROUGH") in linker.dictionary_.relationships
    assert "france" in {key for n in nodes for key in entities_of(n)}


def test_ner_source_finds_names_without_any_dictionary():
    pytest.importorskip("spacy")
    corpus = [
        ("p1", "Lothair II was the son of Ermengarde of Tours."),
        ("p2", "Ermengarde of Tours died in 851 at the abbey of Erstein."),
    ]
    docs = [TextNode(id_=i, text=t, metadata={"doc_id": i}) for i, t in corpus]
    linker = EntityLinker.from_defaults(["ner"])
    linker(docs)
    first, second = entities_of(docs[0]), entities_of(docs[1])
    assert "ermengarde of tours" in first and "ermengarde of tours" in second
    assert (
        first["ermengarde of tours"].get("extracted") == "ner"
        or second["ermengarde of tours"].get("extracted") == "ner"
    )
    refit = EntityLinker.from_defaults(["ner"]).fit(docs)  # from the metadata: spaCy is not run again
    assert set(refit.dictionary_.entities) == set(linker.dictionary_.entities)


def test_ner_lead_entity_is_the_first_name_read_in_a_document_without_a_title():
    pytest.importorskip("spacy")
    nodes = [
        TextNode(id_="p1", text="Lothair II was the son of Ermengarde of Tours.", metadata={"doc_id": "p1"}),
        TextNode(id_="p2", text="Ermengarde of Tours was the wife of Lothair I.", metadata={"doc_id": "p2"}),
    ]
    EntityLinker.from_defaults(["ner"])(nodes)
    first, second = entities_of(nodes[0]), entities_of(nodes[1])
    assert first["lothair ii"]["about"] == "lead" and "about" not in first["ermengarde of tours"]
    assert second["ermengarde of tours"]["about"] == "lead" and second["ermengarde of tours"]["count"] == 1
    assert "about" not in second["lothair i"]


def test_batches_of_scattered_chunks_relinked_get_the_links_of_one_pass():
    """The distributed path (Ray's map batches, then ``relink`` on the driver): each batch links with its own
    dictionary but keeps every reading, so the corpus' dictionary and links come back whatever the batches."""
    pytest.importorskip("spacy")
    from llama_index.core.node_parser import SentenceSplitter

    from llama_index_kgplus import load_corpus, sample

    chunks = SentenceSplitter(chunk_size=384, chunk_overlap=32)(load_corpus(sample.SAMPLE_MULTIHOP_DOCS)[:40])
    one_pass = [chunk.model_copy(deep=True) for chunk in chunks]
    EntityLinker.from_defaults(["ner"])(one_pass)
    scattered = [chunk.model_copy(deep=True) for chunk in chunks]
    batch_linker = EntityLinker.from_defaults(["ner"])
    for start in range(5):  # every fifth chunk together: no batch holds neighbours or a whole document
        batch_linker(scattered[start::5])
    EntityLinker.from_defaults(["ner"]).relink(scattered, unread=())

    def links(node):
        return sorted((r["id"], r["count"], r.get("about"), r.get("extracted")) for r in node.metadata["entities"])

    assert [links(n) for n in scattered] == [links(n) for n in one_pass]
    assert sum(bool(links(n)) for n in one_pass) > 30


def test_ner_reading_modes_agree_on_names():
    pytest.importorskip("spacy")
    from llama_index_kgplus.entity_graph import SpacyEntityExtractor

    text = ["Lothair II was the son of Ermengarde of Tours; the singer Nicki Minaj met Frank Sinatra's daughter."]
    names = {}
    for mode, kwargs in {"parser": {"parser": True}, "tags": {}, "tags only": {"recognizer": False}}.items():
        names[mode] = {e.name for e in SpacyEntityExtractor(**kwargs).extract(text)[0]}
    for found in names.values():
        assert {"Lothair II", "Ermengarde of Tours", "Nicki Minaj", "Frank Sinatra"} <= found
    assert names["tags"] == names["parser"]  # the parser is not needed for these names
    assert "Ermengarde" not in names["tags only"]  # runs join over "of"
    with pytest.raises(ValueError, match="n_process"):
        SpacyEntityExtractor(n_process=0)
    (compounds,) = SpacyEntityExtractor(compound_nouns=True).extract(["Church courts judged the Premier League club."])
    assert {"Church courts", "Premier League club"} <= {e.name for e in compounds}


def test_ner_reading_in_processes_gives_the_names_of_one_process(monkeypatch):
    pytest.importorskip("spacy")
    from llama_index_kgplus.entity_graph import _ner
    from llama_index_kgplus.entity_graph._ner import SpacyEntityExtractor

    people = ["Nicki Minaj", "Frank Sinatra", "Ermengarde of Tours", "Lothair II", "Ada Lovelace"]
    texts = [f"{people[i % 5]} met {people[(i + 1) % 5]} in Paris in {1800 + i}." for i in range(20)]
    one = SpacyEntityExtractor(batch_size=4, n_process=1).extract(texts)
    assert SpacyEntityExtractor().n_process == _ner.usable_cores()
    seen: list[int] = []
    assert SpacyEntityExtractor(batch_size=4, n_process=2).extract(texts, on_progress=seen.append) == one
    assert seen == [1] * len(texts)
    monkeypatch.setattr(_ner.multiprocessing, "get_all_start_methods", lambda: ["spawn"])  # spaCy's own n_process
    assert SpacyEntityExtractor(batch_size=4, n_process=2).extract(texts) == one
    assert {e.name for e in one[0]} >= {"Nicki Minaj", "Frank Sinatra", "Paris"}


def test_llm_source_reuses_the_graphrag_extractor():
    from llama_index_kgplus.graphrag._testing import RuleBasedGraphRAGLLM

    nodes, linker = linked_nodes(["llm"], llm=RuleBasedGraphRAGLLM())
    assert linker.llm_calls_ == len(CORPUS)
    lothair = entities_of(nodes[0])
    assert lothair["ermengarde of tours"]["extracted"] == "llm"
    assert nodes[0].metadata["entity_relationships"]  # entities of one sentence are related
    assert linker.to_dict()["llm_model"] == RuleBasedGraphRAGLLM().metadata.model_name
    with pytest.raises(Exception, match="needs an LLM"):
        EntityLinker(sources=["llm"])([TextNode(text="Lothair II.")])


# ----------------------------------------------------------------------------------------------- the graph


def test_graph_build_persist_load_roundtrip(tmp_path):
    nodes, linker = linked_nodes()
    graph = EntityGraph.from_nodes(nodes, linker.dictionary_, index_id="idx-1")
    assert graph.n_passages == len(CORPUS) and graph.n_entities == len(CORPUS)
    path = graph.persist(tmp_path)
    assert path.name == GRAPH_FILE and not list(tmp_path.glob(".*tmp"))
    loaded = EntityGraph.load(tmp_path, index_id="idx-1")
    assert loaded.passage_ids == graph.passage_ids and loaded.entity_keys == graph.entity_keys
    assert (loaded.mention_matrix() != graph.mention_matrix()).nnz == 0
    assert (loaded.mention_matrix(about_only=True) != graph.mention_matrix(about_only=True)).nnz == 0
    assert loaded.entities.entities["lloyd film"].aliases == {"Lloyd"}
    with pytest.raises(InputDataError, match="another index.*re-run `kgplus ingest"):
        EntityGraph.load(tmp_path, index_id="idx-2")


def test_graph_file_errors_name_the_fix(tmp_path):
    with pytest.raises(InputDataError, match="built without --entities"):
        EntityGraph.load(tmp_path)
    nodes, linker = linked_nodes()
    EntityGraph.from_nodes(nodes, linker.dictionary_).persist(tmp_path)
    with np.load(tmp_path / GRAPH_FILE) as data:
        arrays = dict(data)
    header = json.loads(bytes(arrays["header"]))
    header["version"] = 0
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(tmp_path / GRAPH_FILE, **arrays)
    with pytest.raises(InputDataError, match="another version.*re-run `kgplus ingest"):
        EntityGraph.load(tmp_path)
    (tmp_path / GRAPH_FILE).write_bytes(b"not a graph")
    with pytest.raises(InputDataError, match="not a readable entity graph"):
        EntityGraph.load(tmp_path)


def test_graph_delete_and_upsert_by_document():
    corpus = [c for c in CORPUS if c[0] != "Ermengarde of Tours"]
    nodes, linker = linked_nodes(corpus=corpus)
    index = _index(nodes)
    graph = EntityGraph.from_nodes(nodes, linker.dictionary_)
    assert "ermengarde of tours" not in graph.entities

    # add Ermengarde's document: the older Lothair II passage now links to her (text from the docstore)
    new_nodes, new_linker = linked_nodes(
        corpus=[c for c in CORPUS if c[0] == "Ermengarde of Tours"], known_entities=graph.entities
    )
    assert "lothair i" in entities_of(new_nodes[0])  # matched against the graph's known entities
    graph.upsert_nodes(new_nodes, new_linker.dictionary_, docstore=index.docstore)
    lothair = graph.passage_ids.index("n-Lothair II")
    assert ("ermengarde of tours", 1, False) in graph.passage_entities(lothair)
    assert graph.n_passages == len(CORPUS)

    # replacing a document keeps the other passages' links to its entity
    graph.upsert_nodes(new_nodes, new_linker.dictionary_)
    assert ("ermengarde of tours", 1, False) in graph.passage_entities(lothair) and graph.n_passages == len(CORPUS)

    # deleting Teutberga: its passage and its title entity go, with the mention of it in Lothair II's passage
    assert graph.delete_ref_doc("Teutberga") == 1
    assert "teutberga" not in graph.entities and "n-Teutberga" not in graph.passage_ids
    assert all(key != "teutberga" for key, _, _ in graph.passage_entities(graph.passage_ids.index("n-Lothair II")))
    assert graph.delete_ref_doc("no such document") == 0
    assert graph.mention_matrix().shape == (graph.n_passages, graph.n_entities)


def _index(nodes):
    storage = StorageContext.from_defaults()
    storage.docstore.add_documents(nodes)
    return storage


# ----------------------------------------------------------------------------------------------- retrieval


@pytest.fixture(scope="module")
def lothair_index(embed_model, tmp_path_factory):
    linker = EntityLinker.from_defaults(["titles"])
    index = build_index(
        corpus_docs(), None, embed_model=embed_model, extra_transformations=[linker], show_progress=False
    )
    graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id)
    return index, graph


def test_retriever_reaches_the_passage_the_question_does_not_name(lothair_index):
    index, graph = lothair_index
    question = "When did Lothair II's mother die?"
    # without the sentence seeds the walk goes from the question's entity through the passage about it
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=5, dense_seeds=1, sentence_seeds=0)
    hits = retriever.retrieve(question)
    ids = [h.node.ref_doc_id for h in hits]
    assert ids[0] == "Lothair II" and "Ermengarde of Tours" in ids
    why = next(h for h in hits if h.node.ref_doc_id == "Ermengarde of Tours").node.metadata["entity_graph"]
    assert why["question_entities"] == ["Lothair II"]
    steps = why["path"]
    assert steps[0] == {"seed": {"entity": "Lothair II"}, "by": "question"}
    assert [s["edge"] for s in steps[1:]] == ["MENTIONS (about)", "MENTIONS", "MENTIONS (about)"]
    assert steps[-1]["to"]["doc_id"] == "Ermengarde of Tours"
    # the docstore's node is not changed by the per-question metadata
    assert "entity_graph" not in index.docstore.get_node(hits[0].node.node_id).metadata
    # by default the entities of the Lothair II passage's sentences nearest the question ("He was the second son of
    # Emperor Lothair I and Ermengarde of Tours.") seed the walk too: it reaches her passage in one step
    hits = EntityGraphRetriever.from_index(index, graph, similarity_top_k=5, dense_seeds=1).retrieve(question)
    ids = [h.node.ref_doc_id for h in hits]
    assert ids[0] == "Lothair II" and set(ids[1:3]) == {"Lothair I", "Ermengarde of Tours"}
    steps = hits[ids.index("Ermengarde of Tours")].node.metadata["entity_graph"]["path"]
    assert steps[0] == {"seed": {"entity": "Ermengarde of Tours"}, "by": "sentence"}
    assert [s["edge"] for s in steps[1:]] == ["MENTIONS (about)"]


def test_push_and_power_walks_rank_alike(lothair_index):
    index, graph = lothair_index
    question = "When did Lothair II's mother die?"
    ranked = {}
    for walk in ("push", "power"):
        retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=5, walk=walk)
        ranked[walk] = [(h.node.node_id, h.node.metadata["entity_graph"]["path"]) for h in retriever.retrieve(question)]
    assert ranked["push"] == ranked["power"]


def test_retriever_pickles_for_worker_processes(lothair_index):
    import pickle

    index, graph = lothair_index
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=3)
    question = "When did Lothair II's mother die?"
    copy = pickle.loads(pickle.dumps(retriever))
    assert [h.node.node_id for h in copy.retrieve(question)] == [h.node.node_id for h in retriever.retrieve(question)]


def test_retriever_without_question_entities_ranks_by_dense_and_graph(lothair_index):
    index, graph = lothair_index
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=2)
    hits = retriever.retrieve("Which river is the longest in the country?")
    assert hits[0].node.ref_doc_id == "Loire"
    assert hits[0].node.metadata["entity_graph"]["question_entities"] == []


def test_retriever_async_equals_sync(lothair_index):
    index, graph = lothair_index
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=4)
    question = "Who was the wife of Lothair I?"
    sync = [(h.node.node_id, round(h.score, 9)) for h in retriever.retrieve(question)]
    hits = asyncio.run(retriever.aretrieve(question))
    assert [(h.node.node_id, round(h.score, 9)) for h in hits] == sync


def test_llm_step_answers_from_the_top_passages(lothair_index, small_llm):
    index, graph = lothair_index
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=3, llm=small_llm, llm_steps=1)
    hits = retriever.retrieve("Whom did Lothair II marry?")
    (answer,) = hits[0].node.metadata["entity_graph"]["llm_answers"]
    assert "Teutberga" in answer  # the passages name his wife; the question does not
    assert "Teutberga" in [h.node.ref_doc_id for h in hits]


def test_llm_step_fuses_the_rounds_by_reciprocal_rank(lothair_index, small_llm):
    from llama_index.core.prompts import PromptTemplate

    index, graph = lothair_index
    question = "Who was the wife of Lothair I?"
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=2, llm=small_llm, llm_steps=1)
    assert set(retriever.get_prompts()) == {"step_prompt"}
    retriever.update_prompts(
        {
            "step_prompt": PromptTemplate(
                "Text: {context_str}\nQuestion: {query_str}\n\nDo not answer the question. Reply with exactly this "
                "sentence: The Loire is a river.\nReply:"
            )
        }
    )
    hits = retriever.retrieve(question)
    (answer,) = hits[0].node.metadata["entity_graph"]["llm_answers"]
    assert "Loire" in answer

    plain = EntityGraphRetriever.from_index(index, graph, similarity_top_k=2)
    rounds = [plain.retrieve(question), plain.retrieve(f"{question} {answer}")]
    assert "Loire" not in [h.node.ref_doc_id for h in rounds[0]]
    fused: dict[str, float] = {}
    for ranking in rounds:
        for rank, hit in enumerate(ranking, 1):
            fused[hit.node.node_id] = fused.get(hit.node.node_id, 0.0) + 1 / (60 + rank)
    want = sorted(fused, key=lambda node_id: -fused[node_id])[:2]
    assert [h.node.node_id for h in hits] == want
    assert [h.score for h in hits] == pytest.approx([fused[node_id] for node_id in want])
    assert "Loire" in [h.node.ref_doc_id for h in hits]
    again = asyncio.run(retriever.aretrieve(question))
    assert [(h.node.node_id, h.node.metadata["entity_graph"]["llm_answers"]) for h in again] == [
        (h.node.node_id, [answer]) for h in hits
    ]


def test_retriever_settings_are_validated(lothair_index):
    index, graph = lothair_index
    with pytest.raises(Exception, match="damping"):
        EntityGraphRetriever.from_index(index, graph, damping=1.5)
    with pytest.raises(Exception, match="llm_steps"):
        EntityGraphRetriever.from_index(index, graph, llm_steps=4)
    with pytest.raises(InputDataError, match="EntityGraph"):
        EntityGraphRetriever.from_index(index)


def _count_mentions(store, name):
    rows = store.structured_query(
        "MATCH (c)-[r:MENTIONS]->(e) WHERE e.name = $name RETURN count(r) AS n", param_map={"name": name}
    )
    return int(rows[0]["n"])


def _store_graph(index_and_graph):
    """The Lothair graph plus one knowledge-graph relationship, so entity-entity edges are written too."""
    index, graph = index_and_graph
    graph = EntityGraph._from_header(*_header_of(graph))
    graph.entities.relate("Lothair I", "Lothair II", "father of")
    return index, graph


def _header_of(graph):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        graph.persist(tmp)
        with np.load(f"{tmp}/{GRAPH_FILE}") as data:
            return json.loads(bytes(data["header"])), dict(data)


@pytest.mark.parametrize("engine", ["simple", "ladybug"])
def test_graph_copies_into_a_property_graph_store(lothair_index, engine, tmp_path):
    from llama_index.core.graph_stores import SimplePropertyGraphStore

    from llama_index_kgplus import open_graph_store

    index, graph = _store_graph(lothair_index)
    store = SimplePropertyGraphStore() if engine == "simple" else open_graph_store(f"ladybug://{tmp_path / 'eg.lbug'}")
    counts = graph.write_to_store(store, docstore=index.docstore)
    assert counts == {"entities": graph.n_entities, "passages": graph.n_passages, "relationships": graph.n_mentions + 1}
    related = store.get_triplets(entity_names=["Lothair I"])
    assert any(rel.label == "FATHER_OF" and target.name == "Lothair II" for _, rel, target in related)
    if engine == "simple":
        mentions = [t for t in store.get_triplets(relation_names=["MENTIONS"]) if t[2].name == "Ermengarde of Tours"]
        assert sorted(source.id for source, _, _ in mentions) == sorted(
            pid for pid, key, _, _ in graph.mentions() if key == "ermengarde of tours"
        )
    else:
        assert _count_mentions(store, "Ermengarde of Tours") == 2
        graph.write_to_store(store)  # again: upserts, nothing doubled
        assert _count_mentions(store, "Ermengarde of Tours") == 2


@pytest.mark.slow  # starts a FalkorDB server
def test_graph_copies_into_falkordb(lothair_index, falkordb_port):
    from llama_index_kgplus import open_graph_store

    index, graph = _store_graph(lothair_index)
    store = open_graph_store(f"falkordb://127.0.0.1:{falkordb_port}", database="entity_graph_test")
    graph.write_to_store(store, docstore=index.docstore)
    assert _count_mentions(store, "Ermengarde of Tours") == 2
    rows = store.structured_query(
        "MATCH (c:Chunk {id: $id}) RETURN c.text AS text", param_map={"id": graph.passage_ids[0]}
    )
    assert rows[0]["text"].startswith(CORPUS[0][1][:20])
    assert any(rel.label == "FATHER_OF" for _, rel, _ in store.get_triplets(entity_names=["Lothair I"]))


# ----------------------------------------------------------------------------------------------- composition


def test_graph_retriever_inside_the_kg_augmented_engine(lothair_index, tmp_path):
    from llama_index.core.llms import MockLLM

    from llama_index_kgplus import import_kg
    from llama_index_kgplus.kg import KGAugmentedQueryEngine, KGPathRetriever

    nodes_csv, rels_csv = tmp_path / "n.csv", tmp_path / "r.csv"
    nodes_csv.write_text("cid:ID,name,:LABEL\nL2,Lothair II,Ent\nE,Ermengarde of Tours,Ent\n", encoding="utf-8")
    rels_csv.write_text(":START_ID,:END_ID,:TYPE,relname\nL2,E,Rel,child of\n", encoding="utf-8")
    uri = f"ladybug://{tmp_path / 'kg.lbug'}"
    import_kg(uri, nodes_csv, rels_csv, show_progress=False)
    index, graph = lothair_index
    engine = KGAugmentedQueryEngine.from_defaults(
        KGPathRetriever.from_defaults(uri),
        EntityGraphRetriever.from_index(index, graph, similarity_top_k=5),
        llm=MockLLM(),  # echoes the prompt: what reaches the LLM is checked, not an answer
    )
    response = engine.query("When did Lothair II's mother Ermengarde of Tours die?")
    prompt = str(response)
    assert "Lothair II -[child of]-> Ermengarde of Tours" in prompt
    assert "died 20 March 851" in prompt  # the passage the walk reached
    assert "entity_graph" not in prompt  # the walk's explanation is metadata, hidden from the LLM


def test_graph_hits_followed_by_their_summary_parents(embed_model):
    from llama_index_kgplus import load_corpus
    from llama_index_kgplus._sample import SAMPLE_DIR
    from llama_index_kgplus.hierarchy import SemanticChunkingSummaryNodeBuilder
    from llama_index_kgplus.summarizers import ExtractiveSummarizer

    linker = EntityLinker.from_defaults(["titles"])
    builder = SemanticChunkingSummaryNodeBuilder(
        embed_model=embed_model, summarizer=ExtractiveSummarizer(embed_model=embed_model), cluster_size=3
    )
    index = build_index(
        load_corpus(SAMPLE_DIR / "longdoc.jsonl"),
        None,
        embed_model=embed_model,
        chunk_size=256,
        extra_transformations=[linker, builder],
        show_progress=False,
    )
    graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_)
    summaries = [n for n in index.docstore.docs.values() if n.metadata.get("level", 0) > 0]
    assert summaries and graph.n_passages == len(index.docstore.docs) - len(summaries)  # summaries are not passages
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=3, include_parents=True)
    hits = retriever.retrieve("How much of the Amazon rainforest is in Brazil?")
    levels = [h.node.metadata.get("level", 0) for h in hits]
    assert levels.count(0) == 3 and 1 in levels
    for i, hit in enumerate(hits):  # each summary comes right after the first of its children among the hits
        if levels[i] == 1:
            assert hits[i - 1].node.node_id in {c.node_id for c in hit.node.child_nodes} or levels[i - 1] == 1


def test_retriever_follows_edits_of_its_graph(lothair_index):
    index, shared = lothair_index
    graph = EntityGraph._from_header(*_header_of(shared))  # a copy: the module's graph stays as it is
    retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=5)
    question = "When did Lothair II's mother die?"

    def walk_score(doc_id):
        return next(
            (
                h.node.metadata["entity_graph"]["score"]
                for h in retriever.retrieve(question)
                if h.node.ref_doc_id == doc_id
            ),
            None,
        )

    assert walk_score("Ermengarde of Tours") > 0
    graph.delete_ref_doc("Ermengarde of Tours")  # still in the vector index: dense may return it, the walk cannot
    assert walk_score("Ermengarde of Tours") in (None, 0.0)
