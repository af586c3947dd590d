"""Semantic-chunk summaries: a new cluster starts where consecutive chunks stop being similar.

The cosine similarity of each chunk to the next one of the same document forms a curve; a cluster ends
where the curve drops below a threshold. The threshold is learned from all the curves of a run:

- ``percentile`` (default): with a desired cluster size of K chunks, a cut falls at about one gap in K, so
  the threshold is the (100/K)-th percentile of the similarities (K = 5: the 20th percentile, i.e. cut where
  the distance is above its 80th percentile), giving about N/K clusters for N chunks;
- ``stddev``: mean - ``threshold_amount`` standard deviations (default 1);
- ``iqr``: first quartile - ``threshold_amount`` inter-quartile ranges (default 0.5).

``similarity_thresholds`` fixes them instead, one per level: an index sync clusters the documents it re-indexes
with the thresholds the ingest learned (``thresholds`` in ``hierarchy.json``), so the other documents keep theirs.

Clusters larger than ``max_cluster_size`` are split at their weakest link; single chunks join the more
similar neighbour when ``merge_singletons``. Chunks of different source documents are never merged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import BaseNode, TextNode

from llama_index_kgplus._vectors import unit_rows
from llama_index_kgplus.hierarchy._base import BaseSummaryNodeBuilder
from llama_index_kgplus.hierarchy._parents import node_doc_ids

_TOLERANCE = 1e-6  # similarities within this of the threshold do not cut (identical vectors, float noise)


def consecutive_similarities(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """Cosine similarity of each vector to the next one (length ``len(vectors) - 1``)."""
    matrix = np.asarray(vectors, dtype=np.float64)
    if len(matrix) < 2:
        return np.zeros(0)
    unit = unit_rows(matrix)
    return np.einsum("ij,ij->i", unit[:-1], unit[1:])


def similarity_threshold(
    similarities: np.ndarray,
    method: Literal["percentile", "stddev", "iqr"] = "percentile",
    cluster_size: int = 5,
    amount: float | None = None,
) -> float:
    """The similarity below which a new cluster starts (see the module doc)."""
    sims = np.asarray(similarities, dtype=np.float64)
    if sims.size == 0:
        raise ValueError("no similarities to learn a threshold from")
    if method == "percentile":
        return float(np.percentile(sims, 100.0 / cluster_size if amount is None else amount))
    if method == "stddev":
        return float(sims.mean() - (1.0 if amount is None else amount) * sims.std())
    if method == "iqr":
        q1, q3 = np.percentile(sims, [25, 75])
        return float(q1 - (0.5 if amount is None else amount) * (q3 - q1))
    raise ValueError(f"unknown threshold method {method!r}")


def segment(
    similarities: np.ndarray, threshold: float, max_size: int, merge_singletons: bool = True
) -> list[tuple[int, int]]:
    """Half-open ``(start, end)`` segments of a sequence of ``len(similarities) + 1`` items."""
    sims = np.asarray(similarities, dtype=np.float64)
    n = len(sims) + 1
    bounds = [0, *(i + 1 for i, s in enumerate(sims) if s < threshold - _TOLERANCE), n]
    segments: list[tuple[int, int]] = []
    for a, b in zip(bounds, bounds[1:]):
        segments.extend(_split(sims, a, b, max_size))
    if merge_singletons:
        segments = _merge_singletons(sims, segments, max_size)
    return segments


def _split(sims: np.ndarray, a: int, b: int, max_size: int) -> list[tuple[int, int]]:
    if b - a <= max_size:
        return [(a, b)]
    # gap g lies between items g and g + 1: cut at the weakest, the one nearest the middle on ties
    middle = (a + b - 2) / 2
    cut = min(range(a, b - 1), key=lambda g: (round(float(sims[g]), 9), abs(g - middle))) + 1
    return _split(sims, a, cut, max_size) + _split(sims, cut, b, max_size)


def _merge_singletons(sims: np.ndarray, segments: list[tuple[int, int]], max_size: int) -> list[tuple[int, int]]:
    segments = list(segments)
    changed = True
    while changed:
        changed = False
        for j, (a, b) in enumerate(segments):
            if b - a != 1:
                continue
            options = []
            if j > 0 and b - segments[j - 1][0] <= max_size:
                options.append((float(sims[a - 1]), j - 1))
            if j + 1 < len(segments) and segments[j + 1][1] - a <= max_size:
                options.append((float(sims[a]), j + 1))
            if not options:
                continue
            _, k = max(options)
            lo, hi = min(j, k), max(j, k)
            segments[lo : hi + 1] = [(segments[lo][0], segments[hi][1])]
            changed = True
            break
    return segments


class SemanticChunkingSummaryNodeBuilder(BaseSummaryNodeBuilder):
    """Summarise runs of consecutive, similar chunks of one document (one level by default).

    Put it after the splitter and the embedding model in an ``IngestionPipeline``; it returns the chunks
    (now with ``level`` 0 and a PARENT link) followed by the summary nodes (``level`` 1, CHILD links).

    Example:

    ```python
    builder = SemanticChunkingSummaryNodeBuilder.from_defaults(llm=llm, embed_model=embed_model, cluster_size=5)
    pipeline = IngestionPipeline(transformations=[SentenceSplitter(), embed_model, builder])
    nodes = pipeline.run(documents=docs)
    builder.threshold_, builder.n_clusters_
    ```
    """

    threshold_method: Literal["percentile", "stddev", "iqr"] = Field(
        default="percentile", description="How the similarity threshold is learned (see the module doc)."
    )
    cluster_size: int = Field(default=5, ge=2, description="Desired chunks per cluster (K) for the percentile method.")
    threshold_amount: float | None = Field(
        default=None,
        description="percentile: the percentile itself (default 100/K); stddev: standard deviations below the "
        "mean (default 1); iqr: inter-quartile ranges below Q1 (default 0.5).",
    )
    max_cluster_size: int | None = Field(
        default=None, ge=2, description="Split larger clusters at their weakest link (default 2 * cluster_size)."
    )
    merge_singletons: bool = Field(
        default=True, description="Join single-chunk clusters to the more similar neighbour."
    )
    similarity_thresholds: list[float] | None = Field(
        default=None,
        description="Fixed thresholds, one per level, instead of learning them from each run's chunks (an index "
        "sync reuses those of the ingest, so that documents it did not change keep their clusters); a level "
        "beyond the list learns its own.",
    )

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "SemanticChunkingSummaryNodeBuilder"

    # ------------------------------------------------------------------ learned attributes

    @property
    def threshold_(self) -> float | None:
        """The similarity threshold learned at level 1 (None if no document had two chunks)."""
        return self._get("thresholds")[0] if self._get("thresholds") else None

    @property
    def thresholds_(self) -> list[float]:
        """The threshold used at each level (learned, or given as ``similarity_thresholds``)."""
        return self._get("thresholds")

    @property
    def similarities_(self) -> dict[str | None, np.ndarray]:
        """Per source document, the similarity of each level-0 chunk to the next (the curve that is cut)."""
        return self._get("similarities")

    @property
    def breakpoints_(self) -> dict[str | None, list[int]]:
        """Per source document, the chunk positions where a level-1 cluster starts (0 left out)."""
        return self._get("breakpoints")

    # ------------------------------------------------------------------ building

    def _fresh_learned(self) -> dict[str, Any]:
        return {"thresholds": [], "similarities": {}, "breakpoints": {}}

    @staticmethod
    def _sequences(leaves: list[BaseNode]) -> dict[str | None, list[BaseNode]]:
        groups: dict[str | None, list[BaseNode]] = {}
        for node in leaves:
            ids = node_doc_ids(node)
            groups.setdefault(ids[0] if ids else None, []).append(node)
        for key, seq in groups.items():  # document order, when every chunk knows its position
            starts = [getattr(n, "start_char_idx", None) for n in seq]
            if all(s is not None for s in starts):
                groups[key] = [n for _, n in sorted(zip(starts, seq), key=lambda pair: pair[0] or 0)]
        return groups

    async def _abuild(
        self, leaves: list[BaseNode], summarizer: Any, embed_model: BaseEmbedding | None, show_progress: bool
    ) -> list[TextNode]:
        max_size = self.max_cluster_size or 2 * self.cluster_size
        sequences = self._sequences(leaves)
        made: list[TextNode] = []
        for level in range(1, self.max_levels + 1):
            sims = {k: consecutive_similarities([n.get_embedding() for n in seq]) for k, seq in sequences.items()}
            curves = [s for s in sims.values() if s.size]
            if not curves:
                break
            fixed = self.similarity_thresholds or []
            threshold = (
                float(fixed[level - 1])
                if level <= len(fixed)
                else similarity_threshold(
                    np.concatenate(curves), self.threshold_method, self.cluster_size, self.threshold_amount
                )
            )
            plan = {k: segment(sims[k], threshold, max_size, self.merge_singletons) for k in sequences}
            self._learned["thresholds"].append(threshold)
            self._learned["n_clusters"].append(sum(len(p) for p in plan.values()))
            if level == 1:
                self._learned["similarities"] = {k: s for k, s in sims.items()}
                self._learned["breakpoints"] = {k: [a for a, _ in segs[1:]] for k, segs in plan.items()}
            jobs = [(k, a, b) for k, segs in plan.items() for a, b in segs if b - a >= 2]
            if not jobs:
                break
            parents = await self._asummarize_clusters(
                [sequences[k][a:b] for k, a, b in jobs], level, summarizer, embed_model, show_progress
            )
            made.extend(p for p in parents if p is not None)
            done = {(k, a, b): p for (k, a, b), p in zip(jobs, parents) if p is not None}
            next_sequences = {
                k: [n for a, b in plan[k] for n in ([done[(k, a, b)]] if (k, a, b) in done else seq[a:b])]
                for k, seq in sequences.items()
            }
            if sum(map(len, next_sequences.values())) == sum(map(len, sequences.values())):
                break
            sequences = next_sequences
        return made
