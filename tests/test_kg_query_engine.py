"""KGAugmentedQueryEngine: vector passages + KG paths through LlamaIndex's standard response synthesizers.

The prompt-assembly tests use LlamaIndex's ``MockLLM``, which echoes the exact prompt it receives: that lets
the test read what each standard synthesizer sent to the model. The language test uses the real local model.
"""

from __future__ import annotations

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.response_synthesizers import ResponseMode

from llama_index_kgplus.kg import KGAugmentedQueryEngine, KGPathRetriever, KnowledgeGraph, import_kg
from llama_index_kgplus.kg._paths import render_facts
from llama_index_kgplus.kg._query_engine import KG_SECTION_HEADER
from llama_index_kgplus.sample import SAMPLE_KG_NODES, SAMPLE_KG_RELATIONSHIPS

QUESTION = "How is a pharmacologic substance related to a disease or syndrome?"
PASSAGES = [
    "Antibiotics are pharmacologic substances given to cure bacterial infections.",
    "A migraine is a disease with recurrent headaches; triptans are used to stop an attack.",
    "Python lists are mutable sequences.",
]


@pytest.fixture(scope="module")
def kg(tmp_path_factory):
    uri = f"ladybug://{tmp_path_factory.mktemp('qe') / 'sample.lbug'}"
    import_kg(uri, SAMPLE_KG_NODES, SAMPLE_KG_RELATIONSHIPS)
    with KnowledgeGraph.open(uri) as graph:
        yield graph


@pytest.fixture(scope="module")
def vector_retriever(embed_model):
    index = VectorStoreIndex.from_documents([Document(text=t) for t in PASSAGES], embed_model=embed_model)
    return index.as_retriever(similarity_top_k=2)


@pytest.mark.parametrize(
    "mode",
    [ResponseMode.COMPACT, ResponseMode.REFINE, ResponseMode.TREE_SUMMARIZE, ResponseMode.SIMPLE_SUMMARIZE],
)
def test_standard_synthesizers_get_one_prompt_with_a_paths_section(kg, vector_retriever, mode):
    engine = KGAugmentedQueryEngine.from_defaults(
        KGPathRetriever.from_defaults(kg, max_paths=4), vector_retriever, llm=MockLLM(), response_mode=mode
    )
    response = engine.query(QUESTION)
    prompt = str(response)  # MockLLM answers with the prompt it was given
    paths = [p["text"] for p in response.metadata["kg_paths"]]
    assert len(paths) == 4 and all(p.startswith("pharmacologic substance -[") for p in paths)
    # one delimited section, paths in ranked order, before the passages (simple_summarize hands the model
    # the repr of its chunk list, an upstream quirk, so compare positions rather than exact newlines)
    marks = [KG_SECTION_HEADER, *(f"- {p}" for p in paths), "(end of knowledge graph paths)", PASSAGES[0]]
    positions = [prompt.find(m) for m in marks]
    assert -1 not in positions and positions == sorted(positions), positions
    assert "read 'a -[R]-> b' as 'a R b'" in prompt and QUESTION in prompt
    assert "kg_path" not in prompt  # structured metadata stays out of the prompt
    assert [e["cid"] for e in response.metadata["kg_entities"]] == ["pharmacologic_substance", "disease_or_syndrome"]
    assert response.source_nodes[0].node.metadata["source"] == "knowledge_graph"
    assert len(response.source_nodes) == 3


def test_paths_as_facts(kg, vector_retriever):
    assert render_facts(["aspirin", "headache", "migraine"], [("TREATS", "->"), ("is_a", "<-")]) == (
        "aspirin TREATS headache; migraine is a headache"
    )
    engine = KGAugmentedQueryEngine.from_defaults(
        KGPathRetriever.from_defaults(kg, max_paths=4), vector_retriever, llm=MockLLM(), path_format="facts"
    )
    response = engine.query(QUESTION)
    prompt = str(response)
    paths = response.metadata["kg_paths"]  # the structured paths are the same whatever the prompt shows
    assert len(paths) == 4 and all(p["text"].startswith("pharmacologic substance -[") for p in paths)
    facts = [
        render_facts([n["name"] for n in p["nodes"]], [(r["type"], r["direction"]) for r in p["relationships"]])
        for p in paths
    ]
    assert all(f"- {fact}\n" in prompt for fact in facts), prompt
    assert "-[" not in prompt and "read 'a -[R]-> b'" not in prompt and "facts from a knowledge graph" in prompt


async def test_async_query_matches_sync(kg, vector_retriever):
    engine = KGAugmentedQueryEngine.from_defaults(
        KGPathRetriever.from_defaults(kg, max_paths=3), vector_retriever, llm=MockLLM()
    )
    sync, asynchronous = engine.query(QUESTION), await engine.aquery(QUESTION)
    assert str(asynchronous) == str(sync)
    assert asynchronous.metadata["kg_paths"] == sync.metadata["kg_paths"]


def test_no_entities_means_no_section(kg, vector_retriever):
    engine = KGAugmentedQueryEngine.from_defaults(KGPathRetriever.from_defaults(kg), vector_retriever, llm=MockLLM())
    response = engine.query("Are Python lists mutable?")
    assert response.metadata["kg_paths"] == [] and response.metadata["kg_entities"] == []
    assert KG_SECTION_HEADER not in str(response) and PASSAGES[2] in str(response)
    kg_only = KGAugmentedQueryEngine.from_defaults(KGPathRetriever.from_defaults(kg), llm=MockLLM())
    assert str(kg_only.query("Are Python lists mutable?")) == "Empty Response"


@pytest.mark.slow
def test_real_model_answers_from_the_paths(kg, small_llm):
    """Only the KG section as context: the relations the model names must come from the paths."""
    engine = KGAugmentedQueryEngine.from_defaults(KGPathRetriever.from_defaults(kg, max_paths=6), llm=small_llm)
    response = engine.query("Which relationships link a pharmacologic substance to a disease or syndrome?")
    relations = {r["type"] for p in response.metadata["kg_paths"] for r in p["relationships"]}
    assert relations and {"treats", "prevents"} & relations
    answer = str(response).lower()
    assert any(rel.replace("_", " ") in answer or rel[:-1] in answer for rel in relations), answer
