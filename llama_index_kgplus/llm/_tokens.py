"""Token counts the way a given LLM counts them, or an estimate that says it is one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from llama_index_kgplus.llm._llama import is_llama_cpp, llama_vocabulary


@dataclass(frozen=True)
class TokenCounter:
    """``count(text)`` in the LLM's own tokens when ``exact``; otherwise LlamaIndex's tokenizer (tiktoken) estimates.

    Example:

    ```python
    counter = TokenCounter.for_llm(llm)      # llama.cpp: the GGUF vocabulary
    counter.count("Hello world"), counter.exact
    ```
    """

    tokenize: Callable[[str], Any]
    exact: bool
    name: str

    def count(self, text: str) -> int:
        return len(self.tokenize(text)) if text else 0

    @classmethod
    def for_llm(cls, llm: Any | None) -> TokenCounter:
        llm = getattr(llm, "inner", llm)  # a MeteredLLM counts like the LLM it wraps
        if is_llama_cpp(llm):
            return cls.for_llm_model(llama_vocabulary(llm))
        encode = _encoder(getattr(llm, "tokenizer", None))  # e.g. OpenAILike's public tokenizer field
        if encode is not None:
            return cls(encode, True, "tokenizer")
        return cls.estimate()

    @classmethod
    def for_llm_model(cls, model: Any) -> TokenCounter:
        """The tokenizer of a ``llama_cpp.Llama`` (a vocabulary-only one will do)."""
        return cls(lambda text: model.tokenize(text.encode("utf-8"), add_bos=False, special=True), True, "llama.cpp")

    @classmethod
    def estimate(cls) -> TokenCounter:
        from llama_index.core.utils import get_tokenizer

        return cls(get_tokenizer(), False, "estimate (tiktoken)")


@lru_cache(maxsize=8)
def _named_tokenizer(name: str) -> Any:
    """The transformers tokenizer of that name, or None (not installed, or it cannot be loaded here)."""
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name)
    except Exception:
        return None


def _encoder(tokenizer: Any) -> Callable[[str], Any] | None:
    """``encode`` of an LLM's tokenizer object (a transformers tokenizer without its special tokens), or of the
    transformers tokenizer a name gives; None without one."""
    if isinstance(tokenizer, str):
        tokenizer = _named_tokenizer(tokenizer)
    encode = getattr(tokenizer, "encode", None)
    if not callable(encode):
        return None
    try:
        encode("a", add_special_tokens=False)
    except TypeError:  # tiktoken and other encoders without that option
        return encode  # type: ignore[no-any-return]
    return lambda text: encode(text, add_special_tokens=False)
