"""Two-stage summaries: condense each text extractively, then summarise the condensed texts with the LLM."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_serializer, field_validator
from llama_index.core.llms import LLM

from llama_index_kgplus.errors import SummarizationError
from llama_index_kgplus.summarizers._abstractive import (
    AbstractiveSummarizer,
    _settings_llm,
)
from llama_index_kgplus.summarizers._base import (
    BaseSummarizer,
    check_summarizer,
    component_dict,
)


class TwoStageSummarizer(BaseSummarizer):
    """Each text is cut to its central sentences (no LLM), then one LLM call summarises what is left.

    The extractive stage makes the prompt several times shorter than the texts, which is where a local
    model spends most of its time; the abstractive stage still writes a real summary rather than a copy.
    When the LLM cannot (it copies one passage even when told not to, or says nothing), the extractive
    summary of the texts is used instead of failing the cluster (``extractive_fallback``); the count is in
    ``usage_["extractive_fallbacks"]``.

    Example::

        summarizer = TwoStageSummarizer.from_defaults(llm=llm, embed_model=embed_model, max_sentences=3)
        summarizer.summarize(chunk_texts)
    """

    extractive: Any = Field(description="Condenses each text (an ExtractiveSummarizer or any Summarizer).")
    abstractive: Any = Field(description="Writes one summary of the condensed texts (e.g. AbstractiveSummarizer).")
    extractive_fallback: bool = Field(
        default=True,
        description="When the abstractive stage raises SummarizationError (a copy, twice; an empty reply), "
        "return the extractive stage's summary of the texts instead.",
    )

    _fallbacks: int = PrivateAttr(default=0)

    @classmethod
    def class_name(cls) -> str:
        return "TwoStageSummarizer"

    @field_validator("extractive", "abstractive")
    @classmethod
    def _check_stage(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("both stages are required")
        return check_summarizer(value)

    @field_serializer("extractive", "abstractive")
    def _serialize_stage(self, value: Any) -> Any:
        return component_dict(value)

    @classmethod
    def from_defaults(
        cls,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        *,
        max_sentences: int = 2,
        max_words: int = 50,
        random_state: int = 0,
    ) -> TwoStageSummarizer:
        """An :class:`ExtractiveSummarizer` keeping ``max_sentences`` per text, then an AbstractiveSummarizer.

        ``embed_model`` None: the builder's (the pipeline's own) model, else ``Settings.embed_model``.
        """
        from llama_index_kgplus.summarizers._extractive import ExtractiveSummarizer

        return cls(
            extractive=ExtractiveSummarizer(
                embed_model=embed_model, max_sentences=max_sentences, random_state=random_state
            ),
            abstractive=AbstractiveSummarizer(llm=llm or _settings_llm(), max_words=max_words),
        )

    def set_default_embed_model(self, embed_model: BaseEmbedding | None) -> None:
        super().set_default_embed_model(embed_model)
        for stage in (self.extractive, self.abstractive):
            if hasattr(stage, "set_default_embed_model"):
                stage.set_default_embed_model(embed_model)

    @property
    def usage_(self) -> dict[str, int]:
        """The abstractive stage's LLM usage (the extractive stage makes no LLM call) and the number of
        extractive fallbacks."""
        return {**getattr(self.abstractive, "usage_", {}), "extractive_fallbacks": self._fallbacks}

    def condense(self, texts: Sequence[str]) -> list[str]:
        """The first stage alone: each text cut to its central sentences."""
        return [self.extractive.summarize([t]) for t in texts if t.strip()]

    async def acondense(self, texts: Sequence[str]) -> list[str]:
        """Async twin of :meth:`condense`."""
        return [await self.extractive.asummarize([t]) for t in texts if t.strip()]

    def summarize(self, texts: Sequence[str]) -> str:
        try:
            return self.abstractive.summarize(self.condense(texts))
        except SummarizationError:
            if not self.extractive_fallback:
                raise
        self._fallbacks += 1
        return self.extractive.summarize(texts)

    async def asummarize(self, texts: Sequence[str]) -> str:
        try:
            return await self.abstractive.asummarize(await self.acondense(texts))
        except SummarizationError:
            if not self.extractive_fallback:
                raise
        self._fallbacks += 1
        return await self.extractive.asummarize(texts)
