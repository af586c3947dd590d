"""HierarchicalRetriever over a real persisted index (simple vector store + docstore, real embedding model;
summaries written by the real extractive summarizer), and the `kgplus` hierarchy options."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from llama_index.core.schema import MetadataMode, NodeRelationship, QueryBundle
from llama_index.core.utils import get_tokenizer

from llama_index_kgplus import _sample as sample
from llama_index_kgplus import build_index, load_corpus
from llama_index_kgplus._text import questions_in
from llama_index_kgplus.cli import main
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.hierarchy import HierarchicalRetriever, SemanticChunkingSummaryNodeBuilder
from llama_index_kgplus.hierarchy._parents import node_level
from llama_index_kgplus.hierarchy._retriever import _POOL_FACTOR, read_manifest, write_manifest
from llama_index_kgplus.summarizers import ExtractiveSummarizer

QUESTION = "Which animals and plants live in the Amazon rainforest?"


def corpus():
    return load_corpus(sample.SAMPLE_DIR / "longdoc.jsonl") + load_corpus(sample.SAMPLE_DOCS)[:1]


@pytest.fixture(scope="module")
def semantic_index(embed_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("semantic-index")
    builder = SemanticChunkingSummaryNodeBuilder(
        embed_model=embed_model, summarizer=ExtractiveSummarizer(max_sentences=3), max_levels=2, show_progress=False
    )
    index = build_index(
        corpus(), folder, embed_model=embed_model, chunk_size=128, extra_transformations=[builder], show_progress=False
    )
    write_manifest(folder, list(index.docstore.docs.values()), builder)
    return index, folder


@pytest.fixture(scope="module")
def flat_index(embed_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("flat-index")
    return build_index(corpus(), folder, embed_model=embed_model, chunk_size=128, show_progress=False)


def cosine(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_collapsed_searches_every_level(semantic_index, embed_model):
    index, _ = semantic_index
    retriever = HierarchicalRetriever.from_index(index, mode="collapsed", similarity_top_k=8)
    hits = retriever.retrieve(QUESTION)
    assert len(hits) == 8
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    query = embed_model.get_query_embedding(QUESTION)
    stored = index.vector_store.get(hits[0].node.node_id)
    assert hits[0].score == pytest.approx(cosine(query, stored), abs=1e-6)
    # the hits are the best 8 of all nodes, summaries included
    all_scores = sorted((cosine(query, index.vector_store.get(i)) for i in index.docstore.docs), reverse=True)
    assert scores == pytest.approx(all_scores[:8], abs=1e-6)


@pytest.mark.parametrize("mode", ["collapsed", "tree", "evidence"])
def test_retriever_pickles_for_worker_processes(semantic_index, mode):
    import pickle

    index, _ = semantic_index
    retriever = HierarchicalRetriever.from_index(index, mode=mode, similarity_top_k=4)
    copy = pickle.loads(pickle.dumps(retriever))
    assert [h.node.node_id for h in copy.retrieve(QUESTION)] == [h.node.node_id for h in retriever.retrieve(QUESTION)]


def test_tree_descends_from_the_roots(semantic_index):
    index, _ = semantic_index
    docs = index.docstore.docs
    retriever = HierarchicalRetriever.from_index(index, mode="tree", similarity_top_k=100, beam_width=2)
    hits = retriever.retrieve(QUESTION)
    ids = {h.node.node_id for h in hits}
    roots = set(retriever.root_ids())
    assert roots == {i for i, n in docs.items() if NodeRelationship.PARENT not in n.relationships}
    assert max(node_level(docs[r]) for r in roots) == 2
    for hit in hits:  # every hit is a root or the child of another hit
        node = hit.node
        if node.node_id not in roots:
            assert set(node.metadata["parent_ids"]) & ids
    assert sum(1 for h in hits if h.node.node_id in roots) == 2
    assert any(node_level(h.node) == 0 for h in hits)


def test_tree_and_collapsed_agree_on_a_flat_index(flat_index):
    tree = HierarchicalRetriever.from_index(flat_index, mode="tree", similarity_top_k=4).retrieve(QUESTION)
    collapsed = HierarchicalRetriever.from_index(flat_index, mode="collapsed", similarity_top_k=4).retrieve(QUESTION)
    assert [h.node.node_id for h in tree] == [h.node.node_id for h in collapsed]
    assert [h.score for h in tree] == pytest.approx([h.score for h in collapsed], abs=1e-6)


def test_expand_children_follows_each_summary_hit(semantic_index):
    index, _ = semantic_index
    summary = next(n for n in index.docstore.docs.values() if node_level(n) == 1)
    question = summary.get_content(MetadataMode.NONE)  # the summary itself is the best hit
    hits = HierarchicalRetriever.from_index(index, mode="collapsed", similarity_top_k=1, expand_children=True).retrieve(
        question
    )
    children = {c.node_id for c in summary.relationships[NodeRelationship.CHILD]}
    assert hits[0].node.node_id == summary.node_id
    assert {h.node.node_id for h in hits[1:]} == children and len(hits) == len(children) + 1
    child_scores = [h.score for h in hits[1:]]
    assert child_scores == sorted(child_scores, reverse=True)
    plain = HierarchicalRetriever.from_index(index, mode="collapsed", similarity_top_k=1).retrieve(question)
    assert [h.node.node_id for h in plain] == [summary.node_id]


def test_evidence_replaces_a_summary_hit_by_the_chunks_under_it(semantic_index):
    index, _ = semantic_index
    docs = index.docstore.docs
    summary = next(n for n in docs.values() if node_level(n) == 2)
    retriever = HierarchicalRetriever.from_index(index, mode="evidence", similarity_top_k=4, summary_margin=1.0)
    question = summary.get_content(MetadataMode.NONE)  # the summary is the best hit of a collapsed search
    assert HierarchicalRetriever.from_index(index, mode="collapsed", similarity_top_k=1).retrieve(question)[
        0
    ].node.node_id == (summary.node_id)
    hits = retriever.retrieve(question)
    assert len(hits) == 4 and all(node_level(h.node) == 0 for h in hits)  # summaries never take a place
    under = {n.node_id for n in retriever.leaves_under(summary)}
    assert len(under) > 4 and all(node_level(docs[i]) == 0 for i in under)  # through both levels
    assert {h.node.node_id for h in hits} & under
    # a summary that matches much better than every chunk under it is kept, before the chunks
    kept = HierarchicalRetriever.from_index(index, mode="evidence", similarity_top_k=4, summary_margin=0.0)
    assert kept.retrieve(question)[0].node.node_id == summary.node_id


def test_evidence_reads_the_chunks_under_all_its_summary_hits_from_the_store_at_once(
    embed_model, tmp_path, monkeypatch
):
    """A LanceDB table answers each read with a scan: one read per summary hit made evidence retrieval's p95 700 ms
    at 10^5 chunks (benchmarks/scale.py structure)."""
    builder = SemanticChunkingSummaryNodeBuilder(
        embed_model=embed_model, summarizer=ExtractiveSummarizer(max_sentences=3), show_progress=False
    )
    index = build_index(corpus(), tmp_path / "index", embed_model=embed_model, chunk_size=128, vector_store="lancedb",
                        extra_transformations=[builder], show_progress=False)  # fmt: skip
    collapsed = HierarchicalRetriever.from_index(index, mode="collapsed", similarity_top_k=8 * _POOL_FACTOR)
    pool = collapsed.retrieve(QUESTION)
    assert sum(node_level(hit.node) > 0 for hit in pool) >= 3  # the evidence search below meets several summaries
    store_class, reads = type(index.vector_store), []
    real_get_nodes = store_class.get_nodes

    def counted(self, node_ids=None, **kwargs):
        reads.append(node_ids)
        return real_get_nodes(self, node_ids=node_ids, **kwargs)

    monkeypatch.setattr(store_class, "get_nodes", counted)
    hits = HierarchicalRetriever.from_index(index, mode="evidence", similarity_top_k=8).retrieve(QUESTION)
    assert len(hits) == 8 and len(reads) <= 2  # the candidates' vectors, then those of every chunk under them


def test_evidence_covers_each_part_of_a_two_part_question(flat_index):
    first, second = "Which animals live in the Amazon rainforest?", "What is the rainforest's climate like?"
    best_per_part = {
        HierarchicalRetriever.from_index(flat_index, mode="collapsed", similarity_top_k=1).retrieve(q)[0].node.node_id
        for q in (first, second)
    }
    question = f"{first} {second}"
    whole = {"mode": "evidence", "similarity_top_k": 2, "split_questions": False}
    by_similarity = HierarchicalRetriever.from_index(flat_index, coverage=0.0, **whole)
    collapsed = HierarchicalRetriever.from_index(flat_index, mode="collapsed", similarity_top_k=2)
    plain = [h.node.node_id for h in by_similarity.retrieve(question)]
    assert plain == [h.node.node_id for h in collapsed.retrieve(question)]  # coverage 0: similarity order
    assert not best_per_part <= set(plain)  # the second best chunk serves the first part again
    covering = HierarchicalRetriever.from_index(flat_index, coverage=0.3, **whole)
    assert best_per_part <= {h.node.node_id for h in covering.retrieve(question)}


def test_questions_in_a_text():
    assert questions_in("Who built it? When did it open?") == ["Who built it?", "When did it open?"]
    assert questions_in("What is the Amazon?") == [] and questions_in("Summarise it. What is X?") == []
    assert questions_in("I study Dr. Smith's work. What did he find? And when? Thanks.") == [
        "I study Dr. Smith's work. What did he find?",
        "And when? Thanks.",
    ]
    # typed without question marks (as a third of the held-out SQuAD questions are): a capitalised question word
    # inside a sentence starts the next question, and an unpunctuated last sentence that opens with one is one
    assert questions_in("Purpose of Telnet What was the purpose of CSNET") == [
        "Purpose of Telnet",
        "What was the purpose of CSNET",
    ]
    assert questions_in("Who funds the IPCC? What was CSNET") == ["Who funds the IPCC?", "What was CSNET"]
    assert questions_in('What is logging? Who said it could reach a "tipping point?"') == [
        "What is logging?",
        'Who said it could reach a "tipping point?"',
    ]
    assert questions_in("What year was How to Train Your Dragon released?") == []  # "How to": a title
    assert questions_in("Tell me about X. Who made it") == [] and questions_in("What is X") == []


async def test_evidence_searches_each_question_of_a_text(semantic_index):
    index, _ = semantic_index
    first, second = "Which animals live in the Amazon rainforest?", "What is the rainforest's climate like?"
    question = f"{first} {second}"
    settings = {"mode": "evidence", "similarity_top_k": 4}
    per_part = [HierarchicalRetriever.from_index(index, **settings).retrieve(q) for q in (first, second)]
    retriever = HierarchicalRetriever.from_index(index, **settings)  # split_questions=True
    hits = [h.node.node_id for h in retriever.retrieve(question)]
    interleaved = [part[rank].node.node_id for rank in range(4) for part in per_part]
    assert hits == list(dict.fromkeys(interleaved))[:4]  # each part's best before either part's second
    assert hits == [h.node.node_id for h in await retriever.aretrieve(question)]
    best = {per_part[0][0].node.node_id, per_part[1][0].node.node_id}
    assert len(best) == 2 and best == set(hits[:2])
    whole = HierarchicalRetriever.from_index(index, split_questions=False, **settings)
    assert not best <= {h.node.node_id for h in whole.retrieve(question)[:2]}  # the whole text's two best: one part
    custom = {"query_str": question, "custom_embedding_strs": [second, first]}  # its own strings: searched whole
    assert [h.node.node_id for h in retriever.retrieve(QueryBundle(**custom))] == [
        h.node.node_id for h in whole.retrieve(QueryBundle(**custom))
    ]
    assert retriever._parts(QueryBundle(f"{first[:-1]} {second[:-1]}")) == [first[:-1], second[:-1]]  # no "?"
    two_places = HierarchicalRetriever.from_index(index, mode="evidence", similarity_top_k=2)
    three = QueryBundle(f"{question} Who lives there?")  # more questions than places: the last takes the rest
    assert two_places._parts(three) == [first, f"{second} Who lives there?"]
    budget = 200  # the tree as the source of candidates, a token budget
    tree = HierarchicalRetriever.from_index(index, evidence_source="tree", token_budget=budget, **settings)
    found = tree.retrieve(question)
    assert [h.node.node_id for h in await tree.aretrieve(question)] == [h.node.node_id for h in found]
    tokenizer = get_tokenizer()
    assert found and sum(len(tokenizer(h.node.get_content(MetadataMode.NONE))) for h in found) <= budget


@pytest.mark.parametrize("mode", ["collapsed", "evidence"])
def test_token_budget(semantic_index, mode):
    index, _ = semantic_index
    tokenizer = get_tokenizer()
    full = HierarchicalRetriever.from_index(index, mode=mode, similarity_top_k=10).retrieve(QUESTION)
    hits = HierarchicalRetriever.from_index(index, mode=mode, similarity_top_k=10, token_budget=300).retrieve(QUESTION)
    used = sum(len(tokenizer(h.node.get_content(MetadataMode.NONE))) for h in hits)
    assert 0 < used <= 300 and len(hits) < len(full)
    order = [h.node.node_id for h in full]
    assert [order.index(h.node.node_id) for h in hits] == sorted(order.index(h.node.node_id) for h in hits)


async def test_async_matches_sync(semantic_index):
    index, _ = semantic_index
    for mode in ("collapsed", "tree", "evidence"):
        retriever = HierarchicalRetriever.from_index(index, mode=mode, similarity_top_k=5, expand_children=True)
        sync = [(h.node.node_id, round(h.score, 6)) for h in retriever.retrieve(QUESTION)]
        assert [(h.node.node_id, round(h.score, 6)) for h in await retriever.aretrieve(QUESTION)] == sync


def test_from_persist_dir_with_and_without_manifest(semantic_index, embed_model, tmp_path):
    index, folder = semantic_index
    manifest = read_manifest(folder)
    assert (
        manifest["nodes_per_level"]["1"] > 0
        and manifest["builder"]["class_name"] == "SemanticChunkingSummaryNodeBuilder"
    )
    loaded = HierarchicalRetriever.from_persist_dir(folder, embed_model=embed_model, mode="tree")
    assert loaded.root_ids() == manifest["root_ids"]
    scanned = HierarchicalRetriever.from_index(index, mode="tree")
    assert sorted(scanned.root_ids()) == sorted(manifest["root_ids"])
    assert [h.node.node_id for h in loaded.retrieve(QUESTION)] == [h.node.node_id for h in scanned.retrieve(QUESTION)]
    with pytest.raises(Exception, match="holds no index"):
        HierarchicalRetriever.from_persist_dir(tmp_path, embed_model=embed_model)


def test_persist_writes_a_folder_that_retrieves_the_same_with_the_same_settings(semantic_index, embed_model, tmp_path):
    index, _ = semantic_index
    retriever = HierarchicalRetriever.from_index(index, mode="tree", similarity_top_k=4, beam_width=2)
    expected = [(h.node.node_id, round(h.score, 6)) for h in retriever.retrieve(QUESTION)]
    retriever.persist(tmp_path / "saved")
    with pytest.raises(InputDataError, match="holds an index written by `kgplus ingest`"):
        retriever.persist(semantic_index[1])  # would lose the index's own files
    loaded = HierarchicalRetriever.from_persist_dir(tmp_path / "saved", embed_model=embed_model)
    assert (loaded.mode, loaded.similarity_top_k, loaded.beam_width) == ("tree", 4, 2)
    assert loaded.root_ids() == retriever.root_ids()
    assert [(h.node.node_id, round(h.score, 6)) for h in loaded.retrieve(QUESTION)] == expected
    overridden = HierarchicalRetriever.from_persist_dir(tmp_path / "saved", embed_model=embed_model, mode="collapsed")
    assert overridden.mode == "collapsed" and len(overridden.retrieve(QUESTION)) == 4
    evidence = HierarchicalRetriever.from_index(
        index, mode="evidence", coverage=0.7, summary_margin=0.2, split_questions=False
    )
    evidence.persist(tmp_path / "evidence")
    loaded = HierarchicalRetriever.from_persist_dir(tmp_path / "evidence", embed_model=embed_model)
    assert (loaded.mode, loaded.coverage, loaded.summary_margin, loaded.split_questions) == (
        "evidence",
        0.7,
        0.2,
        False,
    )
    settings = json.loads((tmp_path / "saved" / "retriever.json").read_text())
    for key in ("summary_margin", "coverage", "evidence_source", "split_questions"):  # written before they existed
        settings.pop(key)
    saved = tmp_path / "saved"

    def write_settings(text: str, *, sealed: bool) -> None:
        (saved / "retriever.json").write_text(text, encoding="utf-8")
        if sealed:  # as the version that wrote it sealed it
            stamp = json.loads((saved / "ingest.json").read_text())
            stamp["files"]["retriever.json"] = hashlib.sha256(text.encode()).hexdigest()
            (saved / "ingest.json").write_text(json.dumps(stamp), encoding="utf-8")

    write_settings(json.dumps(settings), sealed=True)
    old = HierarchicalRetriever.from_persist_dir(saved, embed_model=embed_model)
    assert old.mode == "tree" and old.coverage == 0.0 and old.split_questions is True
    write_settings("{not json", sealed=False)
    with pytest.raises(InputDataError, match="retriever.json is not the file the last ingest wrote"):
        HierarchicalRetriever.from_persist_dir(saved, embed_model=embed_model)
    write_settings("{not json", sealed=True)
    with pytest.raises(Exception, match="retriever's settings"):
        HierarchicalRetriever.from_persist_dir(saved, embed_model=embed_model)


def test_missing_vectors_are_embedded_on_demand(semantic_index):
    index, _ = semantic_index
    retriever = HierarchicalRetriever.from_index(index, mode="tree", similarity_top_k=5)
    expected = [h.node.node_id for h in retriever.retrieve(QUESTION)]
    fresh = HierarchicalRetriever.from_index(index, mode="tree", similarity_top_k=5)
    root = fresh.root_ids()[0]
    saved = index.vector_store.data.embedding_dict.pop(root)
    try:
        assert [h.node.node_id for h in fresh.retrieve(QUESTION)] == expected
    finally:
        index.vector_store.data.embedding_dict[root] = saved


def test_bad_settings_are_rejected(flat_index):
    for kwargs in (
        {"mode": "graph"},
        {"similarity_top_k": 0},
        {"beam_width": 0},
        {"token_budget": 0},
        {"coverage": 1.5},
        {"evidence_source": "flat"},
    ):
        with pytest.raises(ValueError):
            HierarchicalRetriever.from_index(flat_index, **kwargs)


# ---------------------------------------------------------------------- kgplus ingest / retrieve


def retrieve_json(capsys, index_dir, *options):
    capsys.readouterr()
    assert main(["retrieve", QUESTION, "--index", str(index_dir), "--json", *options]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.model  # the CLI loads the real embedding model
@pytest.mark.parametrize("hierarchy", ["semantic", "raptor"])
def test_cli_ingest_with_a_hierarchy_then_retrieve(tmp_path, capsys, hierarchy):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        (sample.SAMPLE_DIR / "longdoc.jsonl").read_text() + (sample.SAMPLE_DOCS.read_text().splitlines()[0] + "\n")
    )
    index_dir = tmp_path / "index"
    code = main(
        [
            "ingest",
            str(docs),
            "--index",
            str(index_dir),
            "--hierarchy",
            hierarchy,
            "--summarizer",
            "extractive",
            "--chunk-size",
            "192",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and f"hierarchy ({hierarchy}): level 0:" in out and "level 1:" in out
    manifest = read_manifest(index_dir)
    assert manifest["builder"]["class_name"].lower().startswith(hierarchy[:4])
    default = retrieve_json(capsys, index_dir, "--top-k", "5")["sources"]  # evidence: the chunks under summaries
    assert len(default) == 5 and all(s["level"] == 0 for s in default)
    for mode in ("collapsed", "tree"):
        record = retrieve_json(capsys, index_dir, "--retrieval", mode, "--top-k", "30")
        sources = record["sources"]
        assert sources and {"text", "level", "id", "doc_ids", "score"} <= set(sources[0])
        assert any(s["level"] >= 1 for s in sources) and any(s["level"] == 0 for s in sources)
        for s in sources:
            assert s["text"].strip() and s["doc_ids"]
            assert s["id"] == (s["doc_ids"][0] if len(s["doc_ids"]) == 1 else None)
    capped = retrieve_json(capsys, index_dir, "--retrieval", "tree", "--top-k", "2")
    assert len(capped["sources"]) == 2


@pytest.mark.model  # the CLI loads the real embedding model
def test_cli_retrieve_tree_on_an_index_without_hierarchy(tmp_path, capsys):
    index_dir = tmp_path / "index"
    assert main(["ingest", str(sample.SAMPLE_DOCS), "--index", str(index_dir)]) == 0
    record = retrieve_json(capsys, index_dir, "--retrieval", "tree", "--top-k", "3")
    assert len(record["sources"]) == 3 and all(s["level"] == 0 for s in record["sources"])
    assert read_manifest(index_dir) is None


@pytest.mark.slow
def test_cli_raptor_with_the_real_local_llm_then_query(tmp_path, capsys):
    docs = tmp_path / "docs.jsonl"
    record = json.loads((sample.SAMPLE_DIR / "longdoc.jsonl").read_text())
    record["text"] = "\n\n".join(record["text"].split("\n\n")[:6])  # keep it small: a few chunks, few LLM calls
    docs.write_text(json.dumps(record) + "\n")
    index_dir = tmp_path / "index"
    args = [
        "ingest",
        str(docs),
        "--index",
        str(index_dir),
        "--hierarchy",
        "raptor",
        "--llm",
        "qwen2.5-coder-0.5b",
        "--chunk-size",
        "160",
    ]
    assert main(args) == 0
    manifest = read_manifest(index_dir)
    assert manifest["failed_clusters"] == [] and int(manifest["nodes_per_level"]["1"]) >= 1
    capsys.readouterr()
    query = [
        "query",
        "What is the Amazon rainforest?",
        "--index",
        str(index_dir),
        "--retrieval",
        "tree",
        "--top-k",
        "3",
    ]
    assert main([*query, "--llm", "qwen2.5-coder-0.5b", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert answer["answer"].strip() and len(answer["sources"]) == 3
