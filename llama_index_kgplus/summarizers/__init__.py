"""Summarizers for summary nodes: extractive (embedding centroids), abstractive (any LLM), two-stage.

Every summarizer has ``summarize(texts) -> str`` and ``async asummarize(texts) -> str`` (the
:class:`Summarizer` protocol); this pack's own are pydantic components whose settings enter the ingestion
cache key of the builder that holds them.

Example::

    from llama_index_kgplus.summarizers import TwoStageSummarizer
    summarizer = TwoStageSummarizer.from_defaults(llm=llm, embed_model=embed_model)
    summarizer.summarize(["chunk one ...", "chunk two ..."])
"""

from llama_index_kgplus.errors import SummarizationError
from llama_index_kgplus.summarizers._abstractive import (
    DEFAULT_SUMMARY_PROMPT,
    AbstractiveSummarizer,
)
from llama_index_kgplus.summarizers._base import BaseSummarizer, Summarizer
from llama_index_kgplus.summarizers._extractive import ExtractiveSummarizer
from llama_index_kgplus.summarizers._two_stage import TwoStageSummarizer
from llama_index_kgplus.text import split_sentences

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "AbstractiveSummarizer",
    "BaseSummarizer",
    "ExtractiveSummarizer",
    "SummarizationError",
    "Summarizer",
    "TwoStageSummarizer",
    "split_sentences",
]
