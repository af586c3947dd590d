"""``OpenAILike`` for ``openai-like:`` specs (imported only with the ``openai`` extra), with two changes:

- a call's own ``max_tokens`` wins over the LLM's (LlamaIndex's OpenAI classes do the reverse, so a JSON reply
  that needs a larger budget than an answer, a GraphRAG report, would be cut off);
- a reply that is not the API's JSON (an HTML page from a proxy, a plain-text error with status 200) raises
  :class:`ModelServerError` naming the server, instead of an ``AttributeError`` deep inside the client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse
from llama_index.llms.openai_like import OpenAILike

from llama_index_kgplus.errors import ModelServerError


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

    def _chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        try:
            return super()._chat(messages, **kwargs)
        except AttributeError as exc:
            if not _unparsed_body(exc):
                raise
            raise self._unusable(exc) from exc

    async def _achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        try:
            return await super()._achat(messages, **kwargs)
        except AttributeError as exc:
            if not _unparsed_body(exc):
                raise
            raise self._unusable(exc) from exc

    def _unusable(self, exc: AttributeError) -> ModelServerError:
        return ModelServerError(
            f"the model server at {self.api_base} answered something that is not an OpenAI-style reply ({exc}): "
            "check the URL of the spec (it usually ends in /v1)"
        )


def _unparsed_body(exc: AttributeError) -> bool:
    """True when the OpenAI client handed back a non-JSON body as text (and LlamaIndex read it as a reply)."""
    return str(exc).startswith("'str' object has no attribute")
