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


def _temperature(llm: Any) -> float:
    """The temperature a llama.cpp model behind ``llm`` is called with (0, greedy, when the LLM names none)."""
    return getattr(getattr(llm, "inner", llm), "temperature", 0.0)


def repeats_itself(llm: Any) -> bool:
    """Whether ``llm`` gives the same reply to the same prompt: an in-process llama.cpp model at temperature 0."""
    return llama_model(llm) is not None and _temperature(llm) == 0


def llama_complete(llm: Any, prompt: str, *, max_tokens: int, grammar: Any = None) -> str | None:
    """``prompt`` completed by the llama.cpp model behind ``llm`` (at most ``max_tokens``, under ``grammar`` if
    given), or None when ``llm`` is not a llama.cpp LLM."""
    out = _create_completion(llm, prompt, max_tokens=max_tokens, grammar=grammar)
    return None if out is None else out["choices"][0]["text"]


class _SentenceStop:
    """A llama.cpp stopping criterion: the reply stops at the end of a sentence once it has ``min_tokens`` tokens,
    and at its last sentence end once it has ``max_tokens``; a reply still in its first sentence then goes on to
    that sentence's end (llama.cpp's own bound is set higher, see :func:`_create_completion`).

    llama.cpp calls it after sampling each token with the tokens evaluated so far (the first call: the prompt
    alone). A sentence has ended when the reply before its last token ends with closing punctuation, a space or a
    line break comes between them (not "2." followed by "5"; the models have tokens like ".\n\n"), and the sentence
    splitter starts a new sentence there (not after "Dr."); :attr:`text` is then the reply up to that end
    (llama.cpp's own text keeps the next sentence's first token).
    """

    def __init__(self, model: Any, min_tokens: int, max_tokens: int | None = None) -> None:
        self._model, self._min_tokens, self._max_tokens = model, min_tokens, max_tokens
        self._start: int | None = None
        self._last_end: str | None = None
        self.text: str | None = None

    def _decode(self, tokens: Any) -> str:
        return self._model.detokenize([int(t) for t in tokens]).decode("utf-8", "ignore")

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        if self._start is None:
            self._start = len(input_ids)
        reply = input_ids[self._start :]
        following = self._decode(reply[-1:])
        if len(reply) > 1 and (following[:1].isspace() or self._decode(reply[-2:-1])[-1:].isspace()):
            before = self._decode(reply[:-1])
            if ends_sentence(before) and split_sentences(before + following)[-1] == following.strip():
                self._last_end = before.rstrip()
                if len(reply) > self._min_tokens:
                    self.text = self._last_end
        # past the bound, not at it: a sentence that ends on the bound's token is seen only at the next one
        if self.text is None and self._max_tokens is not None and len(reply) > self._max_tokens:
            self.text = self._last_end
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
    cap = max_tokens
    stop = None if sentence_stop is None else _SentenceStop(model, sentence_stop, max_tokens)
    if stop is not None:
        from llama_cpp import StoppingCriteriaList

        extra["stopping_criteria"] = StoppingCriteriaList([stop])
        cap += max_tokens // 2  # room for a first sentence to end past the bound; the criterion stops the others
    with _LOCKS.setdefault(id(model), threading.Lock()):  # one Llama object must not run two generations at once
        out = model.create_completion(prompt=full_prompt, max_tokens=cap, temperature=_temperature(llm), **extra)
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
    """Completion of ``prompt`` by any LlamaIndex LLM; with a llama.cpp model ``max_tokens`` bounds it, and
    ``raw`` is llama.cpp's reply (``usage``, ``choices[0]["finish_reason"]``). With ``sentence_stop`` the reply
    stops at the first sentence end after that many tokens, or at the bound at its last sentence end; one that is
    still in its first sentence at the bound may finish that sentence (at most half the bound more)."""
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
