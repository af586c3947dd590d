"""The LanceDB vector store of an index folder (`--vector-store lancedb`, issue 40): ingest and retrieve from Python
and the CLI, deletes, the ANN index, old-or-new on re-ingest, and JSON indexes that still open. Real lancedb, the
real embedding model on the bundled sample, except where a test says it uses a stand-in embedding."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
from llama_index.core.vector_stores.types import VectorStoreQuery

pytest.importorskip("lancedb")  # the `lancedb` extra (in `dev`)

from llama_index_kgplus import InputDataError, build_index, load_index, sample  # noqa: E402
from llama_index_kgplus._indexing import PackVectorStoreIndex, open_storage, persist_index  # noqa: E402
from llama_index_kgplus._lancedb import TABLE_DIR, new_store  # noqa: E402
from llama_index_kgplus._sqlitedoc import KV_DIR, FolderKVStore, SQLiteDocumentStore  # noqa: E402
from llama_index_kgplus.cli import main  # noqa: E402

QUESTION = "How do I create a virtual environment and install packages with pip?"
EXPECTED = "tutorial/venv"
#: three short documents of the sample (about 30 chunks): enough to rank, quick to embed
SUBSET = ("tutorial/venv", "tutorial/floatingpoint", "tutorial/errors")


class HashEmbedding(BaseEmbedding):
    """A stand-in for the model where only the store's behaviour is tested: hashed words, unit length."""

    dim: int = 32

    def _vector(self, text: str) -> list[float]:
        vector = np.zeros(self.dim)
        for word in text.lower().split():
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norm = np.linalg.norm(vector)
        return (vector / norm).tolist() if norm else [self.dim**-0.5] * self.dim

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)


STAND_IN = HashEmbedding(model_name="hash-32")


def stamp(index_dir: Path) -> dict:
    return json.loads((index_dir / "ingest.json").read_text(encoding="utf-8"))


def tables(index_dir: Path) -> list[str]:
    return sorted(p.name for p in (index_dir / TABLE_DIR).iterdir()) if (index_dir / TABLE_DIR).is_dir() else []


def kv_files(index_dir: Path) -> list[str]:
    return sorted(p.name for p in (index_dir / KV_DIR).iterdir()) if (index_dir / KV_DIR).is_dir() else []


def small_docs(n: int) -> list[Document]:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    return [
        Document(text=f"passage {i} " + " ".join(words[(i + k) % 12] for k in range(8)), id_=f"d{i}") for i in range(n)
    ]


@pytest.fixture(scope="module")
def lance_index(tmp_path_factory, embed_model) -> Path:
    """Part of the sample corpus ingested by the CLI into a LanceDB table."""
    folder = tmp_path_factory.mktemp("lance")
    lines = sample.SAMPLE_DOCS.read_text(encoding="utf-8").splitlines()
    docs = folder / "docs.jsonl"
    docs.write_text("".join(f"{line}\n" for line in lines if json.loads(line)["id"] in SUBSET), encoding="utf-8")
    assert main(["ingest", str(docs), "--index", str(folder / "index"), "--vector-store", "lancedb"]) == 0
    return folder / "index"


def test_cli_ingest_writes_a_table_named_by_the_stamp(lance_index):
    record = stamp(lance_index)["vector_store"]
    assert record["type"] == "lancedb" and record["uri"] == TABLE_DIR and isinstance(record["version"], int)
    assert tables(lance_index) == [f"{record['table']}.lance"]
    assert not (lance_index / "default__vector_store.json").exists()  # no JSON vectors beside the table
    # nor a JSON docstore or index store: one SQLite file, named by the stamp
    assert not any((lance_index / name).exists() for name in ("docstore.json", "index_store.json"))
    assert stamp(lance_index)["docstore"]["type"] == "sqlite"
    assert kv_files(lance_index) == [stamp(lance_index)["docstore"]["file"]]


def test_load_index_opens_the_table_and_retrieves(lance_index, embed_model):
    index = load_index(lance_index, embed_model=embed_model)
    assert isinstance(index, PackVectorStoreIndex) and type(index.vector_store).__name__ == "KGPlusLanceDBVectorStore"
    hits = index.as_retriever(similarity_top_k=3).retrieve(QUESTION)
    assert hits[0].node.ref_doc_id == EXPECTED
    assert all(0.0 < h.score <= 1.0 for h in hits) and hits[0].score >= hits[-1].score  # cosine similarities
    assert hits[0].node.node_id in index.docstore.docs
    # the docstore is LlamaIndex's KVDocumentStore over the folder's SQLite file, read without writing
    assert isinstance(index.docstore, SQLiteDocumentStore) and index.docstore.kvstore.read_only
    assert index.docstore.get_node(hits[0].node.node_id).get_content() == hits[0].node.get_content()
    # the vectors alone (what a sync reads back), as the stored nodes carry them
    stored = {n.node_id: n.get_embedding() for n in index.vector_store.get_nodes()}
    some = [*list(stored)[:5], "no such node"]
    assert index.vector_store.get_embeddings(some) == {i: stored[i] for i in some[:5]}
    assert index.vector_store.get_embeddings(["no such node"]) == {}


def test_opening_reads_no_document(lance_index, embed_model, monkeypatch):
    reads: list[str] = []
    for name in ("get", "get_all"):
        real = getattr(FolderKVStore, name)

        def spy(self, *args, _real=real, _name=name, **kwargs):
            reads.append(f"{_name}{args}{kwargs}")
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(FolderKVStore, name, spy)
    index = load_index(lance_index, embed_model=embed_model)
    assert not any("docstore/data" in r or "docstore/ref_doc_info" in r for r in reads), reads  # no node read
    # nor LlamaIndex's map of every node id: the table returns the nodes, the index struct is persisted without it
    assert [s.nodes_dict for s in open_storage(lance_index).index_store.index_structs()] == [{}]
    hits = index.as_retriever(similarity_top_k=2).retrieve(QUESTION)
    assert len(hits) == 2  # the nodes come with the table's rows


@pytest.mark.model  # the CLI loads the real embedding model itself
def test_cli_retrieve_opens_the_table_without_an_option(lance_index, capsys):
    capsys.readouterr()
    assert main(["retrieve", QUESTION, "--index", str(lance_index), "--json", "--top-k", "3"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["sources"][0]["id"] == EXPECTED and len(record["sources"]) == 3


@pytest.mark.model  # the CLI loads the real embedding model itself
def test_cli_reingest_into_a_sqlite_folder_switches_whole(lance_index, tmp_path, capsys):
    folder = tmp_path / "index"
    shutil.copytree(lance_index, folder)
    old = stamp(folder)
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "only", "text": "A single passage about pip and virtual environments."}) + "\n")
    assert main(["ingest", str(docs), "--index", str(folder), "--vector-store", "lancedb"]) == 0
    new = stamp(folder)
    assert new["docstore"]["file"] != old["docstore"]["file"] and kv_files(folder) == [new["docstore"]["file"]]
    capsys.readouterr()
    assert main(["retrieve", "pip", "--index", str(folder), "--json", "--top-k", "3"]) == 0
    assert [s["id"] for s in json.loads(capsys.readouterr().out)["sources"]] == ["only"]


def test_delete_ref_doc_removes_the_documents_nodes(lance_index, tmp_path, embed_model):
    folder = tmp_path / "index"
    shutil.copytree(lance_index, folder)
    index = load_index(folder, embed_model=embed_model)
    node_ids = set(index.ref_doc_info[EXPECTED].node_ids)
    assert node_ids and node_ids <= set(index.docstore.docs)

    kv_before = kv_files(folder)
    index.bind_folder(None)  # LlamaIndex's delete, in memory (bound to its folder, it deletes through it)
    index.delete_ref_doc(EXPECTED)
    assert not node_ids & set(index.docstore.docs)  # the docstore too (the pack's retrievers read it)
    assert all(index.docstore.get_node(n, raise_error=False) is None for n in node_ids)
    assert index.docstore.get_ref_doc_info(EXPECTED) is None
    # the delete wrote into a copy of the SQLite file: the stamped one is as it was
    assert index.docstore.kvstore.path != str(folder / KV_DIR / stamp(folder)["docstore"]["file"])
    assert set(kv_before) < set(kv_files(folder))
    assert index.vector_store.get_nodes(node_ids=sorted(node_ids)) == []
    assert all(h.node.ref_doc_id != EXPECTED for h in index.as_retriever(similarity_top_k=10).retrieve(QUESTION))
    # not persisted yet: the folder still holds the old index whole (its stamp names the old table version)
    old = load_index(folder, embed_model=embed_model)
    assert old.as_retriever(similarity_top_k=3).retrieve(QUESTION)[0].node.ref_doc_id == EXPECTED

    version = stamp(folder)["vector_store"]["version"]
    persist_index(index, folder)
    assert stamp(folder)["vector_store"]["version"] > version
    assert kv_files(folder) == [stamp(folder)["docstore"]["file"]] != kv_before  # the old file dropped
    new = load_index(folder, embed_model=embed_model)
    assert not node_ids & set(new.docstore.docs) and new.docstore.get_ref_doc_info(EXPECTED) is None
    assert all(h.node.ref_doc_id != EXPECTED for h in new.as_retriever(similarity_top_k=10).retrieve(QUESTION))


# ---------------------------------------------------------------- stand-in embedding: the store's own behaviour


def test_ann_index_is_built_above_the_threshold_and_later_adds_are_folded_in(tmp_path):
    # a small threshold instead of thousands of embeddings; the stand-in embedding keeps it fast
    big = new_store(tmp_path / "big", ann_min_rows=64, rows_per_partition=64)
    index = build_index(small_docs(200), tmp_path / "big", embed_model=STAND_IN, vector_store=big, show_progress=False)
    assert big.has_ann_index()
    kinds = {tuple(i.columns): i.index_type for i in big.table.list_indices()}
    assert kinds == {("vector",): "IvfHnswSq", ("id",): "BTree", (big.doc_id_key,): "BTree"}
    assert all(i.num_unindexed_rows == 0 for i in big.table.list_indices())
    assert index.as_retriever(similarity_top_k=4).retrieve("passage 7 alpha beta")  # searches through the index
    some = [n.node_id for n in big.get_nodes()[:3]]
    assert "ScalarIndexQuery" in big.table.search().where(f"id IN ('{some[0]}', '{some[1]}')").explain_plan()
    assert {n.node_id for n in big.get_nodes(node_ids=some)} == set(some)

    index.insert(Document(text="passage new omega omega omega", id_="new"))
    persist_index(index, tmp_path / "big")  # one new row: scanned by each query, not worth rewriting the index
    assert [i.num_unindexed_rows for i in big.table.list_indices()] == [1, 1, 1]
    new_ids = index.docstore.get_ref_doc_info("new").node_ids
    assert [n.ref_doc_id for n in big.get_nodes(node_ids=new_ids)] == ["new"]  # unindexed, found by a scan
    reopened = load_index(tmp_path / "big", embed_model=STAND_IN)
    assert "new" in reopened.ref_doc_info
    assert (
        reopened.as_retriever(similarity_top_k=1).retrieve("passage new omega omega omega")[0].node.ref_doc_id == "new"
    )
    for doc in small_docs(64):  # a partition's worth of new rows (64 in this store): folded into the ANN index
        index.insert(Document(text=doc.text + " again", id_=doc.doc_id + "-again"))
    persist_index(index, tmp_path / "big")
    assert all(i.num_unindexed_rows == 0 for i in big.table.list_indices())

    small = new_store(tmp_path / "small", ann_min_rows=1000)
    build_index(small_docs(50), tmp_path / "small", embed_model=STAND_IN, vector_store=small, show_progress=False)
    assert not small.has_ann_index()  # a flat scan below the threshold


def test_through_the_ann_index_scores_are_exact_cosine_similarities(tmp_path):
    store = new_store(tmp_path / "big", ann_min_rows=64, rows_per_partition=64)
    index = build_index(
        small_docs(300), tmp_path / "big", embed_model=STAND_IN, vector_store=store, show_progress=False
    )
    assert store.has_ann_index()
    nodes = store.get_nodes()
    vectors = np.array([n.get_embedding() for n in nodes])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for question in ("passage 7 alpha beta", "passage 123 gamma", "omega delta 42"):
        query = np.array(STAND_IN.get_query_embedding(question))
        exact = vectors @ (query / np.linalg.norm(query))
        hits = index.as_retriever(similarity_top_k=4).retrieve(question)
        by_id = {n.node_id: float(s) for n, s in zip(nodes, exact)}
        # the index's own distances are quantized and, for cosine, on another scale: re-ranked, they are exact
        assert [h.score for h in hits] == pytest.approx([by_id[h.node.node_id] for h in hits], abs=1e-5)
        assert min(h.score for h in hits) >= sorted(exact)[-4] - 1e-5  # the exact top 4


def test_fragments_are_merged_before_the_ann_index_and_a_new_tables_old_files_removed(tmp_path):
    store = new_store(tmp_path / "new", ann_min_rows=64)
    nodes = [
        TextNode(text=d.text, id_=d.doc_id, embedding=STAND_IN.get_text_embedding(d.text)) for d in small_docs(300)
    ]
    for start in range(0, 300, 100):  # as a streaming ingest writes its batches
        store.add(nodes[start : start + 100])
    assert len(store.table.to_lance().get_fragments()) == 3
    store.optimize_for_search()
    assert store.has_ann_index()
    assert len(store.table.to_lance().get_fragments()) == 1  # merged
    data = tmp_path / "new" / TABLE_DIR / f"{store.table_name}.lance" / "data"
    assert len(list(data.glob("*.lance"))) == 1  # and the files they left removed: no reader knew this table
    query = VectorStoreQuery(query_embedding=nodes[5].embedding, similarity_top_k=1)
    assert store.query(query).ids == [nodes[5].node_id]

    # a table an index names, which grows past the threshold: merged too, but readers may be using its older
    # versions, so their files stay (LanceDB's 7 days)
    build_index(small_docs(50), tmp_path / "grown", embed_model=STAND_IN, show_progress=False,
                vector_store=new_store(tmp_path / "grown", ann_min_rows=64))  # fmt: skip
    grown = load_index(tmp_path / "grown", embed_model=STAND_IN)
    grown.vector_store.ann_min_rows = 64
    for doc in small_docs(30):
        grown.insert(Document(text=doc.text + " again", id_=doc.doc_id + "-again"))
    persist_index(grown, tmp_path / "grown")
    table = grown.vector_store.table
    assert grown.vector_store.has_ann_index() and len(table.to_lance().get_fragments()) == 1
    assert len(list((tmp_path / "grown" / TABLE_DIR / f"{table.name}.lance" / "data").glob("*.lance"))) == 32


def test_the_graph_walk_keeps_at_least_the_candidates_it_re_ranks(tmp_path):
    store = new_store(tmp_path / "big", ann_min_rows=64, rows_per_partition=64, ef=1)
    index = build_index(
        small_docs(300), tmp_path / "big", embed_model=STAND_IN, vector_store=store, show_progress=False
    )
    assert store.has_ann_index() and store.ef == 1
    # LanceDB refuses an ef below the candidates it re-ranks (top_k x refine_factor): the store raises it to them
    hits = index.as_retriever(similarity_top_k=4).retrieve("passage 7 alpha beta")
    assert len(hits) == 4
    with pytest.raises(ValueError):
        new_store(tmp_path / "other", ef=0)


@pytest.mark.model  # the CLI's ingest loads the default embedding model
def test_by_default_a_large_corpus_goes_to_lancedb_and_a_small_one_to_json(tmp_path, monkeypatch, capsys):
    from llama_index_kgplus import _indexing, _lancedb

    monkeypatch.setattr(_indexing, "AUTO_LANCEDB_DOCUMENTS", 40)  # instead of 10^4 documents
    build_index(small_docs(39), tmp_path / "small", embed_model=STAND_IN, show_progress=False)
    assert "vector_store" not in stamp(tmp_path / "small") and (tmp_path / "small" / "docstore.json").is_file()
    build_index(small_docs(40), tmp_path / "large", embed_model=STAND_IN, show_progress=False)
    assert stamp(tmp_path / "large")["vector_store"]["type"] == "lancedb"
    build_index((d for d in small_docs(5)), tmp_path / "stream", embed_model=STAND_IN, show_progress=False)  # no len
    assert stamp(tmp_path / "stream")["vector_store"]["type"] == "lancedb"
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": d.id_, "text": d.text}) + "\n" for d in small_docs(40)), "utf-8")
    assert main(["ingest", str(corpus), "--index", str(tmp_path / "cli")]) == 0  # the CLI's default: auto
    assert stamp(tmp_path / "cli")["vector_store"]["type"] == "lancedb"
    monkeypatch.setattr(_lancedb, "installed", lambda: False)  # without the extra: the JSON store, at any size
    build_index(small_docs(40), tmp_path / "without", embed_model=STAND_IN, show_progress=False)
    assert "vector_store" not in stamp(tmp_path / "without")


def test_reingest_switches_tables_old_or_new(tmp_path):
    folder = tmp_path / "index"
    build_index(small_docs(20), folder, embed_model=STAND_IN, vector_store="lancedb", show_progress=False)
    first, first_kv = stamp(folder)["vector_store"]["table"], stamp(folder)["docstore"]["file"]
    # a re-ingest that dies before its switch leaves a table and a docstore no stamp names (here: a delete
    # never persisted): the old index still opens whole
    orphan = new_store(folder)
    orphan.add(load_index(folder, embed_model=STAND_IN).vector_store.get_nodes(node_ids=None)[:3])
    unbound = load_index(folder, embed_model=STAND_IN)
    unbound.bind_folder(None)
    unbound.delete_ref_doc("d0")
    assert len(tables(folder)) == 2 and len([n for n in kv_files(folder) if n.endswith(".sqlite")]) == 2
    assert len(load_index(folder, embed_model=STAND_IN).docstore.docs) == 20
    # the next ingest switches to its own table and drops the others
    build_index(small_docs(30), folder, embed_model=STAND_IN, vector_store="lancedb", show_progress=False)
    second = stamp(folder)["vector_store"]["table"]
    assert second != first and tables(folder) == [f"{second}.lance"]
    second_kv = stamp(folder)["docstore"]["file"]
    assert second_kv != first_kv and kv_files(folder) == [second_kv]
    assert len(load_index(folder, embed_model=STAND_IN).docstore.docs) == 30
    # back to the JSON default: the tables and the SQLite docstore go; and to LanceDB again: the JSON files go
    build_index(small_docs(5), folder, embed_model=STAND_IN, show_progress=False)
    assert tables(folder) == [] and (folder / "default__vector_store.json").is_file()
    assert not (folder / KV_DIR).exists() and (folder / "docstore.json").is_file()
    assert len(load_index(folder, embed_model=STAND_IN).docstore.docs) == 5
    build_index(small_docs(6), folder, embed_model=STAND_IN, vector_store="lancedb", show_progress=False)
    assert not (folder / "default__vector_store.json").exists() and len(tables(folder)) == 1
    assert not (folder / "docstore.json").exists() and not (folder / "index_store.json").exists()
    assert len(kv_files(folder)) == 1 and len(load_index(folder, embed_model=STAND_IN).docstore.docs) == 6


def test_json_indexes_still_open(tmp_path):
    folder = tmp_path / "json"
    build_index(small_docs(10), folder, embed_model=STAND_IN, show_progress=False)
    assert "vector_store" not in stamp(folder)  # what every index built before the LanceDB option has
    index = load_index(folder, embed_model=STAND_IN)
    assert isinstance(index, PackVectorStoreIndex) and type(index.vector_store).__name__ == "SimpleVectorStore"
    index.delete_ref_doc("d3")
    assert "d3" not in index.ref_doc_info and all(n.ref_doc_id != "d3" for n in index.docstore.docs.values())

    plain = tmp_path / "plain"  # a folder of plain LlamaIndex: no ingest.json
    VectorStoreIndex.from_documents(small_docs(4), embed_model=STAND_IN).storage_context.persist(str(plain))
    assert len(load_index(plain, embed_model=STAND_IN).as_retriever(similarity_top_k=2).retrieve("alpha")) == 2


def test_missing_table_and_bad_filters_are_one_line_errors(tmp_path):
    folder = tmp_path / "index"
    index = build_index(small_docs(12), folder, embed_model=STAND_IN, vector_store="lancedb", show_progress=False)
    level = MetadataFilters(filters=[MetadataFilter(key="level", value=0)])
    assert index.as_retriever(filters=level).retrieve("alpha") == []  # chunks of a flat index have no level
    doc = MetadataFilters(filters=[MetadataFilter(key="doc_id", value="d1")])
    assert {h.node.ref_doc_id for h in index.as_retriever(filters=doc).retrieve("alpha")} == {"d1"}
    with pytest.raises(InputDataError, match="filters on doc_id, id, level, ref_doc_id, not 'title'"):
        index.as_retriever(filters=MetadataFilters(filters=[MetadataFilter(key="title", value="x")])).retrieve("a")
    with pytest.raises(InputDataError, match="needs a persist_dir|lives in the index folder"):
        build_index(small_docs(2), None, embed_model=STAND_IN, vector_store="lancedb")

    shutil.rmtree(folder / TABLE_DIR)
    with pytest.raises(InputDataError, match="lacks its LanceDB table") as error:
        load_index(folder, embed_model=STAND_IN)
    assert "\n" not in str(error.value)


def test_quotes_in_ids_are_escaped(tmp_path):
    store = new_store(tmp_path)
    docs = [Document(text="it's a quote", id_="O'Brien"), Document(text='a "double" one', id_='say "hi"')]
    storage = StorageContext.from_defaults(vector_store=store)
    index = VectorStoreIndex.from_documents(docs, storage_context=storage, embed_model=STAND_IN)
    assert {n.ref_doc_id for n in store.get_nodes(node_ids=None)} == {"O'Brien", 'say "hi"'}
    index.delete_ref_doc("O'Brien")
    assert {n.ref_doc_id for n in store.get_nodes(node_ids=None)} == {'say "hi"'}
    (node,) = store.get_nodes(node_ids=None)
    assert node.embedding is not None and len(node.embedding) == STAND_IN.dim
    store.delete_nodes([node.node_id])
    assert store.get_nodes(node_ids=None) == []


async def test_async_twins(tmp_path):
    store = new_store(tmp_path)
    nodes = [
        TextNode(
            text=doc.text,
            id_=f"n{i}",
            embedding=STAND_IN.get_text_embedding(doc.text),
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc.doc_id)},
        )
        for i, doc in enumerate(small_docs(3))
    ]
    await store.async_add(nodes)

    result = await store.aquery(VectorStoreQuery(query_embedding=nodes[0].embedding, similarity_top_k=1))
    assert result.ids == [nodes[0].node_id] and result.similarities[0] == pytest.approx(1.0, abs=1e-5)
    await store.adelete(nodes[0].ref_doc_id)
    assert len(await store.aget_nodes(node_ids=None)) == 2


def test_the_sqlite_docstore_writes_the_rows_of_llamaindex_add_documents(tmp_path):
    from llama_index.core.storage.docstore.keyval_docstore import KVDocumentStore

    from llama_index_kgplus._sqlitedoc import new_kv_file

    def chunk(doc_id: str | None, number: int, **metadata) -> TextNode:
        source = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc_id)} if doc_id else {}
        return TextNode(id_=f"{doc_id}-{number}", text=f"chunk {number} of {doc_id}", metadata=metadata,
                        relationships=source)  # fmt: skip

    first = [chunk("a", 0, title="A", page=1), chunk("a", 1, title="A", page=2), chunk("b", 0), chunk(None, 0, k=1)]
    # more chunks of a document with metadata and of one without, and a chunk written again
    second = [chunk("a", 2, title="A2"), chunk("b", 1, title="B"), chunk("a", 0, title="A", page=1)]
    ours, theirs = (SQLiteDocumentStore(new_kv_file(tmp_path / name)) for name in ("ours", "theirs"))
    for batch in (first, second):
        ours.add_documents(batch)
        KVDocumentStore.add_documents(theirs, batch)
        for collection in ("docstore/data", "docstore/metadata", "docstore/ref_doc_info"):
            assert ours.kvstore.get_all(collection) == theirs.kvstore.get_all(collection)
    assert ours.get_ref_doc_info("a").node_ids == ["a-0", "a-1", "a-2"]
    assert ours.get_ref_doc_info("b").metadata == {"title": "B"}
