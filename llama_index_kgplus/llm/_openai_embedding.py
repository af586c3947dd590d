"""``OpenAIEmbedding`` for ``openai-like:`` embedding specs (imported only with the ``openai`` extra), whose
replies are checked as the LLM's are (:mod:`~llama_index_kgplus.llm._openai_like`): an HTML page or an empty body
is a one-line :class:`~llama_index_kgplus.errors.ModelServerError`."""

from __future__ import annotations

from typing import Any

from llama_index.embeddings.openai import OpenAIEmbedding

from llama_index_kgplus.llm._openai_like import checked_http_client


class ServedOpenAIEmbedding(OpenAIEmbedding):
    """An OpenAI-compatible server's embedding model, as built by ``openai-like:MODEL@URL``; recorded in an index
    under ``OpenAIEmbedding``'s name, as before."""

    def _get_credential_kwargs(self, is_async: bool = False) -> dict[str, Any]:
        kwargs = super()._get_credential_kwargs(is_async=is_async)
        if kwargs.get("http_client") is None:  # a client given by the caller is theirs, as it is
            kwargs["http_client"] = checked_http_client(is_async)
        return kwargs
