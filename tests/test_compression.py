"""ContextCompressor with the real embedding model: what it keeps, in which order, within which budget; sources
stay exact; bad input (tiny budgets, no text, code, text without spaces, no tokenizer)."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import (
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from llama_index_kgplus.compression import ContextCompressor
from llama_index_kgplus.compression._apply import postprocessors_for, query_with_hints
from llama_index_kgplus.compression._compressor import COMPRESSION_KEY
from llama_index_kgplus.compression._units import join_units, split_units
from llama_index_kgplus.llm._tokens import TokenCounter

NORMANS = (
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy. "
    "They were descended from Norse raiders and pirates from Denmark, Iceland and Norway. "
    "The Norman dynasty had a major political, cultural and military impact on medieval Europe. "
    "In 1066 William the Conqueror led the Norman conquest of England. "
    "Norman architecture is known for its round arches."
)
PYTHON = (
    "Python is a high-level programming language. Its design philosophy emphasizes code readability. "
    "Python is dynamically typed and garbage-collected."
)
QUESTION = "In which year did the Normans conquer England?"


def hit(node_id: str, text: str, score: float = 0.5, **metadata) -> NodeWithScore:
    node = TextNode(id_=node_id, text=text, metadata={"doc_id": node_id, **metadata},
                    excluded_llm_metadata_keys=[], excluded_embed_metadata_keys=[])  # fmt: skip
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"doc-{node_id}")
    return NodeWithScore(node=node, score=score)


@pytest.fixture(scope="module")
def compressor(embed_model) -> ContextCompressor:
    return ContextCompressor.from_defaults(40, embed_model=embed_model)


def test_keeps_the_relevant_sentences_in_passage_order_within_the_budget(embed_model):
    compressor = ContextCompressor.from_defaults(45, embed_model=embed_model)
    out = compressor.postprocess_nodes([hit("normans", NORMANS, 0.9), hit("python", PYTHON, 0.4)], query_str=QUESTION)
    normans, python = (h.node for h in out)
    assert "In 1066 William the Conqueror led the Norman conquest of England." in normans.text
    assert "round arches" not in normans.text and normans.text != NORMANS
    sentences = [s.text for s in split_units(NORMANS)]
    kept = [s for s in sentences if s in normans.text]
    assert normans.text == " ".join(kept)  # passage order, nothing rewritten
    total = sum(h.node.metadata[COMPRESSION_KEY]["tokens"] for h in out)
    assert 0 < total <= 45
    record = normans.metadata[COMPRESSION_KEY]
    assert record["units"] == 5 and record["kept_units"] == len(kept) and record["original_tokens"] > record["tokens"]
    assert record["tokenizer"].startswith("estimate")  # no LLM given: says its counts are estimates


def test_sources_stay_exact_and_an_emptied_node_leaves_the_prompt_not_the_sources(embed_model):
    class Fixed(BaseRetriever):
        def _retrieve(self, query_bundle):
            return [hit("normans", NORMANS, 0.9, title="Normans"), hit("python", PYTHON, 0.4, title="Python")]

    compressor = ContextCompressor.from_defaults(30, embed_model=embed_model)
    # MockLLM echoes its prompt: what reaches the LLM is checked, not an answer.
    engine = RetrieverQueryEngine.from_args(Fixed(), llm=MockLLM(), node_postprocessors=[compressor])
    response = engine.query(QUESTION)
    assert [h.node.id_ for h in response.source_nodes] == ["normans", "python"]
    python = response.source_nodes[1].node
    assert python.text == "" and python.metadata[COMPRESSION_KEY]["dropped"] is True
    assert python.metadata["title"] == "Python" and python.ref_doc_id == "doc-python"
    assert python.get_content(MetadataMode.LLM) == ""
    prompt = str(response)
    assert "1066" in prompt and "title: Normans" in prompt
    assert "Python" not in prompt and "compression" not in prompt  # neither its text, its title nor our record


def test_budget_smaller_than_any_sentence_keeps_the_single_best_and_says_so(embed_model):
    compressor = ContextCompressor.from_defaults(1, embed_model=embed_model)
    out = compressor.postprocess_nodes([hit("python", PYTHON), hit("normans", NORMANS)], query_str=QUESTION)
    kept = [h.node for h in out if h.node.text]
    assert [n.id_ for n in kept] == ["normans"]
    assert kept[0].text == "In 1066 William the Conqueror led the Norman conquest of England."
    assert "smaller than one sentence" in kept[0].metadata[COMPRESSION_KEY]["note"]


def test_nodes_without_text_and_kg_sections_pass_whole(embed_model):
    section = hit("kg", "Knowledge graph paths:\n- normans -[conquered]-> england", kg_path=[{"length": 1}])
    empty = hit("empty", "")
    compressor = ContextCompressor.from_defaults(200, embed_model=embed_model)
    out = compressor.postprocess_nodes([section, empty, hit("normans", NORMANS)], query_str=QUESTION)
    assert out[0] is section and out[1] is empty
    assert COMPRESSION_KEY in out[2].node.metadata


def test_code_and_text_without_sentence_ends_fall_back_to_lines_and_windows():
    code = "PI = 3.14159\ndef area(r):\n    return PI * r * r\n\ndef volume(r):\n    return 4 / 3 * PI * r ** 3"
    units = split_units(code)
    assert [u.text for u in units] == ["PI = 3.14159", "def area(r):\n    return PI * r * r",
                                       "def volume(r):\n    return 4 / 3 * PI * r ** 3"]  # fmt: skip
    assert join_units([units[0], units[2]]) == "PI = 3.14159\n\ndef volume(r):\n    return 4 / 3 * PI * r ** 3"
    long_block = split_units("def f():\n" + "\n".join(f"    x{i} = {i}" for i in range(60)), max_chars=200)
    assert len(long_block) == 61 and long_block[1].text == "    x0 = 0"  # an overlong block: its lines
    chinese = "诺曼人是在十世纪和十一世纪将其名字赋予诺曼底的人" * 30
    windows = split_units(chinese, max_chars=100)
    assert len(windows) > 1 and all(len(u.text) <= 100 for u in windows)
    assert "".join(u.text for u in windows) == chinese


def test_code_chunk_is_compressed_line_by_line(embed_model):
    code = "import math\n\ndef circle_area(radius):\n    return math.pi * radius ** 2\n\ndef greet(name):\n    print('hello', name)"
    compressor = ContextCompressor.from_defaults(20, embed_model=embed_model)
    [out] = compressor.postprocess_nodes([hit("code", code)], query_str="How do I compute the area of a circle?")
    assert "def circle_area(radius):\n    return math.pi * radius ** 2" in out.node.text
    assert "greet" not in out.node.text


def test_hints_from_the_engine_steer_the_choice(embed_model):
    text = "The capital of the country is Canberra. Marsupials such as the kangaroo live there."
    compressor = ContextCompressor.from_defaults(14, embed_model=embed_model)  # room for one of the two sentences
    question = "Tell me about the city."
    plain = compressor.postprocess_nodes([hit("a", text)], query_bundle=QueryBundle(question))
    hinted = compressor.postprocess_nodes([hit("a", text)], query_bundle=query_with_hints(question, "wild animals"))
    assert plain[0].node.text == "The capital of the country is Canberra."
    assert hinted[0].node.text == "Marsupials such as the kangaroo live there."
    assert query_with_hints("q", "q", None, "").custom_embedding_strs is None  # no hint: the plain question


async def test_async_gives_the_same_result(compressor):
    nodes = [hit("normans", NORMANS), hit("python", PYTHON)]
    sync = compressor.postprocess_nodes(nodes, query_str=QUESTION)
    asynchronous = await compressor.apostprocess_nodes(nodes, query_str=QUESTION)
    assert [h.node.text for h in sync] == [h.node.text for h in asynchronous]


def test_configuration_is_hashable_and_validated(embed_model):
    a = ContextCompressor.from_defaults(100, embed_model=embed_model).to_dict()
    b = ContextCompressor.from_defaults(200, embed_model=embed_model).to_dict()
    assert a != b and a["class_name"] == "ContextCompressor"
    with pytest.raises(ValueError):
        ContextCompressor.from_defaults(0, embed_model=embed_model)
    with pytest.raises(ValueError, match="needs the query"):
        ContextCompressor.from_defaults(10, embed_model=embed_model).postprocess_nodes([hit("a", PYTHON)])
    assert postprocessors_for(None, None) == []


@pytest.mark.slow
def test_counts_in_the_llm_tokens_when_it_has_a_tokenizer(embed_model, small_llm):
    counter = TokenCounter.for_llm(small_llm)
    assert counter.exact and counter.name == "llama.cpp"
    assert counter.count("In 1066 William the Conqueror") == len(
        small_llm._model.tokenize("In 1066 William the Conqueror".encode(), add_bos=False, special=True)
    )
    compressor = ContextCompressor.from_defaults(25, embed_model=embed_model, llm=small_llm)
    [out] = compressor.postprocess_nodes([hit("normans", NORMANS)], query_str=QUESTION)
    record = out.node.metadata[COMPRESSION_KEY]
    assert record["tokenizer"] == "llama.cpp" and record["tokens"] == counter.count(out.node.text) <= 25
    assert not TokenCounter.for_llm(MockLLM()).exact


def test_async_twin_runs_inside_an_event_loop(compressor):
    async def both():
        return await asyncio.gather(*(compressor.apostprocess_nodes([hit("n", NORMANS)], query_str=QUESTION)
                                      for _ in range(2)))  # fmt: skip

    first, second = asyncio.run(both())
    assert first[0].node.text == second[0].node.text
