"""Every retriever, engine and the router of the library assembly pickles and runs in a spawn worker, with the
models pickled once however many objects share them."""

from __future__ import annotations

import io
import multiprocessing
import pickle

import pytest
from _worker import answer_all

from llama_index_kgplus import EntityGraph, EntityLinker, GraphRAGIndex, KGPlusSources, build_index, load_corpus
from llama_index_kgplus._defaults import FAST_LLM
from llama_index_kgplus.graph_stores import ladybug_uri
from llama_index_kgplus.graphrag._testing import RuleBasedGraphRAGLLM
from llama_index_kgplus.kg import KnowledgeGraph, import_kg
from llama_index_kgplus.llm import llm_from_spec
from llama_index_kgplus.sample import (
    SAMPLE_KG_NODES,
    SAMPLE_KG_RELATIONSHIPS,
    SAMPLE_MULTIHOP_DOCS,
    SAMPLE_WEATHER_TABLE,
    sample_glossary_path,
)

QUESTIONS = {
    "router": "What was the total precipitation in Seattle in 2014?",
    "retriever:local": "When did Lothair II's mother die?",
    "retriever:multihop": "When did Lothair II's mother die?",
    "retriever:kg": "How is a virus related to a disease or syndrome?",
    "engine:local": "When did Lothair II's mother die?",
    "engine:multihop": "When did Lothair II's mother die?",
    "engine:kg": "How is a virus related to a disease or syndrome?",
    "engine:global": "What are the main themes?",
    "engine:sql": "What was the total precipitation in Seattle in 2014?",
    "routed": "What are the main themes of these documents?",  # global: answered by the rule-based stand-in
}


@pytest.fixture(scope="module")
def sources(tmp_path_factory, embed_model):
    tmp = tmp_path_factory.mktemp("workers")
    docs = load_corpus(SAMPLE_MULTIHOP_DOCS)[:24]
    linker = EntityLinker.from_defaults(["titles"])
    index = build_index(docs, tmp / "index", embed_model=embed_model, extra_transformations=[linker])
    EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id).persist(
        tmp / "index"
    )
    uri = ladybug_uri(tmp / "kg.lbug")
    with KnowledgeGraph.open(uri, create=True) as kg:
        import_kg(kg, SAMPLE_KG_NODES, SAMPLE_KG_RELATIONSHIPS)
    graphrag = GraphRAGIndex.from_defaults(tmp / "grag", llm=RuleBasedGraphRAGLLM(), show_progress=False)
    graphrag.build(docs[:6])
    opened = KGPlusSources(
        index=tmp / "index", kg_store=uri, graphrag=graphrag, tables={"weather": SAMPLE_WEATHER_TABLE},
        glossary=sample_glossary_path(), llm=llm_from_spec(FAST_LLM, max_new_tokens=24, context_window=2048, n_threads=1),
        embed_model=embed_model, similarity_top_k=3,
    ).open()  # fmt: skip
    yield opened
    opened.close()
    graphrag.close()


def _objects(sources: KGPlusSources) -> dict[str, object]:
    objects: dict[str, object] = {"router": sources.router()}
    for route in ("local", "multihop", "kg"):
        objects[f"retriever:{route}"] = sources.retriever(route)
    for route in sources.routes:
        objects[f"engine:{route}"] = sources.query_engine(route)
    objects["routed"] = sources.routed_query_engine()
    return objects


def _embedding_models_in(obj: object) -> int:
    """How many distinct embedding model objects pickling ``obj`` writes (the pickler is asked about every
    reference before it looks in its memo)."""
    from llama_index.core.base.embeddings.base import BaseEmbedding

    seen: set[int] = set()

    class Counting(pickle.Pickler):
        def persistent_id(self, value: object) -> None:
            if isinstance(value, BaseEmbedding):
                seen.add(id(value))
            return None

    Counting(io.BytesIO()).dump(obj)
    return len(seen)


@pytest.mark.slow
def test_every_object_pickles_and_answers_in_a_spawn_worker(sources, embed_model):
    assert sources.routes == ["local", "multihop", "global", "kg", "sql"]
    objects = _objects(sources)
    cheap = {name: obj for name, obj in objects.items() if name == "router" or name.startswith("retriever:")}
    expected = answer_all(cheap, QUESTIONS)  # no LLM: the worker must give exactly these
    data = pickle.dumps(objects)
    # the embedding model is shared by the router, the retrievers and the compressors: pickled once (the default
    # pickles its settings only, so its size says nothing; count the distinct embedding models the pickle reaches)
    assert _embedding_models_in(objects) == 1
    sources.close()  # the embedded graph store is opened by one process at a time: the worker opens it now
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        answers = pool.apply(answer_all, (data, QUESTIONS))
    assert set(answers) == set(objects)
    for name, answer in answers.items():
        assert answer, name  # a route, passages or an answer came back
    for name, answer in expected.items():  # the router and the retrievers answer exactly as in this process
        assert answers[name] == answer, name
    assert answers["router"] == "sql"
