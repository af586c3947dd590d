"""JSON output that follows a pydantic schema, from any LlamaIndex LLM.

With the local llama.cpp model the schema becomes a grammar, so the model cannot emit anything else; other
LLMs get the schema in the prompt. Either way the text is parsed, repaired if it is wrapped in prose or code
fences, validated, and retried with the problem appended to the prompt (at temperature 0 the same prompt would
only bring the same reply back); after the last try a :class:`StructuredOutputError` carries the raw text.

Example::

    class Answer(BaseModel):
        city: str = Field(max_length=60)

    answer = generate_json(llm, "Which city is the capital of France?", Answer)
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from functools import lru_cache
from typing import Any, TypeVar

from llama_index.core.llms import LLM
from pydantic import BaseModel, ValidationError

from llama_index_kgplus.errors import KGPlusError
from llama_index_kgplus.llm._tokens import llama_model

M = TypeVar("M", bound=BaseModel)
_LOCKS: dict[int, threading.Lock] = {}


class StructuredOutputError(KGPlusError, ValueError):
    """The LLM did not produce valid JSON for the schema after all retries; ``raw`` holds its last text."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


def parse_json_object(text: str) -> Any:
    """Parse JSON, tolerating code fences and prose around the first complete ``{...}`` object.

    The whole text is tried first: a valid reply may hold a fenced code block inside one of its strings.
    """
    candidates = [text.strip()]
    fenced = re.search(r"```(?:json)?\s*(.*?)```", candidates[0], re.DOTALL)
    if fenced:
        candidates.append(fenced.group(1).strip())
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
    error: ValueError = ValueError("no JSON object in the text")
    for candidate in candidates:
        start = candidate.find("{")
        if start >= 0:
            try:
                return json.JSONDecoder().raw_decode(candidate[start:])[0]
            except json.JSONDecodeError as exc:
                error = exc
    raise error


@lru_cache(maxsize=64)
def _grammar(schema_json: str) -> Any:
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_json_schema(schema_json, verbose=False)


def _complete_once(llm: LLM, prompt: str, schema: dict, max_tokens: int) -> str:
    model = llama_model(llm)
    if model is None:
        return llm.complete(prompt + _schema_hint(schema)).text
    full_prompt = llm.completion_to_prompt(prompt) if hasattr(llm, "completion_to_prompt") else prompt
    # One Llama object must not run two generations at once.
    with _LOCKS.setdefault(id(model), threading.Lock()):
        out = model.create_completion(
            prompt=full_prompt,
            grammar=_grammar(json.dumps(schema, sort_keys=True)),
            max_tokens=max_tokens,
            temperature=getattr(llm, "temperature", 0.0),
        )
    return out["choices"][0]["text"]


def _schema_hint(schema: dict) -> str:
    return f"\n\nReply with one JSON object only, following this JSON schema:\n{json.dumps(schema)}"


def _validated(raw: str, output_cls: type[M]) -> tuple[M | None, str]:
    try:
        return output_cls.model_validate(parse_json_object(raw)), ""
    except (ValueError, ValidationError) as exc:
        return None, str(exc).splitlines()[0]


def _with_feedback(prompt: str, problem: str) -> str:
    if not problem:
        return prompt
    return f"{prompt}\n\nYour previous reply was not valid ({problem}). Reply again, shorter, with valid JSON only."


def _give_up(output_cls: type[BaseModel], tries: int, problem: str, raw: str) -> StructuredOutputError:
    return StructuredOutputError(
        f"The LLM returned no valid {output_cls.__name__} JSON after {tries} tries ({problem}).", raw
    )


def generate_json(llm: LLM, prompt: str, output_cls: type[M], *, max_retries: int = 2, max_tokens: int = 1024) -> M:
    """Ask ``llm`` for one JSON object of ``output_cls``; validate; retry up to ``max_retries`` times."""
    schema = output_cls.model_json_schema()
    raw, problem = "", ""
    for _ in range(max_retries + 1):
        raw = _complete_once(llm, _with_feedback(prompt, problem), schema, max_tokens)
        result, problem = _validated(raw, output_cls)
        if result is not None:
            return result
    raise _give_up(output_cls, max_retries + 1, problem, raw)


async def agenerate_json(
    llm: LLM, prompt: str, output_cls: type[M], *, max_retries: int = 2, max_tokens: int = 1024
) -> M:
    """Async twin of :func:`generate_json` (a local model runs in a worker thread, one call at a time)."""
    if llama_model(llm) is not None:
        return await asyncio.to_thread(
            generate_json, llm, prompt, output_cls, max_retries=max_retries, max_tokens=max_tokens
        )
    hint = _schema_hint(output_cls.model_json_schema())
    raw, problem = "", ""
    for _ in range(max_retries + 1):
        raw = (await llm.acomplete(_with_feedback(prompt, problem) + hint)).text
        result, problem = _validated(raw, output_cls)
        if result is not None:
            return result
    raise _give_up(output_cls, max_retries + 1, problem, raw)
