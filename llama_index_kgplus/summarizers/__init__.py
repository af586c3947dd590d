"""Summarizers for summary nodes: extractive (embedding centroids), abstractive (any LLM), two-stage.

Every summarizer has ``summarize(texts) -> str`` and ``async asummarize(texts) -> str`` (the
:class:`Summarizer` protocol); this pack's own are pydantic components whose settings enter the ingestion
cache key of the builder that holds them.

Example:

```python
from llama_index_kgplus.summarizers import TwoStageSummarizer
summarizer = TwoStageSummarizer.from_defaults(llm=llm, embed_model=embed_model)
summarizer.summarize(["chunk one ...", "chunk two ..."])
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.summarizers._abstractive import AbstractiveSummarizer
from llama_index_kgplus.summarizers._base import BaseSummarizer
from llama_index_kgplus.summarizers._extractive import ExtractiveSummarizer
from llama_index_kgplus.summarizers._two_stage import TwoStageSummarizer

__all__ = [
    "BaseSummarizer",
    "ExtractiveSummarizer",
    "AbstractiveSummarizer",
    "TwoStageSummarizer",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "DEFAULT_SUMMARY_PROMPT": "llama_index_kgplus.summarizers._abstractive:DEFAULT_SUMMARY_PROMPT",
        "split_sentences": "llama_index_kgplus._text:split_sentences",
        "Summarizer": "llama_index_kgplus.summarizers._base:Summarizer",
        "SummarizationError": "llama_index_kgplus.errors:SummarizationError",
    },
)
