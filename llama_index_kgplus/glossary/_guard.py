"""The drift guard: decide whether a rewritten query may replace the original.

A rewrite is refused when it is empty, longer than ``max_words`` words, or off-topic, i.e. its embedding's
cosine similarity to the original query's is below ``min_similarity``. The verdict names the reason, which the
engine reports as ``fallback_reason`` while it carries on with the original query.

Example:

```python
guard = DriftGuard.from_defaults(min_similarity=0.6)
verdict = guard.check("How do I sort a list?", "Which football teams won the cup?")
verdict.accepted, verdict.reason      # False, 'off-topic rewrite: similarity 0.05 < 0.60 to the original'
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr

from llama_index_kgplus._vectors import cosine


@dataclass(frozen=True)
class GuardVerdict:
    """``reason`` is None when the rewrite is accepted; ``similarity`` is None when it was not measured."""

    reason: str | None
    similarity: float | None = None
    words: int = 0

    @property
    def accepted(self) -> bool:
        return self.reason is None


class DriftGuard(BaseModel):
    """Refuses empty, overlong and off-topic rewrites (embedding similarity to the original query).

    Example:

    ```python
    guard = DriftGuard.from_defaults()
    guard.check(original, rewritten).reason   # None if the rewrite may be used
    ```
    """

    max_words: int = Field(default=100, gt=0, description="Longest accepted rewrite, in words.")
    min_similarity: float = Field(
        default=0.5, description="Lowest accepted cosine similarity between the rewrite and the original query."
    )

    _embed_model: BaseEmbedding | None = PrivateAttr(default=None)

    def __init__(self, *, embed_model: BaseEmbedding | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._embed_model = embed_model

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "DriftGuard"

    @classmethod
    def from_defaults(cls, embed_model: BaseEmbedding | None = None, **kwargs: Any) -> DriftGuard:
        """A guard with ``embed_model`` (default: ``Settings.embed_model``) and the other settings as keywords."""
        from llama_index.core import Settings

        return cls(embed_model=embed_model or Settings.embed_model, **kwargs)

    @property
    def embed_model(self) -> BaseEmbedding:
        """The embedding model that compares the two queries (``Settings.embed_model`` unless one was given)."""
        if self._embed_model is None:
            from llama_index.core import Settings

            self._embed_model = Settings.embed_model
        return self._embed_model

    def _static_verdict(self, rewritten: str) -> GuardVerdict | None:
        """The verdict when no embedding is needed (empty or overlong), else None."""
        words = len(rewritten.split())
        if not words:
            return GuardVerdict("empty rewrite", None, 0)
        if words > self.max_words:
            return GuardVerdict(f"overlong rewrite: {words} words > {self.max_words}", None, words)
        return None

    def _verdict(self, similarity: float, rewritten: str) -> GuardVerdict:
        words = len(rewritten.split())
        if similarity < self.min_similarity:
            reason = f"off-topic rewrite: similarity {similarity:.2f} < {self.min_similarity:.2f} to the original"
            return GuardVerdict(reason, similarity, words)
        return GuardVerdict(None, similarity, words)

    def check(self, original: str, rewritten: str, original_embedding: list[float] | None = None) -> GuardVerdict:
        """Judge ``rewritten`` against ``original`` (``original_embedding`` saves one embedding call)."""
        if verdict := self._static_verdict(rewritten):
            return verdict
        if original_embedding is None:
            original_embedding = self.embed_model.get_query_embedding(original)
        return self._verdict(cosine(original_embedding, self.embed_model.get_query_embedding(rewritten)), rewritten)

    async def acheck(
        self, original: str, rewritten: str, original_embedding: list[float] | None = None
    ) -> GuardVerdict:
        """Async :meth:`check`."""
        if verdict := self._static_verdict(rewritten):
            return verdict
        if original_embedding is None:
            original_embedding = await self.embed_model.aget_query_embedding(original)
        rewritten_embedding = await self.embed_model.aget_query_embedding(rewritten)
        return self._verdict(cosine(original_embedding, rewritten_embedding), rewritten)
