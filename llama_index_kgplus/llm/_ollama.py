"""``Ollama`` and ``OllamaEmbedding`` for ``ollama:`` specs (imported only with the ``ollama`` extra), whose clients
check every reply
(:data:`~llama_index_kgplus.llm._replies.OLLAMA`): an HTML page or an empty body with status 200 is a one-line
:class:`~llama_index_kgplus.errors.ModelServerError` naming the server, not a ``JSONDecodeError``."""

from __future__ import annotations

from typing import Any

from llama_index.embeddings.ollama import OllamaEmbedding
from llama_index.llms.ollama import Ollama
from ollama import AsyncClient, Client

from llama_index_kgplus.llm._replies import OLLAMA


def ollama_client_kwargs(is_async: bool = False) -> dict[str, Any]:
    """What an Ollama client is made with besides its host: the reply check."""
    return {"event_hooks": OLLAMA.event_hooks(is_async=is_async)}


class ServedOllama(Ollama):
    """An Ollama server's model, as built by ``ollama:MODEL[@URL]``."""

    @property
    def client(self) -> Client:
        """The Ollama client (made on first use, with the reply check)."""
        if self._client is None:  # type: ignore[has-type]
            self._client = Client(
                host=self.base_url, timeout=self.request_timeout, headers=self.headers or {}, **ollama_client_kwargs()
            )
        return self._client

    @property
    def async_client(self) -> AsyncClient:
        """The async Ollama client (made on first use, with the reply check)."""
        if self._async_client is None:  # type: ignore[has-type]
            self._async_client = AsyncClient(
                host=self.base_url,
                timeout=self.request_timeout,
                headers=self.headers or {},
                **ollama_client_kwargs(is_async=True),
            )
        return self._async_client


class ServedOllamaEmbedding(OllamaEmbedding):
    """An Ollama server's embedding model, as built by ``ollama:MODEL[@URL]``; recorded in an index under
    ``OllamaEmbedding``'s name, as before."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(client_kwargs=ollama_client_kwargs(), **kwargs)
        self._async_client = AsyncClient(host=self.base_url, **ollama_client_kwargs(is_async=True))
