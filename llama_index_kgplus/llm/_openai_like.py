"""``OpenAILike`` where a call's own ``max_tokens`` wins over the LLM's (imported only with the ``openai`` extra).

LlamaIndex's OpenAI classes let the LLM's ``max_tokens`` override the one a call passes; a JSON reply that needs
a larger budget than an answer (a GraphRAG report) would be cut off. Only that precedence changes.
"""

from __future__ import annotations

from typing import Any

from llama_index.llms.openai_like import OpenAILike


class ServedOpenAILike(OpenAILike):
    """An OpenAI-compatible server's model, as built by ``openai-like:MODEL@URL``."""

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex component name."""
        return "ServedOpenAILike"

    def _get_model_kwargs(self, **kwargs: Any) -> dict[str, Any]:
        model_kwargs = super()._get_model_kwargs(**kwargs)
        if kwargs.get("max_tokens") is not None:
            model_kwargs["max_tokens"] = kwargs["max_tokens"]
        return model_kwargs
