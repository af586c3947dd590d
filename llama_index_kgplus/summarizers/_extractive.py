"""Extractive summaries: the sentences nearest the centroids of the sentence embeddings, in original order."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_serializer

from llama_index_kgplus._text import split_sentences
from llama_index_kgplus._vectors import unit_rows
from llama_index_kgplus.errors import KGPlusSetupError
from llama_index_kgplus.summarizers._base import (
    BaseSummarizer,
    model_fingerprint,
    resolve_embed_model,
)

_CACHE_LIMIT = 50_000


class ExtractiveSummarizer(BaseSummarizer):
    """Keep the sentences closest to the k-means centroids of the sentence embeddings, in original order.

    The algorithm of bert-extractive-summarizer, with any LlamaIndex embedding model (inside a summary node
    builder: the pipeline's own). ``k`` is ``ratio`` of the sentences, clamped to ``[min_sentences,
    max_sentences]``; a text with no more than ``k`` sentences comes back unchanged. No LLM call.

    Example:

    ```python
    summarizer = ExtractiveSummarizer(embed_model=embed_model_from_spec(), max_sentences=3)
    summarizer.summarize(["First passage ...", "Second passage ..."])
    ```
    """

    embed_model: BaseEmbedding | None = Field(
        default=None, description="Embeds the sentences; None: the builder's model, else Settings.embed_model."
    )
    ratio: float = Field(default=0.3, gt=0.0, le=1.0, description="Fraction of the sentences to keep.")
    min_sentences: int = Field(default=1, ge=1, description="Keep at least this many sentences.")
    max_sentences: int | None = Field(default=5, ge=1, description="Keep at most this many sentences (None: no cap).")
    random_state: int = Field(default=0, description="Seed of k-means.")

    _cache: dict[str, np.ndarray] = PrivateAttr(default_factory=dict)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "ExtractiveSummarizer"

    @field_serializer("embed_model")
    def _serialize_embed_model(self, value: Any) -> Any:
        return model_fingerprint(value)

    @classmethod
    def from_defaults(cls, embed_model: BaseEmbedding | None = None, **kwargs: Any) -> ExtractiveSummarizer:
        """Use ``embed_model`` or ``Settings.embed_model``."""
        return cls(embed_model=resolve_embed_model(embed_model, cls.class_name()), **kwargs)

    # ------------------------------------------------------------------ selection

    def n_keep(self, n_sentences: int) -> int:
        """How many of ``n_sentences`` sentences a summary keeps."""
        k = max(self.min_sentences, math.ceil(self.ratio * n_sentences))
        if self.max_sentences is not None:
            k = min(k, self.max_sentences)
        return min(k, n_sentences)

    def select(self, vectors: np.ndarray, k: int) -> list[int]:
        """Indices (sorted) of the ``k`` rows nearest the centroids of a k-means on the unit ``vectors``."""
        n = len(vectors)
        if k >= n:
            return list(range(n))
        unit = unit_rows(vectors)
        k = min(k, len(np.unique(np.round(unit, 6), axis=0)))  # k-means cannot find more centroids than points
        if k <= 1:
            centers = unit.mean(axis=0, keepdims=True)
        else:
            try:
                from sklearn.cluster import KMeans
            except ImportError as exc:
                raise KGPlusSetupError(
                    "ExtractiveSummarizer needs scikit-learn: pip install 'llama-index-kgplus[raptor]'."
                ) from exc
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                centers = KMeans(n_clusters=k, random_state=self.random_state, n_init=10).fit(unit).cluster_centers_
        chosen: list[int] = []
        for center in centers:
            order = np.argsort(np.linalg.norm(unit - center, axis=1), kind="stable")
            chosen.append(next(int(i) for i in order if int(i) not in chosen))
        return sorted(chosen)

    def _plan(self, texts: Sequence[str]) -> tuple[list[str], int, dict[str, np.ndarray], list[str]]:
        sentences = [s for text in texts for s in split_sentences(text)]
        k = self.n_keep(len(sentences))
        if k >= len(sentences):
            return sentences, k, {}, []
        known = {s: self._cache[s] for s in sentences if s in self._cache}
        missing = [s for s in dict.fromkeys(sentences) if s not in known]
        return sentences, k, known, missing

    def _missing(self, groups: Sequence[Sequence[str]]) -> list[str]:
        """The sentences not yet embedded that summarizing each of ``groups`` needs, at most a cache's worth."""
        missing: dict[str, None] = {}
        for texts in groups:
            missing.update(dict.fromkeys(self._plan(texts)[3]))
        return list(missing)[:_CACHE_LIMIT]

    def _finish(self, sentences: list[str], k: int, known: dict[str, np.ndarray]) -> str:
        if k >= len(sentences):
            return " ".join(sentences)
        vectors = np.asarray([known[s] for s in sentences], dtype=np.float64)
        return " ".join(sentences[i] for i in self.select(vectors, k))

    def _remember(self, known: dict[str, np.ndarray], sentences: list[str], vectors: list[list[float]]) -> None:
        if len(self._cache) + len(sentences) > _CACHE_LIMIT:
            self._cache.clear()
        for sentence, vector in zip(sentences, vectors):
            known[sentence] = self._cache[sentence] = np.asarray(vector, dtype=np.float64)

    def _embedder(self) -> BaseEmbedding:
        return resolve_embed_model(self.embed_model or self._default_embed_model, self.class_name())

    def prefetch(self, groups: Sequence[Sequence[str]], show_progress: bool = False) -> None:
        """Embed in one batch the sentences that :meth:`summarize` needs for each of ``groups``; later calls read
        them from memory. A summary node builder calls this before it summarizes its clusters: one large batch
        is faster than one per cluster, above all when the clusters run concurrently on an in-process model."""
        missing = self._missing(groups)
        if missing:
            vectors = self._embedder().get_text_embedding_batch(missing, show_progress=show_progress)
            self._remember({}, missing, vectors)

    async def aprefetch(self, groups: Sequence[Sequence[str]], show_progress: bool = False) -> None:
        """Async :meth:`prefetch`."""
        missing = self._missing(groups)
        if missing:
            vectors = await self._embedder().aget_text_embedding_batch(missing, show_progress=show_progress)
            self._remember({}, missing, vectors)

    def summarize(self, texts: Sequence[str]) -> str:
        """The sentences of ``texts`` nearest the centroids of their embeddings, in text order."""
        sentences, k, known, missing = self._plan(texts)
        if missing:
            self._remember(known, missing, self._embedder().get_text_embedding_batch(missing))
        return self._finish(sentences, k, known)

    async def asummarize(self, texts: Sequence[str]) -> str:
        """Async :meth:`summarize`."""
        sentences, k, known, missing = self._plan(texts)
        if missing:
            self._remember(known, missing, await self._embedder().aget_text_embedding_batch(missing))
        return self._finish(sentences, k, known)
