"""Summary node builders (semantic and RAPTOR) on the real embedding model.

Summaries are written by the real ExtractiveSummarizer (no LLM) unless a test is about the LLM path: then the
real 0.5B model (slow tests), or a scripted LLM where a test must inject a failure, an empty reply, or measure
concurrency (said in each such test).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from llama_index.core import Document
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.ingestion import IngestionCache, IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from llama_index_kgplus import _sample as sample
from llama_index_kgplus._testing import ScriptedLLM
from llama_index_kgplus._vectors import mean_pairwise_cosine
from llama_index_kgplus.errors import InputDataError, KGPlusSetupError, SummarizationError
from llama_index_kgplus.hierarchy import RaptorSummaryNodeBuilder, SemanticChunkingSummaryNodeBuilder
from llama_index_kgplus.hierarchy._parents import node_level
from llama_index_kgplus.hierarchy._retriever import hierarchy_manifest
from llama_index_kgplus.hierarchy._semantic import segment, similarity_threshold
from llama_index_kgplus.summarizers import AbstractiveSummarizer, ExtractiveSummarizer, TwoStageSummarizer

VOLCANO = [
    "Volcanoes form where magma from the mantle rises through cracks in the crust and erupts as lava.",
    "Basalt lava flows from shield volcanoes are runny and spread over wide areas before they cool.",
    "Explosive eruptions throw ash and pumice high into the air when gas-rich magma reaches the surface.",
    "Geologists measure earthquakes and ground swelling to forecast when a volcano may erupt again.",
]
BREAD = [
    "To bake bread, mix flour, water, salt and yeast, then knead the dough until it is smooth and elastic.",
    "The dough rises in a warm kitchen for an hour while the yeast ferments sugars and releases gas.",
    "Shape the risen dough into a loaf, score the top with a knife and bake it in a hot oven.",
    "A golden crust and a hollow sound when tapped show that the loaf of bread is fully baked.",
]
FOOTBALL = [
    "The football match ended two goals to one after the striker scored a late header from a corner.",
    "The goalkeeper saved a penalty in the first half and the referee showed two yellow cards.",
    "Fans in the stadium sang throughout the game as the home team pressed for a winning goal.",
    "The coach praised the midfielders for their passing and the defenders for blocking shots.",
]
DOCS = {"geo-bread": VOLCANO + BREAD, "football": FOOTBALL}


def make_nodes(embed_model, docs: dict[str, list[str]] = DOCS) -> list[TextNode]:
    """One node per paragraph, like a splitter's output: SOURCE relationship, doc_id/title, positions."""
    nodes = []
    for doc_id, paragraphs in docs.items():
        position = 0
        for i, text in enumerate(paragraphs):
            node = TextNode(
                id_=f"{doc_id}-{i}",
                text=text,
                metadata={"doc_id": doc_id, "title": doc_id.title(), "para": i},
                excluded_embed_metadata_keys=["doc_id"],
                excluded_llm_metadata_keys=["doc_id"],
                start_char_idx=position,
                end_char_idx=position + len(text),
            )
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc_id)
            nodes.append(node)
            position += len(text) + 2
    vectors = embed_model.get_text_embedding_batch([n.text for n in nodes])
    for node, vector in zip(nodes, vectors):
        node.embedding = vector
    return nodes


@pytest.fixture(scope="module")
def topic_nodes(embed_model):
    base = make_nodes(embed_model)
    return lambda: [n.model_copy(deep=True) for n in base]


@pytest.fixture(scope="module")
def longdoc_nodes(embed_model):
    """The bundled long article in ~120-token chunks (about 40), embedded once."""
    import json

    record = json.loads(sample.SAMPLE_DIR.joinpath("longdoc.jsonl").read_text().splitlines()[0])
    doc = Document(id_=record["id"], text=record["text"], metadata={"doc_id": record["id"], "title": record["title"]})
    nodes = SentenceSplitter(chunk_size=128, chunk_overlap=0).get_nodes_from_documents([doc])
    for node, vector in zip(nodes, embed_model.get_text_embedding_batch([n.text for n in nodes])):
        node.embedding = vector
    return lambda: [n.model_copy(deep=True) for n in nodes]


def extractive(embed_model=None) -> ExtractiveSummarizer:
    return ExtractiveSummarizer(embed_model=embed_model, max_sentences=2)


def semantic(embed_model, **kwargs) -> SemanticChunkingSummaryNodeBuilder:
    kwargs.setdefault("summarizer", extractive())
    return SemanticChunkingSummaryNodeBuilder(embed_model=embed_model, show_progress=False, **kwargs)


def raptor(embed_model, **kwargs) -> RaptorSummaryNodeBuilder:
    kwargs.setdefault("summarizer", extractive())
    return RaptorSummaryNodeBuilder(embed_model=embed_model, show_progress=False, **kwargs)


BUILDERS = {"semantic": semantic, "raptor": raptor}


def summaries(nodes) -> list[TextNode]:
    return [n for n in nodes if node_level(n) > 0]


def assert_linked_both_ways(nodes) -> None:
    """Every CHILD link has the matching PARENT/parent_ids entry and vice versa; levels increase upwards."""
    by_id = {n.node_id: n for n in nodes}
    assert len(by_id) == len(nodes), "node ids must be unique"
    for parent in summaries(nodes):
        children = [by_id[c.node_id] for c in parent.relationships[NodeRelationship.CHILD]]
        assert len(children) == parent.metadata["child_count"] >= 2
        assert parent.metadata["level"] == max(node_level(c) for c in children) + 1
        for child in children:
            assert parent.node_id in child.metadata["parent_ids"]
            assert NodeRelationship.PARENT in child.relationships
    for node in nodes:
        ids = node.metadata.get("parent_ids", [])
        if NodeRelationship.PARENT in node.relationships:
            assert node.relationships[NodeRelationship.PARENT].node_id == ids[0]
        else:
            assert not ids
        for pid in ids:
            assert node.node_id in [c.node_id for c in by_id[pid].relationships[NodeRelationship.CHILD]]


# ---------------------------------------------------------------------- semantic builder


def test_segment_cuts_below_threshold_splits_large_and_merges_singletons():
    sims = np.array([0.9, 0.9, 0.1, 0.9, 0.2, 0.8])
    assert segment(sims, 0.5, max_size=10, merge_singletons=False) == [(0, 3), (3, 5), (5, 7)]
    # a lone item joins the neighbour it is more similar to
    assert segment(np.array([0.9, 0.1, 0.3]), 0.5, max_size=10) == [(0, 2), (2, 4)]
    assert segment(np.array([0.9, 0.1, 0.3]), 0.5, max_size=10, merge_singletons=False) == [(0, 2), (2, 3), (3, 4)]
    # too large: split at the weakest link
    assert segment(np.array([0.9, 0.8, 0.6, 0.9, 0.95]), 0.0, max_size=3) == [(0, 3), (3, 6)]
    # identical vectors: no cut from the threshold, balanced split by size only
    assert segment(np.ones(7), 1.0, max_size=4) == [(0, 4), (4, 8)]
    assert segment(np.zeros(0), 0.5, max_size=4) == [(0, 1)]


def test_thresholds_follow_their_definitions():
    sims = np.array([0.2, 0.5, 0.6, 0.7, 0.8, 0.9])
    assert similarity_threshold(sims, "percentile", cluster_size=5) == pytest.approx(np.percentile(sims, 20))
    assert similarity_threshold(sims, "percentile", amount=50) == pytest.approx(np.median(sims))
    assert similarity_threshold(sims, "stddev") == pytest.approx(sims.mean() - sims.std())
    q1, q3 = np.percentile(sims, [25, 75])
    assert similarity_threshold(sims, "iqr", amount=1.0) == pytest.approx(q1 - (q3 - q1))
    with pytest.raises(ValueError):
        similarity_threshold(np.zeros(0))


def test_semantic_cuts_at_the_topic_change_and_never_across_documents(embed_model, topic_nodes):
    builder = semantic(embed_model, cluster_size=4)
    nodes = topic_nodes()
    out = builder(nodes)
    assert out[: len(nodes)] == nodes  # the chunks come first, in their order
    assert 4 in builder.breakpoints_["geo-bread"]  # volcanoes | bread
    sims = builder.similarities_["geo-bread"]
    assert len(sims) == 7 and int(np.argmin(sims)) == 3
    assert builder.threshold_ == pytest.approx(
        np.percentile(np.concatenate([builder.similarities_[k] for k in DOCS]), 100 / 4)
    )
    made = summaries(out)
    assert builder.n_summaries_ == len(made) >= 3 and builder.failed_clusters_ == []
    for parent in made:
        child_ids = [c.node_id for c in parent.relationships[NodeRelationship.CHILD]]
        doc = parent.metadata["doc_id"]
        assert all(c.startswith(doc + "-") for c in child_ids)
        assert parent.metadata["doc_ids"] == [doc] and parent.ref_doc_id == doc
        assert parent.metadata["title"] == doc.title() and "para" not in parent.metadata
        assert parent.metadata["level"] == 1 and parent.embedding is not None
        positions = [int(c.rsplit("-", 1)[1]) for c in child_ids]
        assert all(p < 4 for p in positions) or all(p >= 4 for p in positions)  # one topic per summary
    assert_linked_both_ways(out)


def test_semantic_metadata_is_hidden_from_embedding_and_llm(embed_model, topic_nodes):
    out = semantic(embed_model, cluster_size=4)(topic_nodes())
    parent = summaries(out)[0]
    for key in ("level", "child_count", "doc_ids", "doc_id"):
        assert key in parent.excluded_embed_metadata_keys and key in parent.excluded_llm_metadata_keys
    child = out[0]
    assert "level" in child.excluded_embed_metadata_keys and "parent_ids" in child.excluded_llm_metadata_keys
    assert child.metadata["level"] == 0


def test_semantic_second_level_summarises_the_summaries(embed_model, topic_nodes):
    builder = semantic(embed_model, cluster_size=2, max_levels=2, max_cluster_size=2)
    out = builder(topic_nodes())
    levels = [n.metadata["level"] for n in summaries(out)]
    assert 2 in levels and len(builder.thresholds_) == 2
    assert_linked_both_ways(out)


def test_semantic_fixed_thresholds_cluster_one_document_as_the_whole_run_did(embed_model, topic_nodes):
    learned = semantic(embed_model, cluster_size=2, max_levels=2, max_cluster_size=2)
    learned(topic_nodes())
    # the thresholds of the whole run, given to a build of one document: its clusters are the run's
    fixed = semantic(embed_model, cluster_size=2, max_levels=2, max_cluster_size=2)
    fixed.similarity_thresholds = learned.thresholds_
    fixed([n for n in topic_nodes() if n.ref_doc_id == "geo-bread"])
    assert fixed.thresholds_ == learned.thresholds_
    assert fixed.breakpoints_["geo-bread"] == learned.breakpoints_["geo-bread"]
    alone = semantic(embed_model, cluster_size=2, max_levels=2, max_cluster_size=2)
    alone([n for n in topic_nodes() if n.ref_doc_id == "geo-bread"])  # learns from this document's curve alone
    assert alone.threshold_ != learned.threshold_
    # a level beyond the list learns its own threshold
    fixed.similarity_thresholds = learned.thresholds_[:1]
    fixed(topic_nodes())
    assert fixed.thresholds_[0] == learned.thresholds_[0] and fixed.thresholds_[1] == pytest.approx(
        learned.thresholds_[1]
    )
    assert hierarchy_manifest([], fixed)["thresholds"] == fixed.thresholds_  # what a sync reuses


@pytest.mark.parametrize("method", ["stddev", "iqr"])
def test_semantic_other_threshold_methods(embed_model, topic_nodes, method):
    builder = semantic(embed_model, threshold_method=method, cluster_size=4)
    out = builder(topic_nodes())
    assert builder.threshold_ < float(np.median(np.concatenate(list(builder.similarities_.values()))))
    assert_linked_both_ways(out)


# ---------------------------------------------------------------------- RAPTOR builder


def test_raptor_builds_a_tree_with_umap_and_bic(embed_model, longdoc_nodes):
    nodes = longdoc_nodes()
    assert len(nodes) > 20
    builder = raptor(embed_model, max_levels=3)
    out = builder(nodes)
    assert builder.reducers_[0] == "umap"
    bic = builder.bic_[0]
    assert builder.n_components_[0] == int(np.argmin(bic)) + 1
    assert len(builder.labels_[0]) == len(nodes) and builder.level_node_ids_[0] == [n.node_id for n in nodes]
    made = summaries(out)
    assert builder.n_summaries_ == len(made) > 1
    assert all(n.metadata["child_count"] <= builder.max_cluster_size for n in made)
    assert max(n.metadata["level"] for n in made) == builder.n_levels_ >= 2
    # every chunk has a parent unless it was a cluster of its own
    orphans = [n for n in nodes if NodeRelationship.PARENT not in n.relationships]
    assert len(orphans) <= builder.n_clusters_[0] - sum(1 for p in made if p.metadata["level"] == 1)
    assert_linked_both_ways(out)


def test_raptor_is_deterministic_for_a_seed(embed_model, longdoc_nodes):
    def run(seed):
        builder = raptor(embed_model, random_state=seed)
        out = builder(longdoc_nodes())
        return [(n.node_id, n.text) for n in summaries(out)], [lab.tolist() for lab in builder.labels_]

    assert run(3) == run(3)


def test_raptor_soft_membership_primary_parent_first(embed_model, longdoc_nodes):
    builder = raptor(embed_model, membership_threshold=0.01, max_levels=1)
    out = builder(longdoc_nodes())
    by_id = {n.node_id: n for n in out}
    ids = builder.level_node_ids_[0]
    for node_id in ids:
        node = by_id[node_id]
        if NodeRelationship.PARENT in node.relationships:
            parent = by_id[node.relationships[NodeRelationship.PARENT].node_id]
            assert node.metadata["parent_ids"][0] == parent.node_id
    assert_linked_both_ways(out)


def test_raptor_summaries_across_documents_list_their_sources(embed_model, topic_nodes):
    builder = raptor(embed_model, max_levels=3, min_cluster_similarity=None)
    out = builder(topic_nodes())
    top = max(summaries(out), key=lambda n: n.metadata["level"])
    assert set(top.metadata["doc_ids"]) == set(DOCS)
    assert "doc_id" not in top.metadata and top.ref_doc_id is None
    assert builder.unrelated_clusters_ == [[], [], []]
    assert_linked_both_ways(out)


def test_raptor_gives_nodes_that_share_no_topic_no_common_summary(embed_model, topic_nodes):
    """At the third level two nodes are left, the summaries of the volcano-and-bread document and of the football
    one; the mixture pairs them anyway, but a summary of both would mix unrelated texts, so they stay roots."""
    builder = raptor(embed_model, max_levels=3)
    out = builder(topic_nodes())
    by_id = {n.node_id: n for n in out}
    assert builder.n_levels_ == 2 and builder.unrelated_clusters_[:2] == [[], []]
    (pair,) = builder.unrelated_clusters_[2]
    assert mean_pairwise_cosine([by_id[i].embedding for i in pair]) < builder.min_cluster_similarity
    assert {by_id[i].metadata["doc_ids"][0] for i in pair} == set(DOCS)
    assert all(len(s.metadata["doc_ids"]) == 1 for s in summaries(out))
    assert all(NodeRelationship.PARENT not in by_id[i].relationships for i in pair)
    assert_linked_both_ways(out)


def test_mean_pairwise_cosine_leaves_out_each_row_with_itself():
    assert mean_pairwise_cosine([[1.0, 0.0], [0.0, 2.0]]) == 0.0
    assert mean_pairwise_cosine([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]) == pytest.approx(1.0)
    assert mean_pairwise_cosine([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]) == pytest.approx((2 * 0.5**0.5) / 3)
    assert mean_pairwise_cosine([[1.0, 0.0]]) == mean_pairwise_cosine([]) == 1.0


def test_umap_compiled_code_is_cached_on_disk_for_the_next_process():
    """numba compiles UMAP's functions in every new process (15-25 s on 2 cores) unless they are cached on disk;
    umap-learn does not ask for it, the RAPTOR builders' reduction step does."""
    from pathlib import Path

    import umap.umap_

    from llama_index_kgplus.hierarchy._clustering import ClusterSettings, reduce

    _, used = reduce(np.random.default_rng(0).normal(size=(30, 16)), ClusterSettings())
    assert used == "umap"
    cache = umap.umap_.smooth_knn_dist._cache
    assert type(cache).__name__ == "FunctionCache"
    assert list(Path(cache.cache_path).glob("umap_.smooth_knn_dist-*.nbi"))


def test_raptor_pca_reducer_never_imports_umap(embed_model, topic_nodes):
    builder = raptor(embed_model, reducer="pca", criterion="aic")
    out = builder(topic_nodes())
    assert set(builder.reducers_) <= {"pca", "none"} and len(builder.aic_[0]) >= 1
    assert_linked_both_ways(out)


# ---------------------------------------------------------------------- both builders: edge cases and bad input


@pytest.mark.parametrize("kind", BUILDERS)
@pytest.mark.parametrize("n", [0, 1])
def test_fewer_than_two_nodes_pass_through(embed_model, topic_nodes, kind, n):
    builder = BUILDERS[kind](embed_model)
    nodes = topic_nodes()[:n]
    assert builder(nodes) == nodes and builder.n_summaries_ == 0 and builder.n_clusters_ == []
    if kind == "semantic":
        assert builder.threshold_ is None and builder.similarities_ == {}
    else:
        assert builder.bic_ == [] and builder.n_levels_ == 0


def test_learned_attributes_need_a_run(embed_model):
    with pytest.raises(AttributeError, match="set when the builder runs"):
        _ = semantic(embed_model).threshold_
    with pytest.raises(AttributeError, match="cache hit does not run it"):
        _ = raptor(embed_model).bic_


@pytest.mark.parametrize("kind", BUILDERS)
def test_two_nodes_make_one_summary(embed_model, topic_nodes, kind):
    builder = BUILDERS[kind](embed_model)
    out = builder(topic_nodes()[:2])
    assert len(summaries(out)) == 1 and summaries(out)[0].metadata["child_count"] == 2
    assert_linked_both_ways(out)


@pytest.mark.parametrize("kind", BUILDERS)
def test_identical_vectors(embed_model, topic_nodes, kind):
    nodes = topic_nodes()
    for node in nodes:
        node.embedding = list(nodes[0].embedding)
    builder = BUILDERS[kind](embed_model, max_cluster_size=5)
    out = builder(nodes)
    made = summaries(out)
    assert made and all(p.metadata["child_count"] <= 5 for p in made)
    assert_linked_both_ways(out)


@pytest.mark.parametrize("kind", BUILDERS)
def test_nodes_without_text_are_kept_and_left_out(embed_model, topic_nodes, kind, caplog):
    nodes = topic_nodes()
    blank = TextNode(id_="blank", text="  ", metadata={"doc_id": "geo-bread"})
    out = BUILDERS[kind](embed_model)([*nodes[:4], blank, *nodes[4:]])
    assert blank in out and "level" not in blank.metadata and NodeRelationship.PARENT not in blank.relationships
    assert "have no text" in caplog.text
    assert all("blank" not in [c.node_id for c in p.relationships[NodeRelationship.CHILD]] for p in summaries(out))


@pytest.mark.parametrize("kind", BUILDERS)
def test_missing_embeddings_are_embedded_and_existing_ones_reused(embed_model, topic_nodes, kind):
    nodes = topic_nodes()
    kept = list(nodes[1].embedding)
    nodes[0].embedding = None
    nodes[1].embedding = kept[::-1]  # a deliberately different vector: it must not be recomputed
    BUILDERS[kind](embed_model)(nodes)
    assert nodes[0].embedding is not None and len(nodes[0].embedding) == len(kept)
    assert nodes[1].embedding == kept[::-1]


@pytest.mark.parametrize("kind", BUILDERS)
def test_no_embeddings_and_no_embed_model_is_a_clear_error(embed_model, topic_nodes, kind, monkeypatch):
    import llama_index.core.settings as settings_module
    from llama_index.core import Settings

    monkeypatch.setattr(Settings, "_embed_model", None)

    def no_default(*args, **kwargs):
        raise ImportError("no OpenAI here")

    monkeypatch.setattr(settings_module, "resolve_embed_model", no_default)
    nodes = topic_nodes()
    nodes[2].embedding = None
    builder = BUILDERS[kind](None, summarizer=extractive(embed_model), embedding_mode="mean")
    with pytest.raises(InputDataError, match="1 of 12 nodes have no embedding.*geo-bread-2"):
        builder(nodes)


@pytest.mark.parametrize("kind", BUILDERS)
def test_mixed_dimensions_are_a_clear_error(embed_model, topic_nodes, kind):
    nodes = topic_nodes()
    nodes[5].embedding = nodes[5].embedding[:100]
    with pytest.raises(
        InputDataError, match=r"different dimensions: 11 of dimension 384.*1 of dimension 100 \(e.g. geo-bread-5\)"
    ):
        BUILDERS[kind](embed_model)(nodes)


@pytest.mark.parametrize("kind", BUILDERS)
def test_summaries_and_higher_levels_in_the_input_pass_through(embed_model, topic_nodes, kind):
    first = BUILDERS[kind](embed_model)(topic_nodes())
    again = BUILDERS[kind](embed_model)
    second = again([n.model_copy(deep=True) for n in first])
    assert len(second) >= len(first)
    assert {n.node_id for n in summaries(first)} <= {n.node_id for n in second}


@pytest.mark.parametrize("kind", BUILDERS)
def test_mean_embedding_mode(embed_model, topic_nodes, kind):
    out = BUILDERS[kind](embed_model, embedding_mode="mean")(topic_nodes())
    by_id = {n.node_id: n for n in out}
    assert summaries(out)  # (the summarizer gets the builder's embedding model in this mode too)
    for parent in summaries(out):
        children = np.array([by_id[c.node_id].embedding for c in parent.relationships[NodeRelationship.CHILD]])
        mean = children.mean(axis=0)
        assert np.allclose(parent.embedding, mean / np.linalg.norm(mean))


# ---------------------------------------------------------------------- failures, retries, concurrency


def first_words(prompt: str) -> str:
    """A stand-in summary: the first words of each numbered passage of the prompt."""
    passages = [p.split("\n")[0] for p in prompt.split("[")[1:] if "] " in p]
    return "In short: " + " and ".join(" ".join(p.split("] ", 1)[1].split()[:4]) for p in passages) + "."


def two_stage(llm, embed_model) -> TwoStageSummarizer:
    return TwoStageSummarizer(extractive=extractive(embed_model), abstractive=AbstractiveSummarizer(llm=llm))


@pytest.mark.parametrize("kind", BUILDERS)
def test_a_failing_cluster_is_retried_reported_and_its_children_kept(embed_model, topic_nodes, kind, caplog):
    llm = ScriptedLLM(fail_on="shield volcanoes", respond=first_words)
    builder = BUILDERS[kind](embed_model, summarizer=two_stage(llm, embed_model), max_retries=2, max_levels=1)
    nodes = topic_nodes()
    with caplog.at_level(logging.WARNING):
        out = builder(nodes)
    assert out[: len(nodes)] == nodes  # nothing lost
    (failed,) = builder.failed_clusters_
    assert "geo-bread-1" in failed.child_ids and "scripted failure" in failed.error and failed.level == 1
    assert sum("shield volcanoes" in p for p in llm.prompts) == 3  # 1 try + 2 retries
    assert "tries: 3" in caplog.text
    by_id = {n.node_id: n for n in out}
    only_there = [i for i in failed.child_ids if not by_id[i].metadata.get("parent_ids")]
    assert "geo-bread-1" in only_there
    assert summaries(out) and builder.n_summaries_ == len(summaries(out))
    assert_linked_both_ways(out)


class Delegating:
    """A Summarizer without ``aprefetch``: each cluster embeds its own sentences."""

    def __init__(self, inner: ExtractiveSummarizer) -> None:
        self.inner = inner

    def summarize(self, texts):
        return self.inner.summarize(texts)

    async def asummarize(self, texts):
        return await self.inner.asummarize(texts)


class PrefetchFails(ExtractiveSummarizer):
    async def aprefetch(self, groups, show_progress=False):
        raise RuntimeError("no batch today")


@pytest.mark.parametrize("kind", BUILDERS)
def test_an_extractive_level_embeds_its_sentences_in_one_batch_with_the_same_summaries(
    embed_model, longdoc_nodes, kind, monkeypatch
):
    calls: list[int] = []
    concurrent = type(embed_model).aget_text_embedding_batch

    async def counted(self, texts, **kwargs):
        calls.append(len(texts))
        return await concurrent(self, texts, **kwargs)

    monkeypatch.setattr(type(embed_model), "aget_text_embedding_batch", counted)
    prefetched = BUILDERS[kind](embed_model, max_levels=1, embedding_mode="mean")(longdoc_nodes())
    one_batch, calls[:] = list(calls), []
    each_own = Delegating(extractive(embed_model))
    unbatched = BUILDERS[kind](embed_model, summarizer=each_own, max_levels=1, embedding_mode="mean")(longdoc_nodes())
    assert [n.text for n in summaries(prefetched)] == [n.text for n in summaries(unbatched)]
    assert len(one_batch) == 1 and len(calls) == len(summaries(unbatched)) > 1 and one_batch[0] == sum(calls)
    failing = BUILDERS[kind](embed_model, summarizer=PrefetchFails(max_sentences=2), max_levels=1)(longdoc_nodes())
    assert [n.text for n in summaries(failing)] == [n.text for n in summaries(unbatched)]  # each did its own


class SameEveryTimeSummarizer(ExtractiveSummarizer):
    """Fails the way a greedy LLM's copy does: asking again would give the same."""

    _calls: int = PrivateAttr(default=0)

    async def asummarize(self, texts, **kwargs):
        self._calls += 1
        raise SummarizationError("the same copy again", retryable=False)


@pytest.mark.parametrize("kind", BUILDERS)
def test_a_failure_that_would_repeat_is_not_retried(embed_model, topic_nodes, kind, caplog):
    summarizer = SameEveryTimeSummarizer(embed_model=embed_model)
    builder = BUILDERS[kind](embed_model, summarizer=summarizer, max_retries=2, max_levels=1)
    nodes = topic_nodes()
    with caplog.at_level(logging.WARNING):
        assert builder(nodes) == nodes
    assert builder.failed_clusters_ and summarizer._calls == len(builder.failed_clusters_)  # one try each
    assert "tries: 1" in caplog.text and "the same copy again" in caplog.text


class NoModelSummarizer(ExtractiveSummarizer):
    async def asummarize(self, texts, **kwargs):
        raise KGPlusSetupError("no LLM is configured")


@pytest.mark.parametrize("kind", BUILDERS)
def test_a_set_up_error_stops_the_run_once_instead_of_failing_every_cluster(embed_model, topic_nodes, kind):
    builder = BUILDERS[kind](embed_model, summarizer=NoModelSummarizer(embed_model=embed_model), max_retries=2)
    with pytest.raises(KGPlusSetupError, match="no LLM is configured"):
        builder(topic_nodes())


@pytest.mark.parametrize("kind", BUILDERS)
def test_an_empty_llm_summary_fails_the_cluster_not_the_run(embed_model, topic_nodes, kind):
    summarizer = two_stage(ScriptedLLM(default=""), embed_model)
    summarizer.extractive_fallback = False
    builder = BUILDERS[kind](embed_model, summarizer=summarizer, max_retries=1)
    nodes = topic_nodes()
    out = builder(nodes)
    assert out == nodes and builder.n_summaries_ == 0
    assert builder.failed_clusters_ and all("empty summary" in f.error for f in builder.failed_clusters_)
    assert all(NodeRelationship.PARENT not in n.relationships for n in nodes)


@pytest.mark.parametrize("kind", BUILDERS)
def test_by_default_an_llm_that_cannot_summarise_gets_the_extractive_summary(embed_model, topic_nodes, kind):
    llm = ScriptedLLM(default="", usage=True)
    builder = BUILDERS[kind](embed_model, summarizer=two_stage(llm, embed_model), max_retries=1, max_levels=1)
    out = builder(topic_nodes())
    made = summaries(out)
    assert made and not builder.failed_clusters_
    assert builder.usage_["extractive_fallbacks"] == len(made) == builder.usage_["calls"]  # no retry after a fallback
    by_id = {n.node_id: n for n in out}
    for parent in made:  # the extractive summary: sentences of its own children
        children = " ".join(by_id[c.node_id].text for c in parent.relationships[NodeRelationship.CHILD])
        assert all(sentence in children for sentence in parent.text.split(". ") if sentence)


@pytest.mark.parametrize("kind", BUILDERS)
def test_an_identical_set_of_children_is_never_summarised_twice(embed_model, topic_nodes, kind):
    llm = ScriptedLLM(respond=first_words, usage=True)
    builder = BUILDERS[kind](embed_model, summarizer=two_stage(llm, embed_model), max_levels=2)
    first = builder(topic_nodes())
    calls = len(llm.prompts)
    assert calls == builder.usage_["calls"] > 0
    (level_one, *_) = builder.level_stats_
    assert level_one["level"] == 1 and level_one["reused"] == 0 and level_one["failed"] == 0
    assert level_one["usage"]["calls"] == level_one["clusters"] and level_one["seconds"] >= 0
    assert sum(s["usage"]["calls"] for s in builder.level_stats_) == calls

    again = builder(topic_nodes())  # the same chunks (a pipeline re-run): every summary is reused, no call
    assert len(llm.prompts) == calls and builder.usage_["calls"] == 0
    assert [s["reused"] for s in builder.level_stats_] == [s["clusters"] for s in builder.level_stats_]
    assert sorted(n.text for n in summaries(again)) == sorted(n.text for n in summaries(first))

    builder.summarizer = two_stage(llm, embed_model).model_copy(update={"extractive_fallback": False})
    builder(topic_nodes())  # other summarizer settings: written anew
    assert len(llm.prompts) > calls


@pytest.mark.parametrize("kind", BUILDERS)
async def test_summaries_run_concurrently_with_a_bounded_worker_count(embed_model, topic_nodes, kind):
    llm = ScriptedLLM(delay=0.05, respond=first_words)
    builder = BUILDERS[kind](
        embed_model, summarizer=two_stage(llm, embed_model), num_workers=2, max_levels=1, max_cluster_size=2
    )
    out = await builder.acall(topic_nodes())
    assert len(summaries(out)) >= 3
    assert llm.max_in_flight == 2
    sync_llm = ScriptedLLM(delay=0.05, respond=first_words)
    sync = BUILDERS[kind](
        embed_model, summarizer=two_stage(sync_llm, embed_model), num_workers=3, max_levels=1, max_cluster_size=2
    )
    sync(topic_nodes())  # the sync call runs the same bounded async jobs
    assert sync_llm.max_in_flight == 3


@pytest.mark.parametrize("kind", BUILDERS)
def test_progress_bar_names_the_builder_and_level(embed_model, topic_nodes, kind, capsys):
    builder = BUILDERS[kind](embed_model)
    builder.show_progress = True
    builder(topic_nodes())
    assert f"{builder.class_name()} level 1" in capsys.readouterr().err


# ---------------------------------------------------------------------- IngestionPipeline and its cache


class CountingExtractive(ExtractiveSummarizer):
    """The real extractive summarizer, counting its calls (to see whether the pipeline ran the builder)."""

    _count: int = PrivateAttr(default=0)

    async def asummarize(self, texts):
        self._count += 1
        return await super().asummarize(texts)


@pytest.mark.parametrize("kind", BUILDERS)
def test_builder_in_a_cached_ingestion_pipeline(embed_model, kind, tmp_path):
    documents = [Document(id_=d, text="\n\n".join(p), metadata={"doc_id": d}) for d, p in DOCS.items()]
    cache = IngestionCache()
    counter = CountingExtractive(max_sentences=2)

    def run(cache=cache, **settings):
        builder = BUILDERS[kind](embed_model, summarizer=counter, **settings)
        pipeline = IngestionPipeline(
            transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0), embed_model, builder], cache=cache
        )
        return pipeline.run(documents=documents)

    first = run()
    calls = counter._count
    assert calls > 0 and summaries(first)
    second = run()
    assert counter._count == calls  # a cache hit: the builder did not run
    assert [(n.node_id, n.text) for n in second] == [(n.node_id, n.text) for n in first]
    assert_linked_both_ways(second)  # relationships survive the cache
    third = run(random_state=1) if kind == "raptor" else run(cluster_size=3)
    assert counter._count > calls  # a changed setting is a miss
    assert summaries(third)
    calls = counter._count
    cache.persist(str(tmp_path / "cache.json"))
    fourth = run(cache=IngestionCache.from_persist_path(str(tmp_path / "cache.json")))
    assert counter._count == calls  # a persisted cache hits too
    assert [n.node_id for n in fourth] == [n.node_id for n in first]


@pytest.mark.parametrize("kind", BUILDERS)
def test_cache_key_follows_the_settings_only(embed_model, kind):
    base = BUILDERS[kind](embed_model).to_dict()
    assert BUILDERS[kind](embed_model, num_workers=9).to_dict() == base  # does not change the output
    assert BUILDERS[kind](embed_model, random_state=5).to_dict() != base
    assert BUILDERS[kind](embed_model, embedding_mode="mean").to_dict() != base
    assert BUILDERS[kind](embed_model, summarizer=ExtractiveSummarizer(max_sentences=4)).to_dict() != base
    assert base["embed_model"]["class_name"] == "OnnxMiniLMEmbedding"


# ---------------------------------------------------------------------- the real local LLM


@pytest.mark.slow
@pytest.mark.parametrize("kind", BUILDERS)
def test_builders_with_the_real_local_llm(embed_model, small_llm, kind):
    docs = {"geo": VOLCANO[:2], "bread": BREAD[:2]}
    summarizer = TwoStageSummarizer.from_defaults(llm=small_llm, max_sentences=1, max_words=30)
    settings = {"max_levels": 1, "reducer": "pca"} if kind == "raptor" else {}
    builder = BUILDERS[kind](embed_model, summarizer=summarizer, **settings)
    out = builder(make_nodes(embed_model, docs))
    made = summaries(out)
    assert made and all(p.text.strip() for p in made)
    assert builder.failed_clusters_ == [] and builder.usage_["calls"] == len(made)
    assert builder.usage_["prompt_tokens"] > 0
    assert_linked_both_ways(out)
