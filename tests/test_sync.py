"""One corpus sync (`kgplus sync`, `sync_index`): an index synced with a changed corpus holds what a fresh ingest of
that corpus at the index's similarity thresholds holds (docstore, vectors, entity graph, summaries, retrieval),
having embedded only the new text and summarised only the documents that changed or were linked anew; and
the bad inputs: another embedding model, two writers at once, duplicate ids, an unchanged corpus. The same for one
document deleted (`delete_ref_doc` of an index bound to its folder, `kgplus delete`): the folder then holds a fresh
ingest of the corpus without it. And a JSON index moved into LanceDB (`kgplus ingest --upgrade`, `upgrade_index`)
holds what it held, with nothing embedded again.

Small data: 16 passages of the bundled multi-hop sample, split small (64 tokens) so that the semantic hierarchy
has clusters; the extractive summarizer (no LLM). The GraphRAG path runs with the rule-based fake LLM of the
GraphRAG tests (``RuleBasedGraphRAGLLM``), which follows the real prompts and parsers.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from llama_index.core import Document

from llama_index_kgplus import _indexing, build_index, load_corpus, load_index
from llama_index_kgplus._indexing import INGEST_FILE, persist_index
from llama_index_kgplus._lock import writer_lock
from llama_index_kgplus._syncing import SyncReport, entity_linker, summary_builders
from llama_index_kgplus.cli import main
from llama_index_kgplus.entity_graph import EntityGraph
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.hierarchy._retriever import read_manifest
from llama_index_kgplus.indexing import sync_index, upgrade_index
from llama_index_kgplus.sample import SAMPLE_MULTIHOP_DOCS

QUESTIONS = ["Who was the wife of Lothair II?", "Which film was directed in India?", "Where was the bishop buried?"]
INGEST = ["--chunk-size", "64", "--chunk-overlap", "8", "--entities", "titles", "--hierarchy", "semantic",
          "--summarizer", "extractive"]  # fmt: skip


def _rows() -> list[dict]:
    return [json.loads(line) for line in SAMPLE_MULTIHOP_DOCS.read_text(encoding="utf-8").splitlines()[:24]]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    """v1; v2: one document deleted, one changed, two added; v3: the changed one changed again, one more gone."""
    folder = tmp_path_factory.mktemp("corpora")
    rows = _rows()
    v1 = rows[:16]
    v2 = [dict(r) for r in v1[1:]] + rows[16:18]
    v2[0]["text"] += " It was later renamed after a long dispute about its founding."
    v3 = [dict(r) for r in v2 if r["id"] != v2[5]["id"]]
    v3[0]["text"] = v3[0]["text"].replace("dispute", "quarrel") + " Nobody remembers why."
    return {name: _write(folder / f"{name}.jsonl", rows) for name, rows in (("v1", v1), ("v2", v2), ("v3", v3))}


def _ingest(corpus: Path, index: Path, *extra: str) -> None:
    assert main(["ingest", str(corpus), "--index", str(index), *INGEST, *extra]) == 0


def _fresh(corpus: Path, index: Path, like: Path, embed_model) -> None:
    """A fresh ingest of ``corpus`` with the settings of ``INGEST`` and the similarity thresholds of the index in
    ``like`` (a sync clusters with the thresholds the index learned at its ingest; a fresh ingest learns its own)."""
    builder = summary_builders({"kind": "semantic", "summarizer": "extractive", "seed": 0}, embed_model)[0]
    builder.similarity_thresholds = read_manifest(like)["thresholds"]
    build_index(
        load_corpus(corpus), index, embed_model=embed_model, chunk_size=64, chunk_overlap=8, vector_store="lancedb",
        extra_transformations=[entity_linker({"sources": ["titles"]}), builder], show_progress=False,
    )  # fmt: skip


def _nodes_by_doc(folder: Path, embed_model) -> dict[str, set[str]]:
    by_doc: dict[str, set[str]] = {}
    for node in load_index(folder, embed_model=embed_model).docstore.docs.values():
        by_doc.setdefault(str(node.ref_doc_id), set()).add(node.node_id)
    return by_doc


def _sync(corpus: Path, index: Path, capsys) -> SyncReport:
    capsys.readouterr()
    assert main(["sync", str(corpus), "--index", str(index), "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    return SyncReport(**data)


def _snapshot(folder: Path, embed_model) -> dict:
    """What a fresh ingest and a sync must agree on, with node ids (random per ingest) replaced by texts."""
    index = load_index(folder, embed_model=embed_model)
    docs = index.docstore.docs
    text = {node_id: node.get_content() for node_id, node in docs.items()}

    def signature(node):
        metadata = {k: v for k, v in node.metadata.items() if k != "parent_ids"}
        parents = sorted(text[p] for p in node.metadata.get("parent_ids", []))
        children = sorted(text[c.node_id] for c in node.child_nodes or [])
        return json.dumps([node.get_content(), node.ref_doc_id, metadata, parents, children], sort_keys=True)

    store = index.vector_store
    if hasattr(store, "data"):  # the JSON store
        stored_ids = set(store.data.embedding_dict)
    else:  # LanceDB
        stored_ids = {n.node_id for n in store.get_nodes(list(docs))}
        assert store.table.count_rows() == len(docs)
    graph = EntityGraph.load(folder)
    manifest = read_manifest(folder)
    corpus_ids = sorted(index.ref_doc_info)
    retriever = index.as_retriever(similarity_top_k=4)
    return {
        "nodes": sorted(signature(n) for n in docs.values()),
        "vectors_match_docstore": stored_ids == set(docs),
        "hashes": {d: index.docstore.get_document_hash(d) for d in corpus_ids},
        "mentions": sorted((text[p], key, count, about) for p, key, count, about in graph.mentions()),
        "entities": sorted(
            (e.key, e.name, sorted((s, sorted(d)) for s, d in e.sources.items())) for e in graph.entities
        ),
        "edges": sorted(graph.entities.relationships),
        "levels": manifest["nodes_per_level"],
        "roots": sorted(text[r] for r in manifest["root_ids"]),
        "retrieved": [[(h.node.get_content(), round(h.score, 3)) for h in retriever.retrieve(q)] for q in QUESTIONS],
    }


def _assert_same(synced: dict, fresh: dict) -> None:
    for key in fresh:
        if key == "retrieved":
            for got, want in zip(synced[key], fresh[key]):
                assert [t for t, _ in got] == [t for t, _ in want]
                assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=2e-3)
        else:
            assert synced[key] == fresh[key], key
    assert synced["vectors_match_docstore"]


@pytest.fixture(scope="module")
def counted(embed_model):
    """The texts the embedding model is asked for (before its cache), counted across the test module."""
    cls = type(embed_model)
    original = cls.aget_text_embedding_batch, cls.get_text_embedding_batch
    asked: list[str] = []

    async def acount(self, texts, *args, **kwargs):
        asked.extend(texts)
        return await original[0](self, texts, *args, **kwargs)

    def count(self, texts, *args, **kwargs):
        asked.extend(texts)
        return original[1](self, texts, *args, **kwargs)

    cls.aget_text_embedding_batch, cls.get_text_embedding_batch = acount, count
    yield asked
    cls.aget_text_embedding_batch, cls.get_text_embedding_batch = original


@pytest.mark.parametrize("store", ["simple", "lancedb"])
def test_a_synced_index_is_a_fresh_ingest_of_the_new_corpus(store, corpora, tmp_path, embed_model, counted, capsys):
    synced, fresh = tmp_path / "synced", tmp_path / "fresh"
    _ingest(corpora["v1"], synced, "--vector-store", store)
    thresholds, before = read_manifest(synced)["thresholds"], _nodes_by_doc(synced, embed_model)

    counted.clear()
    report = _sync(corpora["v2"], synced, capsys)
    v1, v2 = load_corpus(corpora["v1"]), load_corpus(corpora["v2"])
    assert report.deleted == [v1[0].doc_id] and report.updated == [v2[0].doc_id]
    assert report.added == [d.doc_id for d in v2[-2:]] and len(report.unchanged) == len(v1) - 2
    assert report.summaries_written > 0 and report.llm_calls == 0
    # the unchanged documents keep their nodes, summaries included, but those with a chunk linked anew
    after = _nodes_by_doc(synced, embed_model)
    rebuilt = [d for d in report.unchanged if after[d] != before[d]]
    assert len(rebuilt) <= report.entity_passages_relinked < len(report.unchanged) - 1
    assert read_manifest(synced)["thresholds"] == thresholds
    # only the new and changed documents' text (and the summaries over it) went to the model
    unchanged = [f"title: {d.metadata['title']}\n" for d in v2 if d.doc_id in report.unchanged]
    assert counted and report.texts_embedded == len(set(counted))
    assert not [text for text in counted if any(title in text for title in unchanged)]
    assert any("title: " + v2[0].metadata["title"] in text for text in counted)  # the changed document's chunks

    report = _sync(corpora["v3"], synced, capsys)  # the changed document changed again, one more deleted
    assert report.updated == [load_corpus(corpora["v3"])[0].doc_id] and len(report.deleted) == 1
    _fresh(corpora["v3"], fresh, synced, embed_model)
    _assert_same(_snapshot(synced, embed_model), _snapshot(fresh, embed_model))


def test_an_index_without_recorded_thresholds_is_summarised_again_in_full_once(corpora, tmp_path, embed_model, capsys):
    from llama_index_kgplus._files import json_writer

    index = tmp_path / "index"
    _ingest(corpora["v1"], index)
    manifest = read_manifest(index)
    del manifest["thresholds"]  # as hierarchy.json of an earlier version
    stamp = json.loads((index / INGEST_FILE).read_text(encoding="utf-8"))
    files = {"hierarchy.json": json_writer(manifest), "entity_graph.npz": EntityGraph.load(index).write_file}
    persist_index(load_index(index, embed_model=embed_model), index, files=files, settings=stamp["settings"])

    report = _sync(corpora["v2"], index, capsys)  # every document clustered again, at thresholds learned again
    summaries = sum(n for level, n in read_manifest(index)["nodes_per_level"].items() if level != "0")
    assert report.summaries_reused + report.summaries_written == summaries
    assert report.summaries_reused > report.summaries_written > 0
    assert read_manifest(index)["thresholds"]  # recorded: the next sync summarises only what changed
    report = _sync(corpora["v3"], index, capsys)
    assert report.summaries_reused + report.summaries_written < summaries / 2


def test_an_index_with_an_entity_graph_alone_relinks_its_older_passages(corpora, tmp_path, embed_model, capsys):
    graph_only = INGEST[: INGEST.index("--hierarchy")]
    synced, fresh = tmp_path / "synced", tmp_path / "fresh"
    assert main(["ingest", str(corpora["v1"]), "--index", str(synced), *graph_only, "--vector-store", "lancedb"]) == 0
    report = _sync(corpora["v2"], synced, capsys)
    assert report.entity_passages_relinked > 0  # older passages link to the added titles, or lose the deleted one
    assert main(["ingest", str(corpora["v2"]), "--index", str(fresh), *graph_only, "--vector-store", "lancedb"]) == 0

    def state(folder: Path) -> tuple:
        docs = load_index(folder, embed_model=embed_model).docstore.docs.values()
        graph = EntityGraph.load(folder)
        text = {n.node_id: n.get_content() for n in docs}
        return (
            sorted(json.dumps([n.get_content(), n.ref_doc_id, n.metadata], sort_keys=True) for n in docs),
            sorted((text[p], key, count, about) for p, key, count, about in graph.mentions()),
        )

    assert state(synced) == state(fresh)


def test_an_unchanged_corpus_is_a_no_op(corpora, tmp_path, embed_model, counted, capsys):
    index = tmp_path / "index"
    _ingest(corpora["v1"], index)
    stamp = (index / INGEST_FILE).read_text(encoding="utf-8")
    counted.clear()
    report = _sync(corpora["v1"], index, capsys)
    assert not report.changed and report.ingest_id is None and report.texts_embedded == 0 and not counted
    assert len(report.unchanged) == 16 and report.nodes_written == report.nodes_deleted == 0
    assert (index / INGEST_FILE).read_text(encoding="utf-8") == stamp  # nothing was written
    assert main(["sync", str(corpora["v1"]), "--index", str(index), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("index up to date: 16 documents unchanged")


def test_sync_of_a_plain_index_in_python(tmp_path, embed_model):
    docs = [Document(id_=r["id"], text=r["text"], metadata={"title": r["title"]}) for r in _rows()[:8]]
    build_index(docs[:6], tmp_path / "synced", embed_model=embed_model, show_progress=False)
    new = [docs[0], Document(id_=docs[1].doc_id, text=docs[1].text + " Changed."), *docs[2:5], *docs[6:]]
    report = sync_index(new, tmp_path / "synced", embed_model=embed_model, show_progress=False)
    assert (report.added, report.updated, report.deleted) == (
        [d.doc_id for d in docs[6:]],
        [docs[1].doc_id],
        [docs[5].doc_id],
    )
    build_index(new, tmp_path / "fresh", embed_model=embed_model, show_progress=False)
    synced, fresh = (load_index(tmp_path / n, embed_model=embed_model) for n in ("synced", "fresh"))
    for a, b in ((synced, fresh), (fresh, synced)):
        assert sorted((n.ref_doc_id, n.get_content()) for n in a.docstore.docs.values()) == sorted(
            (n.ref_doc_id, n.get_content()) for n in b.docstore.docs.values()
        )
    assert set(synced.vector_store.data.embedding_dict) == set(synced.docstore.docs)
    assert {d: synced.docstore.get_document_hash(d) for d in synced.ref_doc_info} == {d.doc_id: d.hash for d in new}
    again = sync_index(new, tmp_path / "synced", embed_model=embed_model, show_progress=False)
    assert not again.changed


def test_another_embedding_model_is_refused(tmp_path, embed_model):
    from llama_index.core.embeddings import MockEmbedding

    docs = [Document(id_="a", text="Aspirin treats headache."), Document(id_="b", text="Rest helps too.")]
    mock = MockEmbedding(embed_dim=8)
    build_index(docs, tmp_path, embed_model=mock, show_progress=False)
    with pytest.raises(InputDataError, match="was built with the embedding model .*re-run `kgplus ingest`"):
        sync_index(docs[:1], tmp_path, embed_model=embed_model, show_progress=False)
    assert len(load_index(tmp_path, embed_model=mock).docstore.docs) == 2  # untouched


def test_a_second_writer_is_refused(tmp_path, embed_model):
    docs = [Document(id_="a", text="Aspirin treats headache."), Document(id_="b", text="Rest helps too.")]
    build_index(docs, tmp_path, embed_model=embed_model, show_progress=False)
    holding, release = threading.Event(), threading.Event()

    def other_writer():
        with writer_lock(tmp_path, "another sync"):
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=other_writer)
    thread.start()
    try:
        holding.wait(30)
        with pytest.raises(InputDataError, match=r"being written by .*another sync.*one writer per folder"):
            sync_index(docs[:1], tmp_path, embed_model=embed_model, show_progress=False)
    finally:
        release.set()
        thread.join()
    assert sync_index(docs[:1], tmp_path, embed_model=embed_model, show_progress=False).deleted == ["b"]


def test_duplicate_ids_and_bad_corpora_are_one_line_errors(tmp_path, embed_model, cli_error):
    docs = [Document(id_="a", text="one"), Document(id_="a", text="two")]
    with pytest.raises(InputDataError, match="two documents with the id 'a'"):
        sync_index(docs, tmp_path, embed_model=embed_model)
    corpus = _write(tmp_path / "dup.jsonl", [{"id": "a", "text": "one"}, {"id": "a", "text": "two"}])
    build_index(docs[:1], tmp_path / "index", embed_model=embed_model, show_progress=False)
    assert "duplicate document id 'a'" in cli_error(["sync", str(corpus), "--index", str(tmp_path / "index")])
    assert "holds no index" in cli_error(["sync", str(corpus), "--index", str(tmp_path / "none")])


def test_the_graphrag_store_of_the_folder_is_updated(corpora, tmp_path, embed_model):
    from llama_index_kgplus.graphrag import GraphRAGIndex
    from llama_index_kgplus.graphrag._testing import RuleBasedGraphRAGLLM

    v1, v2 = load_corpus(corpora["v1"])[:6], load_corpus(corpora["v2"])[:6]
    build_index(v1, tmp_path, embed_model=embed_model, show_progress=False)
    with GraphRAGIndex.from_defaults(tmp_path / "graphrag", llm=RuleBasedGraphRAGLLM(), show_progress=False) as g:
        g.build(v1)
    report = sync_index(v2, tmp_path, embed_model=embed_model, llm=RuleBasedGraphRAGLLM(), show_progress=False)
    assert report.graphrag is not None
    assert (report.graphrag["documents_added"], report.graphrag["documents_changed"]) == (1, 1)
    assert report.graphrag["documents_deleted"] == 1 and report.llm_calls == report.graphrag["llm_calls"] > 0
    assert report.graphrag["reports_regenerated"] <= report.graphrag["reports_total"]


def test_an_index_persisted_again_keeps_its_record_and_one_without_a_record_is_refused(tmp_path):
    from llama_index.core.embeddings import MockEmbedding

    mock = MockEmbedding(embed_dim=8)
    docs = [Document(id_=i, text=f"Passage {i} about aspirin.") for i in "abc"]
    index = build_index(docs, tmp_path, embed_model=mock, show_progress=False)
    index.bind_folder(None)
    index.delete_ref_doc("b")  # in memory
    persist_index(index, tmp_path)  # the same index again: ingest.json keeps how it was built
    report = sync_index(docs, tmp_path, embed_model=mock, show_progress=False)
    assert (report.added, report.unchanged, report.texts_embedded) == (["b"], ["a", "c"], 1)
    stamp = json.loads((tmp_path / INGEST_FILE).read_text(encoding="utf-8"))
    del stamp["settings"]  # as an index of an earlier version
    (tmp_path / INGEST_FILE).write_text(json.dumps(stamp), encoding="utf-8")
    more = [*docs, Document(id_="d", text="Passage d about aspirin.")]  # a document to split as the ingest did
    with pytest.raises(InputDataError, match="does not record how the index was built.*re-run `kgplus ingest"):
        sync_index(more, tmp_path, embed_model=mock, show_progress=False)
    assert sync_index(docs[:2], tmp_path, embed_model=mock, show_progress=False).deleted == ["c"]  # none to split


# ---------------------------------------------------------------- delete_ref_doc of an index bound to its folder


@pytest.mark.parametrize("store", ["simple", "lancedb"])
def test_delete_ref_doc_deletes_through_every_index_of_the_folder(store, tmp_path, embed_model, counted):
    rows = _rows()[:16]
    gone = rows[0]["id"]  # Teutberga: two summaries over the other documents change, a passage loses its entity
    folder, fresh = tmp_path / "index", tmp_path / "fresh"
    _ingest(_write(tmp_path / "v1.jsonl", rows), folder, "--vector-store", store)
    index = load_index(folder, embed_model=embed_model)
    assert index.folder == folder.resolve()

    counted.clear()
    index.delete_ref_doc(gone)
    report = index.delete_report_
    assert report is not None and report.ingest_id is not None
    assert (report.deleted, report.added, report.updated, len(report.unchanged)) == ([gone], [], [], 15)
    # the documents whose chunks lost the entity are summarised again, with the summaries they had: nothing is
    # embedded or written by a model
    assert report.summaries_reused > report.summaries_written == 0 and report.entity_passages_relinked > 0
    assert report.llm_calls == report.texts_embedded == 0 and not counted
    # the object holds the result, still bound to the folder: a persist_index the user adds writes nothing
    assert gone not in index.ref_doc_info and index.folder == folder.resolve()
    stamp = (folder / INGEST_FILE).read_text(encoding="utf-8")
    assert persist_index(index, folder) == report.ingest_id
    assert (folder / INGEST_FILE).read_text(encoding="utf-8") == stamp

    _fresh(_write(tmp_path / "rest.jsonl", [r for r in rows if r["id"] != gone]), fresh, folder, embed_model)
    deleted = _snapshot(folder, embed_model)
    _assert_same(deleted, _snapshot(fresh, embed_model))
    retriever = index.as_retriever(similarity_top_k=4)  # the object in memory retrieves as the folder does
    in_memory = [[(h.node.get_content(), round(h.score, 3)) for h in retriever.retrieve(q)] for q in QUESTIONS]
    _assert_same({"retrieved": in_memory, "vectors_match_docstore": True}, {"retrieved": deleted["retrieved"]})


def test_an_unknown_id_is_refused_and_changes_nothing(tmp_path, embed_model, cli_error):
    docs = [Document(id_=r["id"], text=r["text"], metadata={"title": r["title"]}) for r in _rows()[:4]]
    build_index(docs, tmp_path, embed_model=embed_model, show_progress=False)
    stamp = (tmp_path / INGEST_FILE).read_text(encoding="utf-8")
    index = load_index(tmp_path, embed_model=embed_model)
    with pytest.raises(InputDataError, match="holds no document 'nope': nothing was deleted") as error:
        index.delete_ref_doc("nope")
    assert "\n" not in str(error.value)
    assert sorted(index.ref_doc_info) == sorted(d.doc_id for d in docs) and index.folder == tmp_path.resolve()
    err = cli_error(["delete", docs[0].doc_id, "nope", "--index", str(tmp_path), "--quiet"])
    assert "holds no document 'nope': nothing was deleted" in err
    assert (tmp_path / INGEST_FILE).read_text(encoding="utf-8") == stamp  # nothing was written, not even the first


def test_kgplus_delete_prints_a_report_per_document(tmp_path, embed_model, capsys):
    docs = [Document(id_=r["id"], text=r["text"], metadata={"title": r["title"]}) for r in _rows()[:6]]
    build_index(docs, tmp_path, embed_model=embed_model, show_progress=False)
    capsys.readouterr()
    gone = [docs[1].doc_id, docs[4].doc_id]
    assert main(["delete", *gone, "--index", str(tmp_path), "--json", "--quiet"]) == 0
    reports = [SyncReport(**json.loads(line)) for line in capsys.readouterr().out.strip().splitlines()]
    assert [r.deleted for r in reports] == [[d] for d in gone] and len(reports[-1].unchanged) == 4
    assert sorted(load_index(tmp_path, embed_model=embed_model).ref_doc_info) == sorted(
        d.doc_id for d in docs if d.doc_id not in gone
    )
    assert main(["delete", docs[0].doc_id, "--index", str(tmp_path), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("synced 0 added, 0 updated, 1 deleted documents (3 unchanged)")


def test_an_index_not_bound_to_a_folder_deletes_in_memory(tmp_path, embed_model):
    docs = [Document(id_=r["id"], text=r["text"]) for r in _rows()[:4]]
    in_memory = build_index(docs, None, embed_model=embed_model, show_progress=False)
    assert in_memory.folder is None
    in_memory.delete_ref_doc(docs[0].doc_id)
    assert docs[0].doc_id not in in_memory.ref_doc_info and in_memory.delete_report_ is None
    in_memory.delete_ref_doc("nope")  # LlamaIndex's delete: an unknown id is no error

    build_index(docs, tmp_path, embed_model=embed_model, show_progress=False)
    stamp = (tmp_path / INGEST_FILE).read_text(encoding="utf-8")
    index = load_index(tmp_path, embed_model=embed_model)
    index.insert(Document(id_="new", text="A passage added in memory."))  # a change in memory unbinds it
    assert index.folder is None
    index.delete_ref_doc(docs[1].doc_id)
    assert index.delete_report_ is None and (tmp_path / INGEST_FILE).read_text(encoding="utf-8") == stamp
    persist_index(index, tmp_path)  # written as it is in memory, and bound again
    assert index.folder == tmp_path.resolve()
    assert sorted(load_index(tmp_path, embed_model=embed_model).ref_doc_info) == sorted(
        [d.doc_id for d in docs[2:]] + [docs[0].doc_id, "new"]
    )


def test_delete_ref_doc_reaches_the_graphrag_store_of_the_folder(corpora, tmp_path, embed_model):
    from llama_index_kgplus.graphrag import GraphRAGIndex
    from llama_index_kgplus.graphrag._testing import RuleBasedGraphRAGLLM

    docs = load_corpus(corpora["v1"])[:6]
    index = build_index(docs, tmp_path, embed_model=embed_model, show_progress=False)
    with GraphRAGIndex.from_defaults(tmp_path / "graphrag", llm=RuleBasedGraphRAGLLM(), show_progress=False) as g:
        g.build(docs)
    index.delete_ref_doc(docs[2].doc_id, llm=RuleBasedGraphRAGLLM())
    report = index.delete_report_
    assert report is not None and report.graphrag is not None
    assert report.graphrag["documents_deleted"] == 1 and report.llm_calls == report.graphrag["llm_calls"]
    with GraphRAGIndex.from_defaults(tmp_path / "graphrag", llm=RuleBasedGraphRAGLLM(), show_progress=False) as g:
        assert sorted(g.documents()) == sorted(d.doc_id for d in docs if d.doc_id != docs[2].doc_id)
        with pytest.raises(InputDataError, match="holds no document .*: nothing was deleted"):
            g.delete_ref_doc(docs[2].doc_id)
        # what an update with the corpus without the document gives: nothing left to do
        assert g.update([d for d in docs if d.doc_id != docs[2].doc_id]).reports_regenerated == 0


def test_upgrade_moves_a_json_index_into_lancedb_as_it_is(
    corpora, tmp_path, embed_model, counted, capsys, cli_error, monkeypatch
):
    index = tmp_path / "index"
    _ingest(corpora["v1"], index)  # JSON, with an entity graph and a hierarchy
    before, stamp = _snapshot(index, embed_model), json.loads((index / INGEST_FILE).read_text(encoding="utf-8"))
    graph = (index / "entity_graph.npz").read_bytes()
    monkeypatch.setattr(_indexing, "AUTO_LANCEDB_DOCUMENTS", 16)  # instead of 10^4 documents
    assert main(["sync", str(corpora["v1"]), "--index", str(index), "--quiet"]) == 0
    assert f"`kgplus ingest --upgrade --index {index}` moves them into LanceDB" in capsys.readouterr().err
    counted.clear()
    assert main(["ingest", "--upgrade", "--index", str(index)]) == 0
    assert capsys.readouterr().out.startswith(f"moved {len(before['nodes'])} nodes of {index} into LanceDB")
    assert not counted  # nothing embedded again
    moved = json.loads((index / INGEST_FILE).read_text(encoding="utf-8"))
    assert moved["vector_store"]["type"] == "lancedb" and moved["docstore"]
    assert [moved[k] for k in ("index_id", "settings", "embed_model")] == [
        stamp[k] for k in ("index_id", "settings", "embed_model")
    ]
    assert not {"docstore.json", "default__vector_store.json", "index_store.json"} & {p.name for p in index.iterdir()}
    assert (index / "entity_graph.npz").read_bytes() == graph
    _assert_same(_snapshot(index, embed_model), before)
    assert upgrade_index(index) == 0  # in LanceDB already
    capsys.readouterr()
    assert main(["sync", str(corpora["v2"]), "--index", str(index), "--json", "--quiet"]) == 0
    out, err = capsys.readouterr()
    report = SyncReport(**json.loads(out.strip().splitlines()[-1]))  # its settings came along: a sync goes on
    assert len(report.added) == 2 and report.summaries_written > 0 and "hint" not in err
    assert "give no DOCS_PATH" in cli_error(["ingest", str(corpora["v1"]), "--index", str(index), "--upgrade"])
    assert "Give the corpus to index" in cli_error(["ingest", "--index", str(index)])
