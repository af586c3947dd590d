"""JSON-schema-constrained output: parsing, repair, retries, and the real local LLM under a grammar."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from llama_index_kgplus._structured import agenerate_json, generate_json, parse_json_object
from llama_index_kgplus._testing import ScriptedLLM
from llama_index_kgplus.errors import StructuredOutputError
from llama_index_kgplus.llm._grammar import grammar_options, json_grammar
from llama_index_kgplus.llm._llama import llama_complete


class Capital(BaseModel):
    country: str = Field(max_length=40)
    city: str = Field(max_length=40)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '```json\n{"a": 1}\n```',
        'Sure! Here it is: {"a": 1} Hope that helps.',
    ],
)
def test_parse_json_object_repairs_wrapping(text):
    assert parse_json_object(text) == {"a": 1}


def test_parse_json_object_keeps_a_code_fence_inside_a_string():
    # a real reply of the local model (statements of an answer that quoted code)
    text = '{"statements": ["Use ctypes.", "```python\\nimport ctypes\\n```"]}'
    assert parse_json_object(text) == {"statements": ["Use ctypes.", "```python\nimport ctypes\n```"]}
    assert parse_json_object('```json\n{"a": "```x```"}\n```') == {"a": "```x```"}


def test_parse_json_object_rejects_prose():
    with pytest.raises(ValueError):
        parse_json_object("no json here")


def test_broken_json_is_retried_then_accepted():
    llm = ScriptedLLM(replies=['{"country": "France", "city": ', '{"country": "France", "city": "Paris"}'])
    assert generate_json(llm, "Capital of France?", Capital) == Capital(country="France", city="Paris")
    assert "JSON schema" in llm.prompts[0]
    # the retry says what was wrong: a deterministic model would otherwise repeat itself
    assert "previous reply was not valid" not in llm.prompts[0] and "previous reply was not valid" in llm.prompts[1]


async def test_async_retries_and_gives_up_with_raw_text():
    llm = ScriptedLLM(replies=["nope", '{"country": 3}', "still nope"])
    with pytest.raises(StructuredOutputError, match="after 3 tries") as info:
        await agenerate_json(llm, "Capital of France?", Capital)
    assert info.value.raw == "still nope"


@pytest.mark.slow
def test_local_llm_follows_the_schema(small_llm):
    answer = generate_json(small_llm, "What is the capital city of France? Give the country and the city.", Capital)
    assert answer.city.lower() == "paris"


@pytest.mark.slow
async def test_local_llm_async(small_llm):
    answer = await agenerate_json(
        small_llm, "What is the capital city of Italy? Give the country and the city.", Capital
    )
    assert answer.city.lower() == "rome"


class Report(BaseModel):
    title: str = Field(max_length=50)
    findings: list[str] = Field(min_length=2, max_length=2)
    rating: float


@pytest.mark.slow
def test_the_greedy_grammar_gives_llama_cpps_constrained_reply_token_for_token(small_llm):
    from llama_cpp import LlamaGrammar

    grammar = json_grammar(json.dumps(Report.model_json_schema(), sort_keys=True))
    prompt = "Describe the river Rhine in two sentences."  # prose asked for: the grammar must refuse tokens

    def reply(**options):
        # llama.cpp reuses the cached prefix of the previous prompt, and logits computed in batches of other sizes
        # may differ in the last bits: both replies follow the same prompt
        llama_complete(small_llm, "Hello", max_tokens=1)
        return llama_complete(small_llm, prompt, max_tokens=80, **options)

    reference = reply(grammar=LlamaGrammar.from_string(grammar))
    options = grammar_options(small_llm, grammar)
    greedy = reply(**options)
    assert greedy.text == reference.text and greedy.text.startswith("{")
    assert options["logits_processor"][0].refused > 0  # the whole vocabulary was masked where it had to be
    # sampling at a temperature keeps llama.cpp's grammar sampler
    assert set(grammar_options(small_llm.model_copy(update={"temperature": 0.7}), grammar)) == {"grammar"}
