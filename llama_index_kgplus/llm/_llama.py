"""Plain completions: the one place that calls ``Llama.create_completion`` on the llama.cpp model behind a
``LlamaCPP`` LLM (for a token bound or a JSON grammar that LlamaIndex's wrapper cannot pass), with the LLM's chat
template applied and one generation at a time per model, and :func:`complete_text` / :func:`complete_response`
for any LLM. JSON output: :mod:`llama_index_kgplus.structured`."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse

from llama_index_kgplus.text import ends_sentence, split_sentences

_LOCKS: dict[int, threading.Lock] = {}


def llama_model(llm: Any) -> Any | None:
    """The ``llama_cpp.Llama`` behind a ``LlamaCPP`` LLM (also when wrapped by ``metered``), else None."""
    model = getattr(getattr(llm, "inner", llm), "_model", None)
    return model if type(model).__name__ == "Llama" else None


def llama_complete(llm: Any, prompt: str, *, max_tokens: int, grammar: Any = None) -> str | None:
    """``prompt`` completed by the llama.cpp model behind ``llm`` (at most ``max_tokens``, under ``grammar`` if
    given), or None when ``llm`` is not a llama.cpp LLM."""
    out = _create_completion(llm, prompt, max_tokens=max_tokens, grammar=grammar)
    return None if out is None else out["choices"][0]["text"]


class _SentenceStop:
    """A llama.cpp stopping criterion: the reply stops at the end of a sentence once it has ``min_tokens`` tokens.

    llama.cpp calls it after sampling each token with the tokens evaluated so far (the first call: the prompt
    alone). A sentence has ended when the reply before its last token ends with closing punctuation, that last
    token starts with a space or a line break (not "2." followed by "5"), and the sentence splitter starts a new
    sentence there (not after "Dr."); :attr:`text` is then the reply up to that end (llama.cpp's own text keeps
    the next sentence's first token).
    """

    def __init__(self, model: Any, min_tokens: int) -> None:
        self._model, self._min_tokens = model, min_tokens
        self._start: int | None = None
        self.text: str | None = None

    def _decode(self, tokens: Any) -> str:
        return self._model.detokenize([int(t) for t in tokens]).decode("utf-8", "ignore")

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        if self._start is None:
            self._start = len(input_ids)
        reply = input_ids[self._start :]
        following = self._decode(reply[-1:])
        if len(reply) <= self._min_tokens or not following[:1].isspace():
            return False
        before = self._decode(reply[:-1])
        if ends_sentence(before) and split_sentences(before + following)[-1] == following.strip():
            self.text = before
        return self.text is not None


def _create_completion(
    llm: Any, prompt: str, *, max_tokens: int, grammar: Any = None, sentence_stop: int | None = None
) -> dict | None:
    model = llama_model(llm)
    if model is None:
        return None
    inner = getattr(llm, "inner", llm)
    to_prompt = getattr(inner, "completion_to_prompt", None)
    full_prompt = to_prompt(prompt) if callable(to_prompt) else prompt
    extra: dict[str, Any] = {"grammar": grammar} if grammar is not None else {}
    stop = None if sentence_stop is None else _SentenceStop(model, sentence_stop)
    if stop is not None:
        from llama_cpp import StoppingCriteriaList

        extra["stopping_criteria"] = StoppingCriteriaList([stop])
    with _LOCKS.setdefault(id(model), threading.Lock()):  # one Llama object must not run two generations at once
        out = model.create_completion(
            prompt=full_prompt, max_tokens=max_tokens, temperature=getattr(inner, "temperature", 0.0), **extra
        )
    if stop is not None and stop.text is not None:
        out["choices"][0]["text"] = stop.text
    record = getattr(llm, "record_usage", None)  # a MeteredLLM counts the calls that bypass its complete()
    if callable(record):
        usage = out.get("usage") or {}
        record(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))
    return out


def complete_response(
    llm: Any, prompt: str, *, max_tokens: int = 512, sentence_stop: int | None = None
) -> CompletionResponse:
    """Completion of ``prompt`` by any LlamaIndex LLM; with a llama.cpp model ``max_tokens`` bounds it, the reply
    stops at the first sentence end after ``sentence_stop`` tokens if that is given, and ``raw`` is llama.cpp's
    reply (``usage``, ``choices[0]["finish_reason"]``)."""
    out = _create_completion(llm, prompt, max_tokens=max_tokens, sentence_stop=sentence_stop)
    return llm.complete(prompt) if out is None else CompletionResponse(text=out["choices"][0]["text"], raw=out)


async def acomplete_response(
    llm: Any, prompt: str, *, max_tokens: int = 512, sentence_stop: int | None = None
) -> CompletionResponse:
    """Async twin of :func:`complete_response` (a local model runs in a worker thread)."""
    if llama_model(llm) is not None:
        return await asyncio.to_thread(
            complete_response, llm, prompt, max_tokens=max_tokens, sentence_stop=sentence_stop
        )
    return await llm.acomplete(prompt)


def complete_text(llm: Any, prompt: str, *, max_tokens: int = 512) -> str:
    """Plain completion of ``prompt`` by any LlamaIndex LLM; with a llama.cpp model ``max_tokens`` bounds it."""
    return complete_response(llm, prompt, max_tokens=max_tokens).text


async def acomplete_text(llm: Any, prompt: str, *, max_tokens: int = 512) -> str:
    """Async twin of :func:`complete_text` (a local model runs in a worker thread)."""
    return (await acomplete_response(llm, prompt, max_tokens=max_tokens)).text
