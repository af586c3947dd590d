"""Count LLM calls and tokens from the model's own usage figures.

:func:`metered` wraps any LlamaIndex LLM in a :class:`MeteredLLM` (the user's object is not replaced), which
counts each completion or chat call once: from the provider's reported ``usage`` when there is one (llama.cpp
reports it for every non-streamed completion), else with the model's own tokenizer (llama.cpp's vocabulary for a
stream), else estimated with LlamaIndex's tokenizer (``estimated`` is then true).

The wrapper emits no LLM callback event or instrumentation event of its own: every call goes to the wrapped
LLM's public methods, whose events LlamaIndex's callbacks (``TokenCountingHandler``) and dispatcher see, once per
real call. The two share one callback manager: the wrapper starts with the wrapped LLM's, and one set on the
wrapper (``get_response_synthesizer`` sets ``Settings.callback_manager`` on the LLM it gets) is set on the wrapped
LLM too. A ``LlamaCPP`` LLM gets per-call llama.cpp options (``max_tokens``, ``grammar``, ``stopping_criteria``)
through a per-call copy, one generation at a time, and its async calls run in a worker thread (LlamaIndex's
``CustomLLM`` would run them in the event loop, inside a second LLM event).

Example:

```python
llm = metered(llm_from_spec("qwen2.5-coder-0.5b"))
llm.complete("Hi")
usage_meter(llm).snapshot()   # LLMUsage(llm_calls=1, prompt_tokens=..., completion_tokens=...)
```
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.llms import LLM, CustomLLM
from pydantic import BaseModel, PrivateAttr

from llama_index_kgplus.llm._llama import is_llama_cpp, llama_complete, with_options
from llama_index_kgplus.llm._tokens import TokenCounter


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
    """A thread-safe running total of :class:`LLMUsage`.

    Example:

    ```python
    from llama_index_kgplus.llm import metered

    llm = metered(llm)
    before = llm.meter.snapshot()
    llm.complete("Say hello.")
    used = llm.meter.snapshot() - before  # llm_calls, prompt_tokens, completion_tokens
    ```
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = LLMUsage()

    def add(self, usage: LLMUsage) -> None:
        """Add ``usage`` to the total (thread-safe)."""
        with self._lock:
            self._total = self._total + usage

    def record(self, prompt_tokens: int, completion_tokens: int, *, estimated: bool = False) -> None:
        """Record one LLM call of ``prompt_tokens`` and ``completion_tokens`` (``estimated``: counted by this pack, not
        reported by the model)."""
        self.add(LLMUsage(1, int(prompt_tokens), int(completion_tokens), estimated))

    def snapshot(self) -> LLMUsage:
        """The total so far; subtract two snapshots for the usage in between."""
        with self._lock:
            return self._total


# (prompt, completion) token field names: OpenAI-style and llama.cpp, Bedrock Converse, Ollama
_USAGE_FIELDS = (("prompt_tokens", "completion_tokens"), ("inputTokens", "outputTokens"),
                 ("prompt_eval_count", "eval_count"))  # fmt: skip


def _reported_usage(response: CompletionResponse) -> tuple[int, int] | None:
    """``(prompt, completion)`` tokens from a provider response (``usage`` of OpenAI-style and Bedrock replies,
    Ollama's counts), if it has them."""
    for source in (response.raw, response.additional_kwargs):
        usage = source.get("usage", source) if isinstance(source, dict) else getattr(source, "usage", None)
        for prompt_field, completion_field in _USAGE_FIELDS:
            if isinstance(usage, dict):
                prompt, completion = usage.get(prompt_field), usage.get(completion_field)
            else:
                prompt, completion = getattr(usage, prompt_field, None), getattr(usage, completion_field, None)
            if isinstance(prompt, int) and isinstance(completion, int):
                return prompt, completion
    return None


_PROMPT_SETTINGS = (
    "system_prompt",
    "messages_to_prompt",
    "completion_to_prompt",
    "output_parser",
    "pydantic_program_mode",
    "query_wrapper_prompt",
)


class MeteredLLM(CustomLLM):
    """Any LlamaIndex LLM, with each completion counted in a :class:`UsageMeter` (see the module docstring).

    Example:

    ```python
    llm = metered(llm)
    llm.complete("Hi")
    llm.meter.snapshot().prompt_tokens
    ```
    """

    _inner: LLM = PrivateAttr()
    _meter: UsageMeter = PrivateAttr()

    def __init__(self, inner: LLM, meter: UsageMeter | None = None, **kwargs: Any) -> None:
        # LlamaIndex's predict()/stream() template a prompt with the LLM's own settings and then call
        # complete(formatted=True): take the wrapped LLM's, or its chat template would be skipped.
        for name in _PROMPT_SETTINGS:
            value = getattr(inner, name, None)
            if value is not None:
                kwargs.setdefault(name, value)
        kwargs.setdefault("callback_manager", inner.callback_manager)
        super().__init__(**kwargs)
        self._inner = inner
        self._meter = meter or UsageMeter()

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "callback_manager" and getattr(self, "_inner", None) is not None:
            self._inner.callback_manager = value  # the events are the wrapped LLM's: its handlers must be these

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "MeteredLLM"

    @property
    def inner(self) -> LLM:
        """The wrapped LLM."""
        return self._inner

    @property
    def meter(self) -> UsageMeter:
        """The running total of this wrapper's calls."""
        return self._meter

    @property
    def metadata(self) -> LLMMetadata:
        """The wrapped LLM's metadata."""
        return self._inner.metadata

    def record_reply(self, prompt: str, response: Any, text: str) -> None:
        """Count a reply obtained from the wrapped model directly (e.g. a tool call): the usage it reports, else
        ``prompt`` and ``text`` counted with the model's tokenizer."""
        self._record(prompt, response, text)

    def _record(self, prompt: str, response: Any, text: str | None = None, formatted: bool = False) -> Any:
        reported = _reported_usage(response)
        if reported is not None:
            self._meter.record(*reported)
            return response
        counter = TokenCounter.for_llm(self._inner)
        to_prompt = getattr(self._inner, "completion_to_prompt", None)
        if counter.exact and callable(to_prompt) and not formatted:  # the model read the templated prompt
            prompt = to_prompt(prompt)
        answer = response.text if text is None else text
        self._meter.record(counter.count(prompt), counter.count(answer or ""), estimated=not counter.exact)
        return response

    def _record_chat(self, messages: Sequence[ChatMessage], response: ChatResponse) -> ChatResponse:
        return self._record("\n".join(str(m.content or "") for m in messages), response, response.message.content)

    def _runs_sync(self, name: str) -> bool:
        """True when the wrapped LLM's async ``name`` is ``CustomLLM``'s, which runs the sync twin inside a
        second LLM event: the wrapper then calls the sync twin itself."""
        return getattr(type(self._inner), name, None) is getattr(CustomLLM, name)

    def _stream(self, prompt: str, formatted: bool, kwargs: dict[str, Any]) -> CompletionResponseGen:
        """The wrapped LLM's stream. A llama.cpp model takes its options as ``generate_kwargs`` of a per-call copy,
        and its chunks get the ``usage`` llama.cpp reports only for whole replies (the prompt and the text so far
        in its own tokens), as OpenAI-style servers put it in a stream: LlamaIndex's callbacks read it from the
        last chunk."""
        if not is_llama_cpp(self._inner):
            yield from self._inner.stream_complete(prompt, formatted=formatted, **kwargs)
            return
        target = with_options(self._inner, **kwargs) if kwargs else self._inner
        counter = TokenCounter.for_llm(self._inner)
        template = self._inner.completion_to_prompt
        prompt_tokens = counter.count(prompt if formatted or template is None else template(prompt))
        for chunk in target.stream_complete(prompt, formatted=formatted):
            if isinstance(chunk.raw, dict):
                completion_tokens = counter.count(chunk.text)
                chunk.raw["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                      "total_tokens": prompt_tokens + completion_tokens}  # fmt: skip
            yield chunk

    # Chat goes to the inner LLM's own chat, so a chat model keeps its roles (CustomLLM would flatten them).
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """The wrapped LLM's ``chat``, counted."""
        return self._record_chat(messages, self._inner.chat(messages, **kwargs))

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """The wrapped LLM's ``achat``, counted."""
        if self._runs_sync("achat"):
            return self.chat(messages, **kwargs)
        return self._record_chat(messages, await self._inner.achat(messages, **kwargs))

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        """The wrapped LLM's ``stream_chat``, counted when the stream ends."""
        return _counted(self._inner.stream_chat(messages, **kwargs), lambda last: self._record_chat(messages, last))

    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseAsyncGen:
        """The wrapped LLM's ``astream_chat``, counted when the stream ends."""
        if self._runs_sync("astream_chat"):
            chunks: Any = _as_async(self._inner.stream_chat(messages, **kwargs))
        else:
            chunks = await self._inner.astream_chat(messages, **kwargs)
        return _acounted(chunks, lambda last: self._record_chat(messages, last))

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The wrapped LLM's ``complete``, counted."""
        if is_llama_cpp(self._inner):
            response = llama_complete(self._inner, prompt, formatted=formatted, **kwargs)
        else:
            response = self._inner.complete(prompt, formatted=formatted, **kwargs)
        return self._record(prompt, response, formatted=formatted)

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The wrapped LLM's ``acomplete``, counted (a llama.cpp model runs in a thread)."""
        if is_llama_cpp(self._inner):
            return await asyncio.to_thread(self.complete, prompt, formatted, **kwargs)
        if self._runs_sync("acomplete"):
            return self.complete(prompt, formatted, **kwargs)
        return self._record(prompt, await self._inner.acomplete(prompt, formatted=formatted, **kwargs))

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        """The wrapped LLM's ``stream_complete``, counted when the stream ends."""
        chunks = self._stream(prompt, formatted, kwargs)
        return _counted(chunks, lambda last: self._record(prompt, last, formatted=formatted))

    async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseAsyncGen:
        """The wrapped LLM's ``astream_complete``, counted when the stream ends."""
        if self._runs_sync("astream_complete"):
            chunks: Any = _as_async(self._stream(prompt, formatted, kwargs))
        else:
            chunks = await self._inner.astream_complete(prompt, formatted=formatted, **kwargs)
        return _acounted(chunks, lambda last: self._record(prompt, last, formatted=formatted))

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


def _counted(chunks: Iterator[Any], record: Callable[[Any], Any]) -> Generator[Any, None, None]:
    """``chunks``, then ``record(last chunk)``, also when the reader stops early: what was generated was paid for."""
    last = None
    try:
        for last in chunks:
            yield last
    finally:
        if last is not None:
            record(last)


async def _acounted(chunks: AsyncIterator[Any], record: Callable[[Any], Any]) -> AsyncGenerator[Any, None]:
    """Async twin of :func:`_counted`."""
    last = None
    try:
        async for last in chunks:
            yield last
    finally:
        if last is not None:
            record(last)


async def _as_async(chunks: Iterator[Any]) -> AsyncIterator[Any]:
    for chunk in chunks:
        yield chunk


def metered(llm: LLM) -> LLM:
    """``llm`` with its calls counted: a :class:`MeteredLLM` around it (itself if it already is one)."""
    return llm if isinstance(llm, MeteredLLM) else MeteredLLM(llm)


def usage_meter(llm: LLM) -> UsageMeter:
    """The meter of an LLM returned by :func:`metered`."""
    if not isinstance(llm, MeteredLLM):
        raise ValueError("This LLM is not metered: wrap it with metered(llm) first.")
    return llm.meter


def is_metered(llm: Any) -> bool:
    """Whether :func:`usage_meter` can read ``llm``'s calls (it went through :func:`metered`)."""
    return isinstance(llm, MeteredLLM)


class AnswerUsage:
    """The cost of one answer: LLM calls and tokens (from the meter of a :func:`metered` LLM), wall time, and the
    time to the first streamed token.

    Start it before retrieval; :func:`attach_usage` puts ``as_dict()`` into ``response.metadata["usage"]``, at
    once or, for a streaming response, when its stream ends. Token figures are ``None`` for an LLM that was not
    metered; ``first_token_seconds`` is ``None`` unless the answer was streamed. Concurrent answers on one LLM
    share its meter, so their token figures mix.

    Example:

    ```python
    usage = AnswerUsage(llm)
    response = engine.query(question)
    attach_usage(response, usage).metadata["usage"]   # {"prompt_tokens": 812, "completion_tokens": 41, ...}
    ```
    """

    def __init__(self, llm: Any) -> None:
        self._meter = usage_meter(llm) if llm is not None and is_metered(llm) else None
        self._before = self._meter.snapshot() if self._meter is not None else None
        self._started = time.perf_counter()
        self._first_token: float | None = None

    def first_token(self) -> None:
        """Note the time of the first streamed token (only the first call counts)."""
        if self._first_token is None:
            self._first_token = time.perf_counter() - self._started

    def as_dict(self) -> dict[str, Any]:
        """The usage since this object was made: prompt and completion tokens, LLM calls, seconds and seconds to the
        first token (None where unknown)."""
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
    tokens = (
        "?" if usage["prompt_tokens"] is None else f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']}"
    )
    return f"usage: {usage['llm_calls']} LLM call(s), {tokens} completion tokens, {usage['seconds']:.1f} s" + (
        f" (first token after {first:.1f} s)" if first is not None else ""
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
