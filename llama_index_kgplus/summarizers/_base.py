"""The ``Summarizer`` protocol, the base class of this pack's summarizers, and their shared helpers."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseComponent

from llama_index_kgplus.errors import KGPlusSetupError


@runtime_checkable
class Summarizer(Protocol):
    """Anything that turns a few texts into one summary, sync and async.

    The summary node builders accept any object with these two methods; this pack's summarizers subclass
    :class:`BaseSummarizer`, which also makes their settings part of the ingestion cache key. A builder also
    calls an ``aprefetch(groups, show_progress)`` method, when there is one, with the texts of every cluster of a
    level before it summarizes them one by one.

    Example:

    ```python
    from llama_index_kgplus import SemanticChunkingSummaryNodeBuilder

    class FirstSentence:  # any object with these two methods is a Summarizer
        def summarize(self, texts):
            return texts[0].split(". ")[0] + "."

        async def asummarize(self, texts):
            return self.summarize(texts)

    builder = SemanticChunkingSummaryNodeBuilder.from_defaults(summarizer=FirstSentence(), embed_model=embed_model)
    ```
    """

    def summarize(self, texts: Sequence[str]) -> str:
        """One summary of ``texts``."""

    async def asummarize(self, texts: Sequence[str]) -> str:
        """Async :meth:`summarize`."""


class BaseSummarizer(BaseComponent):
    """Base class: pydantic settings (hashed by ``to_dict()``), ``summarize`` / ``asummarize`` twins.

    Example:

    ```python
    from llama_index_kgplus.summarizers import BaseSummarizer

    class Headline(BaseSummarizer):  # its fields enter the ingestion cache key of the builder that holds it
        max_words: int = 12

        def summarize(self, texts):
            return " ".join(" ".join(texts).split()[: self.max_words])

        async def asummarize(self, texts):
            return self.summarize(texts)
    ```
    """

    _default_embed_model: BaseEmbedding | None = PrivateAttr(default=None)

    @abstractmethod
    def summarize(self, texts: Sequence[str]) -> str:
        """One summary of ``texts`` (in the order given)."""

    @abstractmethod
    async def asummarize(self, texts: Sequence[str]) -> str:
        """Async twin of :meth:`summarize`."""

    def set_default_embed_model(self, embed_model: BaseEmbedding | None) -> None:
        """Use ``embed_model`` when no ``embed_model`` setting was given (a builder passes the pipeline's own).

        It is kept in a private attribute, so it does not change the summarizer's cache key.
        """
        self._default_embed_model = embed_model


def model_fingerprint(model: Any) -> dict[str, Any] | None:
    """A stable, JSON-able identity of an LLM or embedding model for the ingestion cache key.

    ``model_dump()`` of some models changes after their first call (llama.cpp adds ``stream`` to its
    generation kwargs), which would turn every second pipeline run into a cache miss; this keeps only the
    settings that change the output.
    """
    if model is None:
        return None
    out: dict[str, Any] = {"class_name": model.class_name() if hasattr(model, "class_name") else type(model).__name__}
    metadata = getattr(model, "metadata", None)
    if metadata is not None and hasattr(metadata, "model_name"):  # an LLM
        out.update(
            model_name=str(metadata.model_name),
            context_window=getattr(metadata, "context_window", None),
            num_output=getattr(metadata, "num_output", None),
        )
    for key in ("model_name", "model", "temperature", "max_new_tokens", "max_tokens", "embed_batch_size", "normalize"):
        value = getattr(model, key, None)
        if isinstance(value, (str, int, float, bool)) and key not in out:
            out[key] = value
    return out


def resolve_embed_model(embed_model: BaseEmbedding | None, what: str) -> BaseEmbedding:
    """``embed_model``, else ``Settings.embed_model``; one clear error if neither can be had."""
    if embed_model is not None:
        return embed_model
    from llama_index.core import Settings

    try:
        return Settings.embed_model
    except Exception as exc:  # Settings falls back to OpenAI, which is usually not installed here
        raise KGPlusSetupError(
            f"{what} needs an embedding model and none was given: pass embed_model=..., or set "
            "Settings.embed_model (e.g. llama_index_kgplus.llm.embed_model_from_spec())."
        ) from exc


def component_dict(value: Any) -> Any:
    """Serialise a nested component for the cache key: ``to_dict()`` of a BaseComponent, else its class name."""
    if value is None:
        return None
    if isinstance(value, BaseComponent):
        return value.to_dict()
    return {"class_name": f"{type(value).__module__}.{type(value).__qualname__}"}


def check_summarizer(value: Any) -> Any:
    """Validate that ``value`` follows the :class:`Summarizer` protocol (None passes)."""
    if value is not None and not isinstance(value, Summarizer):
        raise ValueError(
            f"{type(value).__name__} is not a Summarizer: it needs summarize(texts) and async asummarize(texts)."
        )
    return value
