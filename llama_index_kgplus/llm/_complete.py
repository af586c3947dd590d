"""Plain completions of any LlamaIndex LLM, bounded for an in-process llama.cpp model: a token bound, a JSON
grammar, a stop at a sentence end or when the text is enough, all through the LLM's ``complete()`` (see
:mod:`._llama`), so callbacks and instrumentation see every call. JSON output: :mod:`llama_index_kgplus._structured`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse

from llama_index_kgplus.llm._grammar import grammar_options
from llama_index_kgplus.llm._llama import SentenceStop, TextStop, is_llama_cpp, llama_complete, llama_vocabulary
from llama_index_kgplus.llm._llama import temperature as _temperature
from llama_index_kgplus.llm._usage import MeteredLLM


def local_llama(llm: Any) -> Any | None:
    """The ``LlamaCPP`` LLM that ``llm`` is (or wraps, when it went through ``metered``), else None."""
    inner = llm.inner if isinstance(llm, MeteredLLM) else llm
    return inner if is_llama_cpp(inner) else None


def repeats_itself(llm: Any) -> bool:
    """Whether ``llm`` gives the same reply to the same prompt: an in-process llama.cpp model at temperature 0."""
    local = local_llama(llm)
    return local is not None and _temperature(local) == 0


def complete_response(
    llm: Any,
    prompt: str,
    *,
    max_tokens: int = 512,
    sentence_stop: int | None = None,
    grammar: str | None = None,
    stop_when: Callable[[str], bool] | None = None,
) -> CompletionResponse:
    """Completion of ``prompt`` by any LlamaIndex LLM. With a llama.cpp model ``max_tokens`` bounds it, ``grammar``
    (GBNF, e.g. :func:`json_grammar`) constrains it, ``stop_when(text)`` ends it once true, and ``raw`` is
    llama.cpp's reply (``usage``, ``choices[0]["finish_reason"]``). With ``sentence_stop`` the reply stops at the
    first sentence end after that many tokens, or at the bound at its last sentence end; one that is still in its
    first sentence at the bound may finish that sentence (at most half the bound more)."""
    local = local_llama(llm)
    if local is None:
        return llm.complete(prompt)
    options: dict[str, Any] = {"max_tokens": max_tokens}
    if grammar is not None:
        options.update(grammar_options(local, grammar))
    stops: list[Any] = []
    sentence = None
    if sentence_stop is not None:
        sentence = SentenceStop(llama_vocabulary(local), sentence_stop, max_tokens)
        stops.append(sentence)
        options["max_tokens"] = max_tokens + max_tokens // 2  # room for a first sentence to end past the bound
    if stop_when is not None:
        stops.append(TextStop(llama_vocabulary(local), stop_when))
    if stops:
        from llama_cpp import StoppingCriteriaList

        options["stopping_criteria"] = StoppingCriteriaList(stops)
    response = llm.complete(prompt, **options) if llm is not local else llama_complete(local, prompt, **options)
    if sentence is not None and sentence.text is not None:
        response.text = sentence.text
        if isinstance(response.raw, dict):
            response.raw["choices"][0]["text"] = sentence.text
    return response


async def acomplete_response(
    llm: Any,
    prompt: str,
    *,
    max_tokens: int = 512,
    sentence_stop: int | None = None,
    grammar: str | None = None,
    stop_when: Callable[[str], bool] | None = None,
) -> CompletionResponse:
    """Async twin of :func:`complete_response` (a local model runs in a worker thread)."""
    if local_llama(llm) is not None:
        return await asyncio.to_thread(
            complete_response,
            llm,
            prompt,
            max_tokens=max_tokens,
            sentence_stop=sentence_stop,
            grammar=grammar,
            stop_when=stop_when,
        )
    return await llm.acomplete(prompt)


def complete_text(llm: Any, prompt: str, *, max_tokens: int = 512) -> str:
    """Plain completion of ``prompt`` by any LlamaIndex LLM; with a llama.cpp model ``max_tokens`` bounds it."""
    return complete_response(llm, prompt, max_tokens=max_tokens).text


async def acomplete_text(llm: Any, prompt: str, *, max_tokens: int = 512) -> str:
    """Async twin of :func:`complete_text` (a local model runs in a worker thread)."""
    return (await acomplete_response(llm, prompt, max_tokens=max_tokens)).text
