"""Token counts the way a given LLM counts them, or an estimate that says it is one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llama_index_kgplus.llm._llama import llama_model


@dataclass(frozen=True)
class TokenCounter:
    """``count(text)`` in the LLM's own tokens when ``exact``; otherwise LlamaIndex's tokenizer (tiktoken) estimates.

    Example::

        counter = TokenCounter.for_llm(llm)      # llama.cpp: the GGUF vocabulary
        counter.count("Hello world"), counter.exact
    """

    tokenize: Callable[[str], Any]
    exact: bool
    name: str

    def count(self, text: str) -> int:
        return len(self.tokenize(text)) if text else 0

    @classmethod
    def for_llm(cls, llm: Any | None) -> TokenCounter:
        llm = getattr(llm, "inner", llm)  # a MeteredLLM counts like the LLM it wraps
        model = llama_model(llm)
        if model is not None:
            return cls.for_llm_model(model)
        tokenizer = getattr(llm, "_tokenizer", None)
        if tokenizer is not None and callable(getattr(tokenizer, "encode", None)):
            return cls(lambda text: tokenizer.encode(text, add_special_tokens=False), True, "transformers")
        return cls.estimate()

    @classmethod
    def for_llm_model(cls, model: Any) -> TokenCounter:
        """The tokenizer of a ``llama_cpp.Llama``."""
        return cls(lambda text: model.tokenize(text.encode("utf-8"), add_bos=False, special=True), True, "llama.cpp")

    @classmethod
    def estimate(cls) -> TokenCounter:
        from llama_index.core.utils import get_tokenizer

        return cls(get_tokenizer(), False, "estimate (tiktoken)")
