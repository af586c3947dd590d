"""Personalized PageRank over a sparse, weighted, undirected graph, in process (scipy.sparse, no Python loop
over edges).

A walk starts at a seed (chosen in proportion to the seed weights), follows an edge with probability
``damping`` (in proportion to the edge weights) and jumps back to a seed otherwise; a node without edges
sends the walk back to the seeds. The score of a node is the share of time the walk spends there.
``max_steps`` bounds the walk: after ``k`` power iterations started from the seeds, only nodes within ``k``
edges of a seed have a score, which is the personalized PageRank truncated to walks of at most ``k`` edges.

Example:

```python
transition = transition_matrix(adjacency)              # row-stochastic, from symmetric weights
scores = personalized_pagerank(transition, seeds, damping=0.5)
```
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def transition_matrix(adjacency: sp.spmatrix) -> sp.csr_matrix:
    """Row-normalise non-negative edge weights: row ``i`` holds the probabilities of stepping from ``i``."""
    adjacency = sp.csr_matrix(adjacency, dtype=np.float64)
    out_weight = np.asarray(adjacency.sum(axis=1)).ravel()
    inverse = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=out_weight > 0)
    return sp.csr_matrix(sp.diags(inverse) @ adjacency)


def personalized_pagerank(
    transition: sp.spmatrix,
    seeds: np.ndarray,
    *,
    damping: float = 0.5,
    max_steps: int | None = None,
    tol: float = 1e-6,
    max_iter: int = 200,
    transposed: sp.spmatrix | None = None,
    dangling: np.ndarray | None = None,
) -> np.ndarray:
    """Scores of every node (they sum to 1), for the seed weights ``seeds`` (non-negative, not all zero). The
    iteration stops when the scores change by less than ``tol`` (L1), or after ``max_steps``.

    ``transposed`` (``transition.T`` in CSR form) and ``dangling`` (the mask of nodes without edges) may be
    precomputed once for many queries.
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping!r}.")
    if max_steps is not None and max_steps < 0:
        raise ValueError(f"max_steps must be None or >= 0, got {max_steps!r}.")
    seeds = np.asarray(seeds, dtype=np.float64)
    total = seeds.sum()
    if seeds.ndim != 1 or seeds.shape[0] != transition.shape[0] or (seeds < 0).any() or total <= 0:
        raise ValueError("seeds must be a non-negative vector over the graph's nodes with a positive sum.")
    restart = seeds / total
    back = sp.csr_matrix(transition.T) if transposed is None else transposed
    if dangling is None:
        dangling = np.asarray(transition.sum(axis=1)).ravel() == 0
    scores = restart.copy()
    steps = max_iter if max_steps is None else min(max_steps, max_iter)
    for _ in range(steps):
        walked = back @ scores
        updated = (1.0 - damping) * restart + damping * (walked + scores[dangling].sum() * restart)
        change = np.abs(updated - scores).sum()
        scores = updated
        if max_steps is None and change < tol:
            break
    return scores
