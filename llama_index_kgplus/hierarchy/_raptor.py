"""RAPTOR-style summaries: cluster the chunks by meaning (across documents), summarise each cluster, and
repeat on the summaries until one root remains, no cluster is left to summarise or ``max_levels`` is reached.

Differences from LlamaIndex's RaptorPack, on purpose: parents are real CHILD/PARENT relationships; a
single-node cluster or level costs no LLM call (the node goes up unchanged), and so does a cluster of nodes
that share no topic (``min_cluster_similarity``); summaries are written concurrently with a bounded worker
count; everything is seeded; small inputs (N = 0, 1, 2, identical vectors, fewer rows than UMAP needs) are
handled; a failing summary is retried and then reported.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import BaseNode, NodeRelationship, TextNode

from llama_index_kgplus._vectors import mean_pairwise_cosine
from llama_index_kgplus.hierarchy._base import BaseSummaryNodeBuilder
from llama_index_kgplus.hierarchy._clustering import ClusterSettings, soft_cluster
from llama_index_kgplus.hierarchy._parents import PARENT_IDS_KEY, related_info


class RaptorSummaryNodeBuilder(BaseSummaryNodeBuilder):
    """Build a RAPTOR tree of summary nodes over all chunks of a run.

    Each level: UMAP to ``reduction_dim`` dimensions (PCA when there are too few nodes for UMAP), a Gaussian
    mixture with the number of components chosen by BIC (``criterion="aic"`` selectable), soft membership
    above ``membership_threshold`` (a node may have several parents; its PARENT is the most probable),
    clusters above ``max_cluster_size`` re-clustered. Summaries span documents (``doc_ids`` lists them). The
    mixture puts every node in some cluster, so near the top of a tree over unrelated documents it pairs nodes
    that share no topic; such a cluster (mean similarity below ``min_cluster_similarity``) gets no summary and
    its nodes go up unchanged (:attr:`unrelated_clusters_`): at the top they stay roots.

    Example:

    ```python
    builder = RaptorSummaryNodeBuilder.from_defaults(llm=llm, embed_model=embed_model, max_levels=3)
    nodes = IngestionPipeline(transformations=[SentenceSplitter(), embed_model, builder]).run(documents=docs)
    builder.n_clusters_, builder.bic_[0]
    ```
    """

    max_levels: int = Field(default=3, ge=1, description="How many levels of summaries to build at most.")
    reduction_dim: int = Field(default=10, ge=1, description="UMAP (or PCA) output dimensions.")
    n_neighbors: int | None = Field(
        default=None, ge=2, description="UMAP neighbours (None: sqrt(N - 1), RAPTOR's choice)."
    )
    metric: str = Field(default="cosine", description="UMAP distance metric.")
    reducer: Literal["umap", "pca"] = Field(
        default="umap",
        description="Dimension reduction; 'pca' avoids UMAP (and its numba compile on a machine's first run).",
    )
    max_clusters: int = Field(default=50, ge=1, description="Most mixture components tried per level.")
    criterion: Literal["bic", "aic"] = Field(default="bic", description="Chooses the number of components.")
    membership_threshold: float = Field(
        default=0.2, gt=0.0, lt=1.0, description="A node joins every cluster it belongs to with a higher probability."
    )
    max_cluster_size: int = Field(default=10, ge=2, description="Larger clusters are clustered again (then split).")
    min_cluster_similarity: float | None = Field(
        default=0.25,
        ge=-1.0,
        le=1.0,
        description="A cluster is summarised only when the mean cosine similarity of its members' embeddings "
        "reaches this; below it they share no topic and a summary would mix unrelated texts, so they go up "
        "unchanged (a node may still get a parent through another cluster or at a higher level). The default "
        "fits all-MiniLM-L6-v2: 0.06-0.21 for the pairs of unrelated articles at the top of a tree, 0.34 or "
        "more within one article; models whose unrelated texts score higher never reach it. None: summarise "
        "every cluster, as RAPTOR does.",
    )
    search_patience: int | None = Field(
        default=5,
        ge=1,
        description="Stop trying more components after this many without a better criterion (None: try all).",
    )

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "RaptorSummaryNodeBuilder"

    # ------------------------------------------------------------------ learned attributes

    @property
    def bic_(self) -> list[np.ndarray]:
        """Per level, the BIC of the mixtures with 1, 2, ... components (empty where no mixture was fitted)."""
        return self._get("bic")

    @property
    def aic_(self) -> list[np.ndarray]:
        """Per level, the AIC of the same mixtures."""
        return self._get("aic")

    @property
    def n_components_(self) -> list[int]:
        """Per level, the number of mixture components chosen (before large clusters were split)."""
        return self._get("n_components")

    @property
    def labels_(self) -> list[np.ndarray]:
        """Per level, each input node's primary cluster (the order of :attr:`level_node_ids_`)."""
        return self._get("labels")

    @property
    def level_node_ids_(self) -> list[list[str]]:
        """Per level, the ids of the nodes that were clustered."""
        return self._get("level_node_ids")

    @property
    def reducers_(self) -> list[str]:
        """Per level, the reduction used: 'umap', 'pca' or 'none' (too few nodes to reduce)."""
        return self._get("reducers")

    @property
    def unrelated_clusters_(self) -> list[list[tuple[str, ...]]]:
        """Per clustering (as :attr:`level_node_ids_`), the clusters left without a summary because their members
        share no topic (the node ids; see ``min_cluster_similarity``). A member may still get a parent through
        another cluster (soft membership) or at a higher level."""
        return self._get("unrelated_clusters")

    @property
    def n_levels_(self) -> int:
        """Levels of summaries built."""
        return self._get("n_levels")

    # ------------------------------------------------------------------ building

    def _settings(self) -> ClusterSettings:
        return ClusterSettings(
            reduction_dim=self.reduction_dim,
            n_neighbors=self.n_neighbors,
            metric=self.metric,
            reducer=self.reducer,
            max_clusters=self.max_clusters,
            criterion=self.criterion,
            threshold=self.membership_threshold,
            max_cluster_size=self.max_cluster_size,
            search_patience=self.search_patience,
            random_state=self.random_state,
        )

    def _fresh_learned(self) -> dict[str, Any]:
        keys = ("bic", "aic", "n_components", "labels", "level_node_ids", "reducers", "unrelated_clusters")
        return {**{key: [] for key in keys}, "n_levels": 0}

    async def _abuild(
        self, leaves: list[BaseNode], summarizer: Any, embed_model: BaseEmbedding | None, show_progress: bool
    ) -> list[TextNode]:
        settings = self._settings()
        current: list[BaseNode] = list(leaves)
        made: list[TextNode] = []
        for level in range(1, self.max_levels + 1):
            if len(current) < 2:
                break
            vectors = np.asarray([n.embedding for n in current], dtype=np.float64)
            result = soft_cluster(vectors, settings)
            self._learned["bic"].append(result.bic)
            self._learned["aic"].append(result.aic)
            self._learned["n_components"].append(result.n_components)
            self._learned["labels"].append(np.asarray(result.primary))
            self._learned["level_node_ids"].append([n.node_id for n in current])
            self._learned["reducers"].append(result.reducer)
            self._learned["n_clusters"].append(len(result.clusters))
            jobs: list[list[int]] = []
            unrelated: list[list[int]] = []
            for members in (m for m in result.clusters if len(m) >= 2):
                (jobs if self._related(vectors[members]) else unrelated).append(members)
            self._learned["unrelated_clusters"].append([tuple(current[i].node_id for i in m) for m in unrelated])
            if not jobs:
                break
            parents = await self._asummarize_clusters(
                [[current[i] for i in members] for members in jobs], level, summarizer, embed_model, show_progress
            )
            self._learned["n_levels"] = level
            parent_of_cluster = {tuple(m): p for m, p in zip(jobs, parents) if p is not None}
            self._prefer_primary(current, result, parent_of_cluster)
            new = [p for p in parents if p is not None]
            made.extend(new)
            covered = {i for m, p in zip(jobs, parents) if p is not None for i in m}
            current = new + [n for i, n in enumerate(current) if i not in covered]  # uncovered nodes go up as they are
            if not new:
                break
        return made

    def _related(self, vectors: np.ndarray) -> bool:
        floor = self.min_cluster_similarity
        return floor is None or mean_pairwise_cosine(vectors) >= floor

    @staticmethod
    def _prefer_primary(current: list[BaseNode], result: Any, parent_of_cluster: dict[tuple, TextNode]) -> None:
        """Make each child's PARENT its most probable cluster's summary (and list that one first)."""
        for i, node in enumerate(current):
            parent = parent_of_cluster.get(tuple(result.clusters[result.primary[i]]))
            ids = list(node.metadata.get(PARENT_IDS_KEY) or [])
            if parent is None or parent.node_id not in ids or ids[0] == parent.node_id:
                continue
            node.relationships[NodeRelationship.PARENT] = related_info(parent)
            ids.remove(parent.node_id)
            node.metadata[PARENT_IDS_KEY] = [parent.node_id, *ids]
