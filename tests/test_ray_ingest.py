"""The distributed path (issue 40): LlamaIndex's ``RayIngestionPipeline`` runs the pack's embedding model and
entity reading as Ray Data map batches on a local Ray instance (two CPUs), the corpus' dictionary is matched on
the driver (``EntityLinker.relink``, no passage read again), and ``build_index(..., nodes=...)`` writes the chunks
to a server store (PostgreSQL with pgvector, started on 127.0.0.1) with the folder beside: the same chunks,
vectors, entity links and graph hits as the in-process ingest."""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("llama_index.ingestion.ray")  # the `ray` extra (in dev)
pytest.importorskip("spacy")  # the `ner` extra (in dev)
if importlib.util.find_spec("pgserver") is None:
    pytest.skip(
        "pgserver (PostgreSQL with pgvector) is not installed: dev has it on x86_64 Linux with Python <= 3.12",
        allow_module_level=True,
    )

import ray  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.ingestion.ray import RayIngestionPipeline, RayTransformComponent  # noqa: E402
from llama_index.vector_stores.postgres import PGVectorStore  # noqa: E402

from llama_index_kgplus import (  # noqa: E402
    EntityGraph,
    EntityGraphRetriever,
    EntityLinker,
    InputDataError,
    build_index,
    load_corpus,
    load_index,
    sample,
)
from llama_index_kgplus._testing import postgres_server  # noqa: E402

CHUNKS = {"chunk_size": 384, "chunk_overlap": 32}  # the pack's defaults, given to both ingests
QUESTIONS = ["When did Lothair II's mother die?", "Who was the husband of Teutberga?"]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    with postgres_server(tmp_path_factory.mktemp("postgres"), "kgplus-test-password") as server:
        yield server


def key(node) -> tuple[str | None, str]:
    return node.ref_doc_id, node.get_content()


def links(nodes) -> dict[tuple[str | None, str], list[str]]:
    return {key(n): sorted(e["name"] for e in n.metadata.get("entities") or []) for n in nodes}


@pytest.mark.slow
def test_ray_pipeline_then_build_index_from_nodes_equals_the_in_process_ingest(
    local_ray, postgres, embed_model, tmp_path
):
    documents = load_corpus(sample.SAMPLE_MULTIHOP_DOCS)[:40]  # Lothair II's family and 30 more passages
    # in process: split, embed, link (titles + ner), in one build_index
    linker = EntityLinker.from_defaults(["titles", "ner"])
    local = build_index(documents, tmp_path / "local", embed_model=embed_model, extra_transformations=[linker],
                        show_progress=False, **CHUNKS)  # fmt: skip
    local_nodes = list(local.docstore.docs.values())
    local_graph = EntityGraph.from_nodes(local_nodes, linker.dictionary_, index_id=local.index_id)

    # on Ray: each batch split, embedded and read by spaCy where it lands
    pipeline = RayIngestionPipeline(
        transformations=[
            RayTransformComponent(SentenceSplitter, **CHUNKS),
            RayTransformComponent(type(embed_model), map_batches_kwargs={"batch_size": 32, "concurrency": 2}),
            RayTransformComponent(EntityLinker, sources=["ner"], map_batches_kwargs={"batch_size": 32}),
        ]
    )
    nodes = pipeline.run(documents=documents)
    assert sorted(map(key, nodes)) == sorted(map(key, local_nodes))
    position = {doc.doc_id: i for i, doc in enumerate(documents)}  # batches come back as they finish
    nodes.sort(key=lambda n: (position[n.ref_doc_id], n.start_char_idx or 0))
    # the corpus' dictionary, matched over every chunk on the driver: what each batch read is reused
    relinker = EntityLinker.from_defaults(["titles", "ner"])
    relinker.relink(nodes, unread=())
    assert links(nodes) == links(local_nodes)

    store = PGVectorStore.from_params(
        host=postgres.host, port=postgres.port, database=postgres.database, user=postgres.user,
        password=postgres.password, table_name="ray", embed_dim=384,
    )  # fmt: skip
    index = build_index(documents, tmp_path / "ray", embed_model=embed_model, vector_store=store, nodes=nodes,
                        show_progress=False, **CHUNKS)  # fmt: skip
    graph = EntityGraph.from_nodes(nodes, relinker.dictionary_, index_id=index.index_id)
    graph.persist(tmp_path / "ray")
    assert graph.n_passages == local_graph.n_passages

    reopened = load_index(tmp_path / "ray", embed_model=embed_model, vector_store=store)
    for question in QUESTIONS:
        want = EntityGraphRetriever.from_index(local, local_graph, similarity_top_k=5).retrieve(question)
        stored = EntityGraph.load(tmp_path / "ray", index_id=reopened.index_id)
        got_hits = EntityGraphRetriever.from_index(reopened, stored, similarity_top_k=5).retrieve(question)
        assert [key(h.node) for h in got_hits] == [key(h.node) for h in want], question
        assert [h.score for h in got_hits] == pytest.approx([h.score for h in want], abs=1e-3)


def test_nodes_that_are_not_the_documents_embedded_chunks_are_refused(embed_model, tmp_path):
    documents = load_corpus(sample.SAMPLE_MULTIHOP_DOCS)[:2]
    chunks = SentenceSplitter(**CHUNKS)(documents)
    with pytest.raises(InputDataError, match="has no embedding"):
        build_index(documents, tmp_path / "a", embed_model=embed_model, nodes=chunks, show_progress=False)
    for chunk in chunks:
        chunk.embedding = [0.0] * 384
    with pytest.raises(InputDataError, match="belongs to no document given"):
        build_index(documents[:1], tmp_path / "b", embed_model=embed_model, nodes=chunks, show_progress=False)
    assert not (tmp_path / "a").exists() or not any((tmp_path / "a").iterdir())
