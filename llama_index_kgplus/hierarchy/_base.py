"""What both summary node builders share: input checks, embeddings, concurrent summaries with retries.

A builder is a LlamaIndex ``TransformComponent``: it takes the chunks (after the splitter and the embedding
step of an ``IngestionPipeline``) and returns them, linked to their new summary nodes, followed by the
summary nodes. Its settings are pydantic fields, so ``to_dict()`` (the ingestion cache key) changes with
them; the models enter the key as stable fingerprints (class, model name, generation settings).
"""

from __future__ import annotations

import hashlib
import json
import time
from abc import abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from llama_index.core.async_utils import run_jobs
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_serializer, field_validator
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.schema import BaseComponent, BaseNode, MetadataMode, TextNode, TransformComponent

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus._sync import run_sync
from llama_index_kgplus.errors import InputDataError, KGPlusSetupError, NotFittedError, SummarizationError
from llama_index_kgplus.events import SummaryLevelEvent
from llama_index_kgplus.hierarchy._parents import make_parent, mark_leaf, mean_embedding, node_level
from llama_index_kgplus.summarizers._base import (
    check_summarizer,
    component_dict,
    model_fingerprint,
    resolve_embed_model,
)

logger = get_logger(__name__)
dispatcher = get_dispatcher(__name__)


@dataclass(frozen=True)
class FailedCluster:
    """A cluster whose summary failed after its tries (see ``max_retries``); its children were kept, without this
    parent."""

    level: int
    child_ids: tuple[str, ...]
    error: str


class BaseSummaryNodeBuilder(TransformComponent):
    """Shared settings and machinery of :class:`SemanticChunkingSummaryNodeBuilder` and
    :class:`RaptorSummaryNodeBuilder` (use one of those).

    Example:

    ```python
    from llama_index_kgplus import SemanticChunkingSummaryNodeBuilder, build_index

    builder = SemanticChunkingSummaryNodeBuilder.from_defaults(llm=llm, embed_model=embed_model)
    index = build_index(documents, "./index", embed_model=embed_model, extra_transformations=[builder])
    builder.n_summaries_, builder.level_stats_, builder.failed_clusters_  # set by the run
    ```
    """

    embed_model: BaseEmbedding | None = Field(
        default=None,
        description="Embeds nodes that arrive without an embedding and (re)embeds summaries; None: Settings.embed_model.",
    )
    summarizer: Any = Field(
        default=None,
        description="Any Summarizer; None: TwoStageSummarizer (extractive with embed_model, then Settings.llm).",
    )
    embedding_mode: Literal["reembed", "mean"] = Field(
        default="reembed", description="Summary embedding: embed the summary text, or the mean of its children's."
    )
    max_levels: int = Field(default=1, ge=1, description="How many levels of summaries to build at most.")
    max_retries: int = Field(
        default=2,
        ge=0,
        description="Retries of a failing summary before it is reported (none when the summarizer says asking again "
        "gives the same: SummarizationError.retryable False, e.g. a copy by a llama.cpp model at temperature 0).",
    )
    random_state: int = Field(default=0, description="Seed of every random step (same seed, same output).")
    num_workers: int = Field(
        default=4, ge=1, exclude=True, description="Summaries written at once (does not change the output)."
    )
    show_progress: bool = Field(default=True, exclude=True, description="Show progress bars.")

    _learned: dict[str, Any] = PrivateAttr(default_factory=dict)
    _summary_memo: dict[str, str] = PrivateAttr(default_factory=dict)
    _remembered: dict[str, str] = PrivateAttr(default_factory=dict)

    @field_validator("summarizer")
    @classmethod
    def _check_summarizer(cls, value: Any) -> Any:
        return check_summarizer(value)

    @field_serializer("summarizer")
    def _serialize_summarizer(self, value: Any) -> Any:
        return component_dict(value)

    @field_serializer("embed_model")
    def _serialize_embed_model(self, value: Any) -> Any:
        return model_fingerprint(value)

    @classmethod
    def from_defaults(
        cls,
        llm: Any | None = None,
        embed_model: BaseEmbedding | None = None,
        *,
        summarizer: Any | None = None,
        max_sentences: int = 2,
        max_words: int = 50,
        **kwargs: Any,
    ) -> BaseSummaryNodeBuilder:
        """A builder with a :class:`TwoStageSummarizer` over ``llm`` (else ``Settings.llm``) and ``embed_model``
        (else ``Settings.embed_model``); other keyword arguments are settings."""
        from llama_index_kgplus.summarizers import TwoStageSummarizer

        embed_model = resolve_embed_model(embed_model, cls.class_name())
        if summarizer is None:
            summarizer = TwoStageSummarizer.from_defaults(
                llm=llm, max_sentences=max_sentences, max_words=max_words, random_state=kwargs.get("random_state", 0)
            )
        return cls(embed_model=embed_model, summarizer=summarizer, **kwargs)

    # ------------------------------------------------------------------ learned attributes

    def _get(self, name: str) -> Any:
        if name not in self._learned:
            raise NotFittedError(
                f"{type(self).__name__}: learned attributes such as {name}_ are set when the builder runs "
                "(a pipeline cache hit does not run it)."
            )
        return self._learned[name]

    @property
    def n_summaries_(self) -> int:
        """Summary nodes made by the last run."""
        return self._get("n_summaries")

    @property
    def n_clusters_(self) -> list[int]:
        """Clusters found per level by the last run (single-node clusters included; they get no summary)."""
        return self._get("n_clusters")

    @property
    def failed_clusters_(self) -> list[FailedCluster]:
        """Clusters whose summary failed after its tries in the last run (their children were kept)."""
        return self._get("failed_clusters")

    @property
    def usage_(self) -> dict[str, int]:
        """The summarizer's LLM calls and tokens during the last run (if it reports them)."""
        return self._get("usage")

    @property
    def level_stats_(self) -> list[dict[str, Any]]:
        """Per level of the last run: ``clusters`` summarised, ``reused`` summaries (the same children, same texts
        in the same order, were summarised before by this builder object: no call), ``failed``, the summarizer's ``usage`` (LLM calls,
        tokens, extractive fallbacks) and ``seconds``."""
        return self._get("level_stats")

    def remember_summaries(self, nodes: Sequence[BaseNode]) -> int:
        """Let this builder reuse the summaries among ``nodes`` (summary nodes whose children are among them, as
        an index's docstore holds them): a cluster of the same children (the same texts in the same order) gets
        the stored summary without a call, as if this builder object had written it. For summaries written with
        this builder's settings (an index sync rebuilds the hierarchy this way, writing only the summaries whose
        children changed). Returns how many summaries it remembers."""
        by_id = {n.node_id: n for n in nodes}
        for node in nodes:
            children = node.child_nodes or []
            if node_level(node) < 1 or not children or any(c.node_id not in by_id for c in children):
                continue
            text = node.get_content(metadata_mode=MetadataMode.NONE).strip()
            if text:
                self._remembered[_children_key([by_id[c.node_id] for c in children])] = text
        return len(self._remembered)

    # ------------------------------------------------------------------ running

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        """Build the summaries (summaries are written concurrently, ``num_workers`` at a time)."""
        return run_sync(self.acall(nodes, **kwargs))

    @dispatcher.span
    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        """Async twin of ``__call__``."""
        nodes = list(nodes)
        self._learned = {"n_summaries": 0, "n_clusters": [], "failed_clusters": [], "usage": {}, "level_stats": []}
        self._learned.update(self._fresh_learned())
        leaves = self._leaves(nodes)
        if len(leaves) < 2:
            return nodes
        embed_model = await self._ensure_embeddings(leaves)
        summarizer = self._resolve_summarizer(embed_model)
        usage_before = _usage(summarizer)
        show = bool(kwargs.get("show_progress", self.show_progress))
        summaries = await self._abuild(leaves, summarizer, embed_model, show)
        self._learned["usage"] = _usage(summarizer, since=usage_before)
        self._learned["n_summaries"] = len(summaries)
        return nodes + summaries

    def _fresh_learned(self) -> dict[str, Any]:
        """The builder-specific learned attributes before anything is learned."""
        return {}

    @abstractmethod
    async def _abuild(
        self, leaves: list[BaseNode], summarizer: Any, embed_model: BaseEmbedding | None, show_progress: bool
    ) -> list[TextNode]:
        """Cluster ``leaves`` (two or more, all embedded) level by level; return the new summary nodes."""

    # ------------------------------------------------------------------ input

    def _leaves(self, nodes: list[BaseNode]) -> list[BaseNode]:
        """The level-0 nodes with text; the others pass through untouched (with a warning if text is missing)."""
        leaves, empty = [], []
        for node in nodes:
            if node_level(node) > 0:
                continue
            if not node.get_content(metadata_mode=MetadataMode.NONE).strip():
                empty.append(node.node_id)
                continue
            leaves.append(node)
        if empty:
            logger.warning(
                "%s: %d node(s) have no text and are left out of the summaries (kept as they are): %s",
                self.class_name(),
                len(empty),
                ", ".join(empty[:5]) + (" ..." if len(empty) > 5 else ""),
            )
        return leaves

    async def _ensure_embeddings(self, leaves: list[BaseNode]) -> BaseEmbedding | None:
        """Reuse existing embeddings, embed only the nodes without one, and check that all dimensions agree."""
        missing = [n for n in leaves if n.embedding is None]
        need_model = bool(missing) or self.embedding_mode == "reembed" or self.summarizer is None
        embed_model = self.embed_model  # also handed to a summarizer that has none of its own
        if need_model and embed_model is None:
            try:
                embed_model = resolve_embed_model(self.embed_model, self.class_name())
            except KGPlusSetupError as exc:
                if missing:
                    raise InputDataError(
                        f"{self.class_name()}: {len(missing)} of {len(leaves)} nodes have no embedding (first: "
                        f"{missing[0].node_id}) and no embedding model is available. Put the embedding model "
                        "before the builder in the IngestionPipeline, or pass embed_model=..."
                    ) from exc
                if self.embedding_mode == "reembed":
                    raise
        if missing:
            assert embed_model is not None  # resolved above, or the missing embeddings raised
            vectors = await embed_model.aget_text_embedding_batch(
                [n.get_content(metadata_mode=MetadataMode.EMBED) for n in missing]
            )
            for node, vector in zip(missing, vectors):
                node.embedding = list(vector)
        dims = Counter(len(n.get_embedding()) for n in leaves)
        if len(dims) > 1:
            by_dim = {d: next(n.node_id for n in leaves if len(n.get_embedding()) == d) for d in dims}
            detail = ", ".join(f"{count} of dimension {d} (e.g. {by_dim[d]})" for d, count in dims.most_common())
            raise InputDataError(
                f"{self.class_name()}: the nodes' embeddings have different dimensions: {detail}. They come from "
                "different embedding models; re-embed all nodes with one model."
            )
        if 0 in dims:
            raise InputDataError(f"{self.class_name()}: some nodes have an empty embedding; re-embed them.")
        for leaf in leaves:
            mark_leaf(leaf)
        return embed_model

    def _resolve_summarizer(self, embed_model: BaseEmbedding | None) -> Any:
        summarizer = self.summarizer
        if summarizer is None:
            from llama_index_kgplus.summarizers import TwoStageSummarizer

            summarizer = TwoStageSummarizer.from_defaults(random_state=self.random_state)
        if hasattr(summarizer, "set_default_embed_model"):
            summarizer.set_default_embed_model(embed_model)
        return summarizer

    # ------------------------------------------------------------------ summaries

    @dispatcher.span
    async def _asummarize_clusters(
        self,
        clusters: list[list[BaseNode]],
        level: int,
        summarizer: Any,
        embed_model: BaseEmbedding | None,
        show_progress: bool,
    ) -> list[TextNode | None]:
        """One summary node per cluster (None where it failed after its tries), linked and embedded.

        Children this builder has summarised before (the same texts in the same order, the same summarizer
        settings) get the same summary again without a call, for the life of the builder object: re-running a
        pipeline with it after one document changed costs only the clusters that changed. A summarizer with an
        ``aprefetch(groups, show_progress)`` method gets every cluster's texts first (see
        :meth:`ExtractiveSummarizer.prefetch`).
        """
        started, usage_before = time.perf_counter(), _usage(summarizer)
        # a summarizer that is not a BaseComponent has no settings to compare: that very object is the key
        identity = component_dict(summarizer) if isinstance(summarizer, BaseComponent) else id(summarizer)
        settings = json.dumps(identity, sort_keys=True, default=str)
        keys = [_memo_key(settings, cluster) for cluster in clusters]
        for key, cluster in zip(keys, clusters):  # summaries of an earlier run (remember_summaries)
            if key not in self._summary_memo and (known := self._remembered.get(_children_key(cluster))):
                self._summary_memo[key] = known
        todo = {key: cluster for key, cluster in zip(keys, clusters) if key not in self._summary_memo}
        reused = len(keys) - len(todo)  # summarised before, or twice in this level
        if todo and hasattr(summarizer, "aprefetch"):  # e.g. every sentence an extractive stage embeds, in one batch
            try:
                await summarizer.aprefetch([_texts(c) for c in todo.values()], show_progress=show_progress)
            except KGPlusSetupError:
                raise
            except Exception as exc:  # an optimisation only: each cluster still gets its tries below
                logger.info("%s: prefetch failed (%s: %s)", self.class_name(), type(exc).__name__, exc)
        written = await run_jobs(
            [self._asummarize_one(cluster, summarizer) for cluster in todo.values()],
            show_progress=show_progress,
            workers=self.num_workers,
            desc=f"{self.class_name()} level {level}",
        )
        errors: dict[str, tuple[str, int]] = {}
        for key, (text, error, tries) in zip(todo, written):
            if text is None:
                errors[key] = (error, tries)
            else:
                self._summary_memo[key] = text
        parents: list[TextNode | None] = []
        for key, cluster in zip(keys, clusters):
            text = self._summary_memo.get(key)
            if text is None:
                error, tries = errors[key]
                failure = FailedCluster(level, tuple(c.node_id for c in cluster), error)
                self._learned["failed_clusters"].append(failure)
                logger.warning(
                    "%s: the summary of a level-%d cluster of %d nodes failed (tries: %d; %s); its children are "
                    "kept without this parent.",
                    self.class_name(),
                    level,
                    len(cluster),
                    tries,
                    error,
                )
                parents.append(None)
            else:
                parents.append(make_parent(self.class_name(), cluster, text))
        made = [(p, c) for p, c in zip(parents, clusters) if p is not None]
        if made and self.embedding_mode == "reembed":
            assert embed_model is not None  # "reembed" resolves it or raises
            vectors = await embed_model.aget_text_embedding_batch(
                [p.get_content(metadata_mode=MetadataMode.EMBED) for p, _ in made]
            )
            for (parent, _), vector in zip(made, vectors):
                parent.embedding = list(vector)
        elif made:
            for parent, cluster in made:
                parent.embedding = mean_embedding(cluster)
        stats: dict[str, Any] = {
            "level": level,
            "clusters": len(clusters),
            "reused": reused,
            "failed": sum(1 for p in parents if p is None),
            "usage": _usage(summarizer, since=usage_before),
        }
        dispatcher.event(SummaryLevelEvent(builder=self.class_name(), **stats))
        self._learned["level_stats"].append({**stats, "seconds": round(time.perf_counter() - started, 3)})
        return parents

    async def _asummarize_one(self, cluster: list[BaseNode], summarizer: Any) -> tuple[str | None, str, int]:
        """The summary of ``cluster`` (or None), the last error and the number of tries."""
        texts = _texts(cluster)
        error, tries = "", 0
        for tries in range(1, self.max_retries + 2):
            try:
                text = (await summarizer.asummarize(texts) or "").strip()
                if not text:
                    raise SummarizationError("the summarizer returned an empty summary")
                return text, "", tries
            except KGPlusSetupError:  # a missing model or package fails every cluster alike: say it once
                raise
            except Exception as exc:  # any failure of a user's summarizer or LLM: retry, then report
                error = f"{type(exc).__name__}: {exc}"
                logger.info("%s: summary attempt %d failed: %s", self.class_name(), tries, error)
                if isinstance(exc, SummarizationError) and not exc.retryable:  # asking again gives the same
                    break
        return None, error, tries


def _texts(cluster: list[BaseNode]) -> list[str]:
    """What a summarizer is given of ``cluster``: its nodes' texts without metadata."""
    return [c.get_content(metadata_mode=MetadataMode.NONE) for c in cluster]


def _memo_key(summarizer_settings: str, cluster: list[BaseNode]) -> str:
    digest = hashlib.sha256(summarizer_settings.encode())
    digest.update(_children_key(cluster).encode())
    return digest.hexdigest()


def _children_key(cluster: Sequence[BaseNode]) -> str:
    digest = hashlib.sha256()
    for child in cluster:
        text = child.get_content(metadata_mode=MetadataMode.NONE).encode()
        digest.update(len(text).to_bytes(8, "big") + text)  # length first: no two clusters share a key
    return digest.hexdigest()


def _usage(summarizer: Any, since: dict[str, int] | None = None) -> dict[str, int]:
    """The summarizer's ``usage_`` counters (``{}`` if it keeps none), minus ``since``."""
    now = dict(getattr(summarizer, "usage_", {}) or {})
    return {key: value - (since or {}).get(key, 0) for key, value in now.items()}
