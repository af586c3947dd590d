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

    The extractive stage makes the prompt several times shorter than the texts (reading the prompt is about half
    of a local model's time), and ``max_passage_words`` bounds it in a large cluster; the abstractive stage still
    writes a real summary rather than a copy.
    When the LLM cannot (it copies one passage, or says nothing), the extractive summary of the texts is used
    instead of failing the cluster (``extractive_fallback``); the count is in ``usage_["extractive_fallbacks"]``.
    :meth:`from_defaults` does not ask again after a copy: told not to copy, the local models mostly copied again.

    Example:

    ```python
    summarizer = TwoStageSummarizer.from_defaults(llm=llm, embed_model=embed_model, max_sentences=3)
    summarizer.summarize(chunk_texts)
    ```
    """

    extractive: Any = Field(description="Condenses each text (an ExtractiveSummarizer or any Summarizer).")
    abstractive: Any = Field(description="Writes one summary of the condensed texts (e.g. AbstractiveSummarizer).")
    max_passage_words: int | None = Field(
        default=250,
        ge=1,
        description="Bound on the condensed passages the LLM reads, in words (reading the prompt is about half of a "
        "local model's time): when the texts' central sentences add up to more, the longest condensed texts are "
        "cut to their one most central sentence (when that is shorter), one by one, until the passages fit. "
        "Needs an extractive stage with max_sentences (ExtractiveSummarizer). None: no bound.",
    )
    extractive_fallback: bool = Field(
        default=True,
        description="When the abstractive stage raises SummarizationError (a copy; an empty reply), "
        "return the extractive stage's summary of the texts instead.",
    )

    _fallbacks: int = PrivateAttr(default=0)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
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
        max_passage_words: int | None = 250,
        random_state: int = 0,
    ) -> TwoStageSummarizer:
        """An :class:`ExtractiveSummarizer` keeping ``max_sentences`` per text, then an AbstractiveSummarizer
        that does not retry a copy (``copy_retry=False``: the extractive summary is used instead).

        ``embed_model`` None: the builder's (the pipeline's own) model, else ``Settings.embed_model``.
        """
        from llama_index_kgplus.summarizers._extractive import ExtractiveSummarizer

        return cls(
            extractive=ExtractiveSummarizer(
                embed_model=embed_model, max_sentences=max_sentences, random_state=random_state
            ),
            abstractive=AbstractiveSummarizer(llm=llm or _settings_llm(), max_words=max_words, copy_retry=False),
            max_passage_words=max_passage_words,
        )

    def set_default_embed_model(self, embed_model: BaseEmbedding | None) -> None:
        """Give both stages ``embed_model`` when they have none (a builder passes its own)."""
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
        """The first stage alone: each text cut to its central sentences, within ``max_passage_words``."""
        texts = [t for t in texts if t.strip()]
        condensed = [self.extractive.summarize([t]) for t in texts]
        for i in self._to_shorten(condensed):
            if self._fits(condensed):
                break
            condensed[i] = _shorter(condensed[i], self._one_sentence().summarize([texts[i]]))
        return condensed

    async def acondense(self, texts: Sequence[str]) -> list[str]:
        """Async twin of :meth:`condense`."""
        texts = [t for t in texts if t.strip()]
        condensed = [await self.extractive.asummarize([t]) for t in texts]
        for i in self._to_shorten(condensed):
            if self._fits(condensed):
                break
            condensed[i] = _shorter(condensed[i], await self._one_sentence().asummarize([texts[i]]))
        return condensed

    def _fits(self, condensed: list[str]) -> bool:
        bound = self.max_passage_words
        return bound is None or sum(len(c.split()) for c in condensed) <= bound

    def _to_shorten(self, condensed: list[str]) -> list[int]:
        """The condensed texts to cut to one sentence while they do not fit, longest first (none without a
        bound or with an extractive stage that has no ``max_sentences``)."""
        if self._fits(condensed) or getattr(self.extractive, "max_sentences", None) is None:
            return []
        return sorted(range(len(condensed)), key=lambda i: -len(condensed[i].split()))

    def _one_sentence(self) -> BaseSummarizer:
        """The extractive stage keeping one sentence per text (a shallow copy: same sentence embeddings)."""
        return self.extractive.model_copy(update={"max_sentences": 1})

    def prefetch(self, groups: Sequence[Sequence[str]], show_progress: bool = False) -> None:
        """Let the extractive stage embed, in one batch, what condensing each text of ``groups`` needs (see
        :meth:`ExtractiveSummarizer.prefetch`); nothing for a stage without ``prefetch``."""
        if hasattr(self.extractive, "prefetch"):
            self.extractive.prefetch(_one_text_each(groups), show_progress=show_progress)

    async def aprefetch(self, groups: Sequence[Sequence[str]], show_progress: bool = False) -> None:
        """Async :meth:`prefetch`."""
        if hasattr(self.extractive, "aprefetch"):
            await self.extractive.aprefetch(_one_text_each(groups), show_progress=show_progress)

    def summarize(self, texts: Sequence[str]) -> str:
        """Condense ``texts`` extractively, then summarize abstractively; the extractive summary when the LLM gives
        none (``extractive_fallback``)."""
        try:
            return self.abstractive.summarize(self.condense(texts))
        except SummarizationError:
            if not self.extractive_fallback:
                raise
        self._fallbacks += 1
        return self.extractive.summarize(texts)

    async def asummarize(self, texts: Sequence[str]) -> str:
        """Async :meth:`summarize`."""
        try:
            return await self.abstractive.asummarize(await self.acondense(texts))
        except SummarizationError:
            if not self.extractive_fallback:
                raise
        self._fallbacks += 1
        return await self.extractive.asummarize(texts)


def _one_text_each(groups: Sequence[Sequence[str]]) -> list[list[str]]:
    """Each text of ``groups`` on its own, as the first stage condenses them."""
    return [[t] for texts in groups for t in texts if t.strip()]


def _shorter(condensed: str, one_sentence: str) -> str:
    """The one-sentence cut, unless it is not shorter (the sentence nearest the text's centre can be long)."""
    return one_sentence if len(one_sentence.split()) < len(condensed.split()) else condensed
