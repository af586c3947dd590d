"""JSON-schema-constrained output: parsing, repair, retries, and the real local LLM under a grammar."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from llama_index_kgplus._structured import agenerate_json, generate_json, parse_json_object
from llama_index_kgplus._testing import ScriptedLLM
from llama_index_kgplus.errors import StructuredOutputError


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
