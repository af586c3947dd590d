"""Reciprocal rank fusion (Cormack et al., 2009) of several ranked retrieval results.

A node's fused score is the sum over the lists it appears in of ``1 / (k + rank)``; ties keep the order of first
appearance (the first list wins). The constant ``k = 60`` is the paper's.

Example:

```python
fused = reciprocal_rank_fusion([original_hits, rewritten_hits], top_n=5)
```
"""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.schema import NodeWithScore

DEFAULT_RRF_K = 60


def reciprocal_rank_fusion(
    result_lists: Sequence[Sequence[NodeWithScore]], *, k: int = DEFAULT_RRF_K, top_n: int | None = None
) -> list[NodeWithScore]:
    """Merge ranked lists by reciprocal rank; the returned ``score`` is the fused score."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    scores: dict[str, float] = {}
    nodes: dict[str, NodeWithScore] = {}
    for results in result_lists:
        for rank, hit in enumerate(results, 1):
            node_id = hit.node.node_id
            scores[node_id] = scores.get(node_id, 0.0) + 1.0 / (k + rank)
            nodes.setdefault(node_id, hit)
    ranked = sorted(scores, key=lambda node_id: -scores[node_id])  # sorted() is stable: ties keep first appearance
    if top_n is not None:
        ranked = ranked[:top_n]
    return [NodeWithScore(node=nodes[node_id].node, score=scores[node_id]) for node_id in ranked]
