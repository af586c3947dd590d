"""The two kinds of LLM call GraphRAG makes: schema-constrained JSON (with retry and repair) and plain text.

JSON goes through :func:`llama_index_kgplus.structured.agenerate_json` one attempt at a time, because a greedy
local model asked the same prompt twice answers the same broken text twice: after a failed attempt the
output is first repaired (wrapping prose and code fences by ``structured``; a reply cut off at the token
limit, or with raw control characters in its strings, by :func:`truncated_json_candidates`, which keeps the
complete items), and only then asked again with the problem spelled out in the prompt. After the last attempt a ``StructuredOutputError`` carries the raw text.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, TypeVar

from llama_index.core.llms import LLM
from pydantic import BaseModel, ValidationError

from llama_index_kgplus._sync import run_sync
from llama_index_kgplus.structured import StructuredOutputError, agenerate_json

M = TypeVar("M", bound=BaseModel)

_CLOSERS = {"{": "}", "[": "]"}


def truncated_json_candidates(text: str) -> list[Any]:
    """Parses of JSON that was cut off: unfinished trailing items dropped, open brackets closed (raw control
    characters inside strings, which strict JSON rejects, are accepted).

    ``'{"a": [{"x": 1}, {"x": 2}, {"x": '`` gives ``{"a": [{"x": 1}, {"x": 2}]}``. Candidates come
    innermost cut first (keeping the most); an empty list when nothing parseable is left.
    """
    start = text.find("{")
    if start < 0:
        return []
    text = text[start:]
    stack: list[list[Any]] = []  # [open char, last safe cut inside it]
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            stack.append([ch, i + 1])
        elif ch in "}]":
            if not stack:
                return []
            stack.pop()
            if not stack:  # complete: only raw control characters inside strings can be wrong with it
                try:
                    return [json.loads(text[: i + 1], strict=False)]
                except json.JSONDecodeError:
                    return []
            stack[-1][1] = i + 1
        elif ch == "," and stack:
            stack[-1][1] = i
    candidates = []
    for depth in range(len(stack) - 1, -1, -1):
        cut = text[: stack[depth][1]].rstrip().rstrip(",")
        closers = "".join(_CLOSERS[open_ch] for open_ch, _ in reversed(stack[: depth + 1]))
        try:
            candidates.append(json.loads(cut + closers, strict=False))
        except json.JSONDecodeError:
            continue
    return candidates


def _with_feedback(prompt: str, problem: str) -> str:
    return (
        f"{prompt}\n\nYour previous reply was rejected: {problem}. "
        "Reply again with one complete, valid JSON object that follows the schema."
    )


async def ajson_call(
    llm: LLM, prompt: str, output_cls: type[M], *, max_attempts: int = 2, max_tokens: int = 1024
) -> tuple[M, int]:
    """One ``output_cls`` from ``llm``: ``(result, attempts used)``; raises ``StructuredOutputError``."""
    problem, raw = "", ""
    for attempt in range(1, max(1, max_attempts) + 1):
        text = prompt if attempt == 1 else _with_feedback(prompt, problem)
        try:
            return await agenerate_json(llm, text, output_cls, max_retries=0, max_tokens=max_tokens), attempt
        except StructuredOutputError as exc:
            raw, problem = exc.raw, str(exc)
        for candidate in truncated_json_candidates(raw):
            try:
                return output_cls.model_validate(candidate), attempt
            except ValidationError:
                continue
    raise StructuredOutputError(
        f"No valid {output_cls.__name__} JSON after {max(1, max_attempts)} attempts: {problem}", raw
    )


def json_call(
    llm: LLM, prompt: str, output_cls: type[M], *, max_attempts: int = 2, max_tokens: int = 1024
) -> tuple[M, int]:
    """Sync twin of :func:`ajson_call`."""
    return run_sync(ajson_call(llm, prompt, output_cls, max_attempts=max_attempts, max_tokens=max_tokens))


def _llama_lock(model: Any) -> threading.Lock:
    # Share structured's per-model lock, so text and JSON generations never overlap on one llama.cpp context.
    from llama_index_kgplus.structured import _LOCKS

    return _LOCKS.setdefault(id(model), threading.Lock())


def text_call(llm: LLM, prompt: str, *, max_tokens: int = 512) -> str:
    """Plain completion; with a llama.cpp model ``max_tokens`` bounds the answer."""
    from llama_index_kgplus.llm._tokens import llama_model

    model = llama_model(llm)
    if model is None:
        return llm.complete(prompt).text
    full_prompt = llm.completion_to_prompt(prompt) if hasattr(llm, "completion_to_prompt") else prompt
    with _llama_lock(model):
        out = model.create_completion(
            prompt=full_prompt, max_tokens=max_tokens, temperature=getattr(llm, "temperature", 0.0)
        )
    return out["choices"][0]["text"]


async def atext_call(llm: LLM, prompt: str, *, max_tokens: int = 512) -> str:
    """Async twin of :func:`text_call` (a local model runs in a worker thread)."""
    from llama_index_kgplus.llm._tokens import llama_model

    if llama_model(llm) is not None:
        return await asyncio.to_thread(text_call, llm, prompt, max_tokens=max_tokens)
    return (await llm.acomplete(prompt)).text
