"""Count LLM calls and tokens from the model's own usage figures.

llama.cpp reports ``usage`` (prompt and completion tokens) with every completion; the meter reads it from
``Llama.create_completion``, the one call that both plain completions and the schema-constrained JSON of
:mod:`llama_index_kgplus.structured` go through, so each call is counted once (LlamaIndex's
``TokenCountingHandler`` sees a chat call and the completion inside it and counts twice). Other LLMs are
wrapped in :class:`MeteredLLM`, which reads ``usage`` from the provider's raw response when there is one and
otherwise estimates tokens with LlamaIndex's tokenizer (``estimated`` is then true).

Example::

    llm = metered(defaults.default_llm("qwen2.5-coder-0.5b"))
    llm.complete("Hi")
    usage_meter(llm).snapshot()   # LLMUsage(llm_calls=1, prompt_tokens=..., completion_tokens=...)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.llms import LLM, CustomLLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from pydantic import BaseModel, PrivateAttr

from llama_index_kgplus.llm._tokens import TokenCounter, llama_model

_METER_ATTR = "_kgplus_usage_meter"


@dataclass(frozen=True)
class LLMUsage:
    """LLM calls and tokens; ``estimated`` is true when some token figure was estimated, not reported."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    def __add__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(
            self.llm_calls + other.llm_calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
        )

    def __sub__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(
            self.llm_calls - other.llm_calls,
            self.prompt_tokens - other.prompt_tokens,
            self.completion_tokens - other.completion_tokens,
            self.estimated or other.estimated,
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class UsageMeter:
    """A thread-safe running total of :class:`LLMUsage`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = LLMUsage()

    def add(self, usage: LLMUsage) -> None:
        with self._lock:
            self._total = self._total + usage

    def record(self, prompt_tokens: int, completion_tokens: int, *, estimated: bool = False) -> None:
        self.add(LLMUsage(1, int(prompt_tokens), int(completion_tokens), estimated))

    def snapshot(self) -> LLMUsage:
        with self._lock:
            return self._total


def _reported_usage(response: CompletionResponse) -> tuple[int, int] | None:
    """``(prompt, completion)`` tokens from a provider response (OpenAI-style ``usage``), if it has them."""
    for source in (response.raw, response.additional_kwargs):
        usage = source.get("usage", source) if isinstance(source, dict) else getattr(source, "usage", None)
        if isinstance(usage, dict):
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        else:
            prompt, completion = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
        if isinstance(prompt, int) and isinstance(completion, int):
            return prompt, completion
    return None


class MeteredLLM(CustomLLM):
    """Any LlamaIndex LLM, with each completion counted in a :class:`UsageMeter` (see the module docstring)."""

    _inner: LLM = PrivateAttr()
    _meter: UsageMeter = PrivateAttr()

    def __init__(self, inner: LLM, meter: UsageMeter | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._inner = inner
        self._meter = meter or UsageMeter()

    @classmethod
    def class_name(cls) -> str:
        return "MeteredLLM"

    @property
    def inner(self) -> LLM:
        return self._inner

    @property
    def metadata(self) -> LLMMetadata:
        return self._inner.metadata

    def _record(self, prompt: str, response: Any, text: str | None = None) -> Any:
        reported = _reported_usage(response)
        estimate = TokenCounter.estimate()
        if reported is not None:
            self._meter.record(*reported)
        else:
            answer = response.text if text is None else text
            self._meter.record(estimate.count(prompt), estimate.count(answer or ""), estimated=True)
        return response

    def _record_chat(self, messages: Sequence[ChatMessage], response: ChatResponse) -> ChatResponse:
        return self._record("\n".join(str(m.content or "") for m in messages), response, response.message.content)

    # Chat goes to the inner LLM's own chat, so a chat model keeps its roles (CustomLLM would flatten them).
    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._record_chat(messages, self._inner.chat(messages, **kwargs))

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._record_chat(messages, await self._inner.achat(messages, **kwargs))

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        last = None
        for last in self._inner.stream_chat(messages, **kwargs):
            yield last
        if last is not None:
            self._record_chat(messages, last)

    @llm_chat_callback()
    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseAsyncGen:
        async def gen() -> ChatResponseAsyncGen:
            last = None
            async for last in await self._inner.astream_chat(messages, **kwargs):
                yield last
            if last is not None:
                self._record_chat(messages, last)

        return gen()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return self._record(prompt, self._inner.complete(prompt, formatted=formatted, **kwargs))

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return self._record(prompt, await self._inner.acomplete(prompt, formatted=formatted, **kwargs))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        last = None
        for last in self._inner.stream_complete(prompt, formatted=formatted, **kwargs):
            yield last
        if last is not None:
            self._record(prompt, last)

    def __getstate__(self) -> dict[str, Any]:
        # Pickled for Ray. LlamaIndex's BaseComponent would silently drop an unpicklable inner LLM and leave a
        # wrapper that fails on every call; pydantic's own state keeps it, so pickling fails loudly instead.
        # The meter (a lock) stays behind: the receiving process counts in its own.
        state = BaseModel.__getstate__(self)
        return {**state, "__pydantic_private__": {"_inner": self._inner, "_meter": None}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        BaseModel.__setstate__(self, state)
        if self._meter is None:
            self._meter = UsageMeter()


def _meter_llama(model: Any) -> UsageMeter:
    """Wrap ``model.create_completion`` (on this instance only) so every call lands in one meter."""
    meter = getattr(model, _METER_ATTR, None)
    if meter is not None:
        return meter
    meter = UsageMeter()
    original: Callable[..., Any] = model.create_completion

    def create_completion(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if isinstance(out, dict) and isinstance(out.get("usage"), dict):
            meter.record(out["usage"].get("prompt_tokens", 0), out["usage"].get("completion_tokens", 0))
            return out
        prompt = kwargs.get("prompt", args[0] if args else "")
        return _counted_stream(out, model, prompt if isinstance(prompt, str) else "", meter)

    model.create_completion = create_completion
    setattr(model, _METER_ATTR, meter)
    return meter


def _counted_stream(chunks: Any, model: Any, prompt: str, meter: UsageMeter) -> Any:
    """llama.cpp reports no usage for a stream: count the prompt and the streamed text with its tokenizer."""
    parts: list[str] = []
    try:
        for chunk in chunks:
            parts.append(chunk["choices"][0].get("text") or "")
            yield chunk
    finally:
        counter = TokenCounter.for_llm_model(model)
        meter.record(counter.count(prompt), counter.count("".join(parts)))


def metered(llm: LLM) -> LLM:
    """``llm`` with its calls counted: the same object for llama.cpp models, else a :class:`MeteredLLM`."""
    if isinstance(llm, MeteredLLM):
        return llm
    model = llama_model(llm)
    if model is not None:
        _meter_llama(model)
        return llm
    return MeteredLLM(llm)


def usage_meter(llm: LLM) -> UsageMeter:
    """The meter of an LLM returned by :func:`metered`."""
    if isinstance(llm, MeteredLLM):
        return llm._meter
    model = llama_model(llm)
    if model is None or getattr(model, _METER_ATTR, None) is None:
        raise ValueError("This LLM is not metered: wrap it with metered(llm) first.")
    return getattr(model, _METER_ATTR)


def is_metered(llm: Any) -> bool:
    """Whether :func:`usage_meter` can read ``llm``'s calls (it went through :func:`metered`)."""
    model = llama_model(llm)
    return isinstance(llm, MeteredLLM) or (model is not None and getattr(model, _METER_ATTR, None) is not None)


class AnswerUsage:
    """The cost of one answer: LLM calls and tokens (from the meter of a :func:`metered` LLM), wall time, and the
    time to the first streamed token.

    Start it before retrieval; :func:`attach_usage` puts ``as_dict()`` into ``response.metadata["usage"]``, at
    once or, for a streaming response, when its stream ends. Token figures are ``None`` for an LLM that was not
    metered; ``first_token_seconds`` is ``None`` unless the answer was streamed. Concurrent answers on one LLM
    share its meter, so their token figures mix.

    Example::

        usage = AnswerUsage(llm)
        response = engine.query(question)
        attach_usage(response, usage).metadata["usage"]   # {"prompt_tokens": 812, "completion_tokens": 41, ...}
    """

    def __init__(self, llm: Any) -> None:
        self._meter = usage_meter(llm) if llm is not None and is_metered(llm) else None
        self._before = self._meter.snapshot() if self._meter is not None else None
        self._started = time.perf_counter()
        self._first_token: float | None = None

    def first_token(self) -> None:
        if self._first_token is None:
            self._first_token = time.perf_counter() - self._started

    def as_dict(self) -> dict[str, Any]:
        used = self._meter.snapshot() - self._before if self._meter is not None and self._before is not None else None
        return {
            "prompt_tokens": used.prompt_tokens if used else None,
            "completion_tokens": used.completion_tokens if used else None,
            "llm_calls": used.llm_calls if used else None,
            "seconds": round(time.perf_counter() - self._started, 3),
            "first_token_seconds": None if self._first_token is None else round(self._first_token, 3),
            "estimated": True if used is None else used.estimated,
        }


def format_usage(usage: dict[str, Any]) -> str:
    """One line for people: ``usage: 1 LLM call(s), 812 prompt + 41 completion tokens, 6.2 s (first token after
    3.1 s)`` from a ``metadata["usage"]`` dict."""
    first = usage.get("first_token_seconds")
    tokens = "?" if usage["prompt_tokens"] is None else f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']}"
    return (
        f"usage: {usage['llm_calls']} LLM call(s), {tokens} completion tokens, {usage['seconds']:.1f} s"
        + (f" (first token after {first:.1f} s)" if first is not None else "")
    )


def attach_usage(response: Any, usage: AnswerUsage) -> Any:
    """Set ``response.metadata["usage"]`` now, or when the stream of a (sync or async) streaming response ends."""

    def finish() -> None:
        response.metadata = {**(response.metadata or {}), "usage": usage.as_dict()}

    tokens = getattr(response, "response_gen", None)
    if tokens is None:
        finish()
    elif hasattr(tokens, "__anext__"):

        async def timed_async() -> Any:
            async for token in tokens:
                usage.first_token()
                yield token
            finish()

        response.response_gen = timed_async()
    else:

        def timed() -> Any:
            for token in tokens:
                usage.first_token()
                yield token
            finish()

        response.response_gen = timed()
    return response
