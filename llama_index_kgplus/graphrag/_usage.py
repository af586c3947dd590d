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
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import LLM, CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import BaseModel, PrivateAttr

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


def _llama_model(llm: Any) -> Any | None:
    model = getattr(llm, "_model", None)
    return model if type(model).__name__ == "Llama" else None


def _count_tokens(text: str) -> int:
    from llama_index.core.utils import get_tokenizer

    return len(get_tokenizer()(text))


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

    def _record(self, prompt: str, response: CompletionResponse) -> CompletionResponse:
        reported = _reported_usage(response)
        if reported is not None:
            self._meter.record(*reported)
        else:
            self._meter.record(_count_tokens(prompt), _count_tokens(response.text or ""), estimated=True)
        return response

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
        else:  # a stream: llama.cpp gives no usage figures for it
            meter.record(0, 0, estimated=True)
        return out

    model.create_completion = create_completion
    setattr(model, _METER_ATTR, meter)
    return meter


def metered(llm: LLM) -> LLM:
    """``llm`` with its calls counted: the same object for llama.cpp models, else a :class:`MeteredLLM`."""
    if isinstance(llm, MeteredLLM):
        return llm
    model = _llama_model(llm)
    if model is not None:
        _meter_llama(model)
        return llm
    return MeteredLLM(llm)


def usage_meter(llm: LLM) -> UsageMeter:
    """The meter of an LLM returned by :func:`metered`."""
    if isinstance(llm, MeteredLLM):
        return llm._meter
    model = _llama_model(llm)
    if model is None or getattr(model, _METER_ATTR, None) is None:
        raise ValueError("This LLM is not metered: wrap it with metered(llm) first.")
    return getattr(model, _METER_ATTR)
