"""``OpenAILike`` for ``openai-like:`` specs (imported only with the ``openai`` extra), with two changes:

- a call's own ``max_tokens`` wins over the LLM's (LlamaIndex's OpenAI classes do the reverse, so a JSON reply
  that needs a larger budget than an answer, a GraphRAG report, would be cut off);
- a reply that is not the API's (an HTML page from a proxy, a plain-text error or an empty body with status 200,
  a stream without a single event) raises :class:`ModelServerError` naming the server and what came back
  (:mod:`~llama_index_kgplus.llm._replies`), instead of an empty answer or an ``AttributeError`` deep inside the
  client.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Sequence
from typing import Any

import httpx
import openai
from llama_index.core.base.llms.types import ChatMessage, ChatResponse
from llama_index.llms.openai_like import OpenAILike

from llama_index_kgplus.errors import ModelServerError
from llama_index_kgplus.llm._replies import ReplyCheck, openai_problem


class UnusableReplyError(ModelServerError, openai.OpenAIError):
    """A :class:`ModelServerError` the OpenAI client passes on as it is: not retried, not wrapped in a connection
    error (it is an ``OpenAIError``), and not retried by LlamaIndex either (the same reply would come again)."""


OPENAI = ReplyCheck(
    "an OpenAI-style reply",
    "check the URL of the spec (it usually ends in /v1)",
    openai_problem,
    "event-stream",
    UnusableReplyError,
)


def checked_http_client(is_async: bool) -> httpx.Client | httpx.AsyncClient:
    """The OpenAI client's default httpx client, with the reply check."""
    if is_async:
        return openai.DefaultAsyncHttpxClient(event_hooks=OPENAI.event_hooks(is_async=True))
    return openai.DefaultHttpxClient(event_hooks=OPENAI.event_hooks())


class ServedOpenAILike(OpenAILike):
    """An OpenAI-compatible server's model, as built by ``openai-like:MODEL@URL``."""

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex component name."""
        return "ServedOpenAILike"

    def _get_credential_kwargs(self, is_async: bool = False) -> dict[str, Any]:
        kwargs = super()._get_credential_kwargs(is_async=is_async)
        if kwargs.get("http_client") is None:  # a client given by the caller is theirs, as it is
            kwargs["http_client"] = checked_http_client(is_async)
        return kwargs

    def _get_model_kwargs(self, **kwargs: Any) -> dict[str, Any]:
        model_kwargs = super()._get_model_kwargs(**kwargs)
        if kwargs.get("max_tokens") is not None:
            model_kwargs["max_tokens"] = kwargs["max_tokens"]
        return model_kwargs

    def _stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Generator[ChatResponse, None, None]:
        empty = True
        for chunk in super()._stream_chat(messages, **kwargs):
            empty = False
            yield chunk
        if empty:
            raise OPENAI.unusable(str(self.api_base), "an event stream without a single event")

    async def _astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> AsyncGenerator[ChatResponse, None]:
        chunks = await super()._astream_chat(messages, **kwargs)

        async def checked() -> AsyncGenerator[ChatResponse, None]:
            empty = True
            async for chunk in chunks:
                empty = False
                yield chunk
            if empty:
                raise OPENAI.unusable(str(self.api_base), "an event stream without a single event")

        return checked()
