"""The structured ingest in batches (issue 40, item 2): ``kgplus ingest --vector-store lancedb --entities titles
--hierarchy semantic`` links and summarises each batch as it is written, and gives the entity graph and hierarchy
of the ingest that holds every chunk at once; a ``kill -9`` mid-ingest resumes with the same graph and hierarchy.
Real lancedb, the real embedding model, the first documents of the bundled multi-hop sample."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from llama_index.core import Document
from llama_index.core.schema import NodeRelationship

pytest.importorskip("lancedb")  # the `lancedb` extra (in `dev`)

from _corpora import sample_head  # noqa: E402
from _kill import KILL_AFTER_ADD  # noqa: E402

from llama_index_kgplus import (  # noqa: E402
    EntityGraph,
    EntityGraphRetriever,
    EntityLinker,
    ExtractiveSummarizer,
    InputDataError,
    RaptorSummaryNodeBuilder,
    SemanticChunkingSummaryNodeBuilder,
    build_index,
    load_corpus,
    load_index,
)
from llama_index_kgplus._ingesting import stream_structured_index  # noqa: E402
from llama_index_kgplus._streaming import READINGS_FILE, RESUME_FILE  # noqa: E402
from llama_index_kgplus._syncing import entity_linker, recorded_settings  # noqa: E402
from llama_index_kgplus._text import sentence_splitter  # noqa: E402
from llama_index_kgplus.cli import main  # noqa: E402
from llama_index_kgplus.hierarchy._retriever import read_manifest  # noqa: E402
from llama_index_kgplus.indexing import sync_index  # noqa: E402

# chunks of 64 tokens: most documents have several, which the semantic builder summarises
STRUCTURE = ["--chunk-size", "64", "--chunk-overlap", "0", "--entities", "titles", "--hierarchy", "semantic",
             "--summarizer", "extractive"]  # fmt: skip
BATCH = 4
N_DOCS = 18  # five batches, the last one short


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return sample_head(tmp_path_factory.mktemp("structure") / "docs.jsonl", N_DOCS)


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory, corpus) -> Path:
    """The index of the ingest that holds every chunk at once (LlamaIndex's JSON store is never streamed)."""
    folder = tmp_path_factory.mktemp("in-memory") / "index"
    assert main(["ingest", str(corpus), "--index", str(folder), "--vector-store", "simple", *STRUCTURE]) == 0
    return folder


def graph_rows(folder: Path, embed_model) -> set[tuple[str, str, int, bool]]:
    """Every link of the folder's entity graph as (passage text, entity, mentions, is about)."""
    graph = EntityGraph.load(folder)
    texts = {n.node_id: n.get_content() for n in load_index(folder, embed_model=embed_model).docstore.docs.values()}
    assert set(graph.passage_ids) <= set(texts)
    return {(texts[graph.passage_ids[p]], *link) for p in range(graph.n_passages) for link in graph.passage_entities(p)}


def hierarchy(folder: Path, embed_model) -> tuple[dict[str, int], list[tuple[str, tuple[str, ...]]]]:
    """``hierarchy.json``'s nodes per level, and each summary's text with its children's texts."""
    docs = load_index(folder, embed_model=embed_model).docstore.docs
    manifest = json.loads((folder / "hierarchy.json").read_text(encoding="utf-8"))
    assert set(manifest["root_ids"]) == {i for i, n in docs.items() if NodeRelationship.PARENT not in n.relationships}
    summaries = sorted(
        (n.get_content(), tuple(docs[c.node_id].get_content() for c in n.child_nodes or []))
        for n in docs.values()
        if n.metadata.get("level")
    )
    return manifest["nodes_per_level"], summaries


def count_links(monkeypatch) -> list[int]:
    """How many nodes each call of ``EntityLinker.link`` linked: one call per batch when the ingest streams."""
    calls: list[int] = []
    link = EntityLinker.link

    def counted(self, nodes, **kwargs):
        calls.append(len(nodes))
        return link(self, nodes, **kwargs)

    monkeypatch.setattr(EntityLinker, "link", counted)
    return calls


def test_the_cli_links_and_summarises_each_batch_as_the_in_memory_ingest_does(
    tmp_path, corpus, in_memory, embed_model, monkeypatch
):
    calls = count_links(monkeypatch)
    whole = tmp_path / "one-batch"
    assert main(["ingest", str(corpus), "--index", str(whole), "--vector-store", "lancedb", *STRUCTURE]) == 0
    assert len(calls) == 1  # the default batch holds every document: the one-shot ingest, exactly
    assert graph_rows(whole, embed_model) == graph_rows(in_memory, embed_model)
    assert hierarchy(whole, embed_model) == hierarchy(in_memory, embed_model)
    question = "Who was the spouse of the director of the film?"
    hits = [EntityGraphRetriever.from_persist_dir(f, embed_model=embed_model, similarity_top_k=4).retrieve(question)
            for f in (whole, in_memory)]  # fmt: skip
    assert [(h.node.get_content(), round(h.score, 5)) for h in hits[0]] == [
        (h.node.get_content(), round(h.score, 5)) for h in hits[1]
    ]

    calls.clear()
    batched = tmp_path / "batched"
    argv = ["ingest", str(corpus), "--index", str(batched), "--vector-store", "lancedb", "--batch-size", str(BATCH)]
    assert main([*argv, *STRUCTURE]) == 0
    assert len(calls) == 5  # linked batch by batch, with the dictionary of every title
    assert graph_rows(batched, embed_model) == graph_rows(in_memory, embed_model)
    levels, summaries = hierarchy(batched, embed_model)
    assert levels["0"] == hierarchy(in_memory, embed_model)[0]["0"]
    for _, children in summaries:  # a summary never spans documents, so batches of whole documents lose none
        assert len(children) >= 2
    settings = json.loads((batched / "ingest.json").read_text(encoding="utf-8"))["settings"]
    assert settings["entities"]["sources"] == ["titles"] and settings["hierarchy"]["kind"] == "semantic"


def test_named_entities_are_read_in_a_first_pass_and_each_batch_is_linked_with_all_of_them(
    tmp_path, corpus, embed_model, monkeypatch
):
    entities = ["--chunk-size", "64", "--chunk-overlap", "0", "--entities", "titles,ner"]
    in_memory = tmp_path / "in-memory"
    assert main(["ingest", str(corpus), "--index", str(in_memory), "--vector-store", "simple", *entities]) == 0
    calls = count_links(monkeypatch)
    batched = tmp_path / "batched"
    argv = ["ingest", str(corpus), "--index", str(batched), "--vector-store", "lancedb", "--batch-size", str(BATCH)]
    assert main([*argv, *entities]) == 0
    assert len(calls) == 5
    rows = graph_rows(batched, embed_model)
    assert rows == graph_rows(in_memory, embed_model)
    assert any(
        r.get("extracted") == "ner"
        for n in load_index(batched, embed_model=embed_model).docstore.docs.values()
        for r in n.metadata.get("entities", [])
    )  # the first pass's readings reached the links
    assert EntityGraph.load(batched).n_entities > N_DOCS  # names beyond the titles
    assert not (batched / READINGS_FILE).exists()


def test_build_index_streams_a_linker_and_a_semantic_builder_and_writes_their_files(
    tmp_path, corpus, in_memory, embed_model, monkeypatch
):
    calls = count_links(monkeypatch)
    linker = EntityLinker.from_defaults(["titles"])
    builder = SemanticChunkingSummaryNodeBuilder(embed_model=embed_model, summarizer=ExtractiveSummarizer())
    folder = tmp_path / "index"
    index = build_index(load_corpus(corpus, stream=True), folder, embed_model=embed_model, vector_store="lancedb",
                        chunk_size=64, chunk_overlap=0, extra_transformations=[linker, builder], batch_size=BATCH,
                        show_progress=False)  # fmt: skip
    assert len(calls) == 5 and index.folder == folder.resolve()
    assert graph_rows(folder, embed_model) == graph_rows(in_memory, embed_model)
    assert hierarchy(folder, embed_model)[0] == hierarchy(in_memory, embed_model)[0]

    calls.clear()  # a one-pass iterator cannot be read for the dictionary first: every chunk at once, as before
    build_index(iter(load_corpus(corpus)), tmp_path / "other", embed_model=embed_model, vector_store="lancedb",
                chunk_size=64, chunk_overlap=0, extra_transformations=[linker], show_progress=False)  # fmt: skip
    assert not calls and not (tmp_path / "other" / "entity_graph.npz").exists()


def test_an_index_streamed_in_python_records_its_linker_and_builder_so_that_a_sync_updates_it(
    tmp_path, corpus, embed_model
):
    linker = EntityLinker.from_defaults(["titles"], min_name_length=3)
    builder = SemanticChunkingSummaryNodeBuilder(embed_model=embed_model, summarizer=ExtractiveSummarizer())
    folder = tmp_path / "index"
    build_index(load_corpus(corpus, stream=True), folder, embed_model=embed_model, vector_store="lancedb",
                chunk_size=64, chunk_overlap=0, extra_transformations=[linker, builder], batch_size=BATCH,
                show_progress=False)  # fmt: skip
    settings = json.loads((folder / "ingest.json").read_text(encoding="utf-8"))["settings"]
    assert settings["entities"]["sources"] == ["titles"]
    assert settings["entities"]["options"] == {"min_name_length": 3}  # what differs from the defaults
    assert entity_linker(settings["entities"]).min_name_length == 3  # what a sync links with
    assert {k: settings["hierarchy"][k] for k in ("kind", "summarizer", "cluster_size", "seed")} == {
        "kind": "semantic", "summarizer": "extractive", "cluster_size": 5, "seed": 0}  # fmt: skip

    thresholds = read_manifest(folder)["thresholds"]  # the median of the batches' thresholds, which a sync reuses
    assert len(thresholds) == 1 and -1 <= thresholds[0] <= 1

    def nodes_by_doc() -> dict[str, set[str]]:
        by_doc: dict[str, set[str]] = {}
        for node in load_index(folder, embed_model=embed_model).docstore.docs.values():
            by_doc.setdefault(str(node.ref_doc_id), set()).add(node.node_id)
        return by_doc

    before = nodes_by_doc()
    documents = load_corpus(corpus)
    changed = documents[3]
    documents[3] = Document(text=changed.text + " It was restored in 1999.", doc_id=changed.doc_id,
                            metadata=changed.metadata)  # fmt: skip
    report = sync_index(documents, folder, embed_model=embed_model, show_progress=False)
    assert report.updated == [changed.doc_id] and report.entity_passages == EntityGraph.load(folder).n_passages
    assert any("restored in 1999" in text for text, *_ in graph_rows(folder, embed_model))
    after = nodes_by_doc()  # only the changed document's nodes were written again
    assert report.entity_passages_relinked == 0 and {d for d in after if after[d] != before[d]} == {changed.doc_id}
    assert read_manifest(folder)["thresholds"] == thresholds

    # a builder setting a sync cannot rebuild from ingest.json: not recorded, and a sync says how to go on
    odd = SemanticChunkingSummaryNodeBuilder(
        embed_model=embed_model, summarizer=ExtractiveSummarizer(), merge_singletons=False
    )
    assert recorded_settings(None, [odd])["hierarchy"] is None


class FailingSummarizer(ExtractiveSummarizer):
    async def asummarize(self, texts, **kwargs):
        raise ValueError("no summary today")


def test_each_cluster_that_failed_in_a_batch_is_reported_once(tmp_path, corpus, embed_model):
    builder = SemanticChunkingSummaryNodeBuilder(
        embed_model=embed_model, summarizer=FailingSummarizer(embed_model=embed_model), max_retries=0
    )
    folder = tmp_path / "index"
    build_index(load_corpus(corpus, stream=True), folder, embed_model=embed_model, vector_store="lancedb",
                chunk_size=64, chunk_overlap=0, extra_transformations=[builder], batch_size=BATCH,
                show_progress=False)  # fmt: skip
    failed = json.loads((folder / "hierarchy.json").read_text(encoding="utf-8"))["failed_clusters"]
    clusters = [tuple(f["child_ids"]) for f in failed]
    assert len(clusters) > BATCH and len(set(clusters)) == len(clusters)  # every batch's, none twice
    assert all("no summary today" in f["error"] for f in failed)


# A process that runs the structured CLI ingest of CORPUS into INDEX in batches of BATCH and kills itself (kill -9)
# when the third batch's nodes are in the table but not yet in the docstore.
_KILL_MID_INGEST = KILL_AFTER_ADD + textwrap.dedent(
    """
    import sys
    from llama_index_kgplus._lancedb import store_class
    from llama_index_kgplus.cli import main

    corpus, index, batch = sys.argv[1], sys.argv[2], sys.argv[3]
    kill_after_add(store_class(), 3)
    main(["ingest", corpus, "--index", index, "--vector-store", "lancedb", "--batch-size", batch, "--entities",
          "titles", "--hierarchy", "semantic", "--summarizer", "extractive", "--chunk-size", "64", "--chunk-overlap", "0"])
    """
)


def test_kill_9_mid_structured_ingest_resumes_with_the_same_graph_and_hierarchy(
    tmp_path, corpus, embed_model, caplog, monkeypatch
):
    reference = tmp_path / "reference"
    argv = ["--vector-store", "lancedb", "--batch-size", str(BATCH), *STRUCTURE]
    assert main(["ingest", str(corpus), "--index", str(reference), *argv]) == 0
    folder = tmp_path / "index"
    script = tmp_path / "kill.py"
    script.write_text(_KILL_MID_INGEST)
    run = subprocess.run([sys.executable, str(script), str(corpus), str(folder), str(BATCH)],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert run.returncode == -9, run.stderr[-2000:]
    assert len(json.loads((folder / RESUME_FILE).read_text(encoding="utf-8"))["batches"]) == 2

    calls = count_links(monkeypatch)
    assert main(["ingest", str(corpus), "--index", str(folder), *argv]) == 0
    assert "resuming the interrupted ingest after its first 8 documents" in caplog.text
    assert len(calls) == 3  # the two written batches are not linked again; the graph reads them from the docstore
    assert graph_rows(folder, embed_model) == graph_rows(reference, embed_model)
    assert hierarchy(folder, embed_model) == hierarchy(reference, embed_model)


def test_the_linker_fits_on_documents_read_once_and_links_batches_with_that_dictionary(corpus, embed_model):
    docs = load_corpus(corpus)
    chunks = sentence_splitter(384, 32)(docs)
    batched = [n.model_copy(deep=True) for n in chunks]
    one_call = EntityLinker.from_defaults(["titles"])(chunks)
    fitted = EntityLinker.from_defaults(["titles"]).fit(iter(docs))  # an iterator: read once
    assert (
        fitted.dictionary_.entities.keys()
        == EntityLinker.from_defaults(["titles"]).fit(chunks).dictionary_.entities.keys()
    )
    for start in range(0, len(batched), 5):
        fitted.link(batched[start : start + 5])
    assert [n.metadata["entities"] for n in batched] == [n.metadata["entities"] for n in one_call]

    with pytest.raises(InputDataError, match="not a one-pass iterator"):
        stream_structured_index(iter(docs), Path("unused"), embed_model=embed_model,
                                linker=EntityLinker.from_defaults(["titles"]), builders=[])  # fmt: skip
    with pytest.raises(InputDataError, match="cannot run in batches"):
        stream_structured_index(docs, Path("unused"), embed_model=embed_model, linker=None,
                                builders=[RaptorSummaryNodeBuilder(embed_model=embed_model)])  # fmt: skip
