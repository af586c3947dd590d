"""Personalized PageRank over a sparse, weighted, undirected graph, in process (scipy.sparse and numpy, no
Python loop over edges).

A walk starts at a seed (chosen in proportion to the seed weights), follows an edge with probability
``damping`` (in proportion to the edge weights) and jumps back to a seed otherwise; a node without edges
sends the walk back to the seeds. The score of a node is the share of time the walk spends there.

Two ways to compute it:

- ``method="power"``: power iteration over the whole graph until the scores change by less than ``tol``.
  ``max_steps`` bounds the walk: after ``k`` iterations started from the seeds, only nodes within ``k`` edges
  of a seed have a score, which is the personalized PageRank truncated to walks of at most ``k`` edges.
- ``method="push"``: the local push of Andersen, Chung and Lang (2006). Each node keeps the share of the walk
  it has not yet passed on; a node whose share exceeds ``tol`` times its edge count keeps ``1 - damping`` of it
  as score and spreads the rest to its neighbours. Only the part of the graph the walk reaches in earnest is
  touched, so the spreading's cost follows that part, not the graph's size: a hub is spread only once enough
  reaches it. Every score is at most the exact
  one, and short of it by less than about ``tol`` times the node's edge count.

Example:

```python
transition = transition_matrix(adjacency)              # row-stochastic, from symmetric weights
scores = personalized_pagerank(transition, seeds, damping=0.5, method="push")
```
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.sparse as sp

# gathering a frontier's edges by index costs about this many times a sparse product's work per edge
_SPARSE_COST = 8


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
    method: Literal["power", "push"] = "power",
) -> np.ndarray:
    """Scores of every node, for the seed weights ``seeds`` (non-negative, not all zero). The power iteration's
    scores sum to 1; the push's to 1 less what it left unspread.

    ``transposed`` (``transition.T`` in CSR form) and ``dangling`` (the mask of nodes without edges) may be
    precomputed once for many queries. ``max_steps`` needs ``method="power"``.
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping!r}.")
    if max_steps is not None and max_steps < 0:
        raise ValueError(f"max_steps must be None or >= 0, got {max_steps!r}.")
    if method not in ("power", "push"):
        raise ValueError(f"method must be 'power' or 'push', got {method!r}.")
    if method == "push" and max_steps is not None:
        raise ValueError("max_steps bounds the power iteration; use method='power' with it.")
    seeds = np.asarray(seeds, dtype=np.float64)
    total = seeds.sum()
    if seeds.ndim != 1 or seeds.shape[0] != transition.shape[0] or (seeds < 0).any() or total <= 0:
        raise ValueError("seeds must be a non-negative vector over the graph's nodes with a positive sum.")
    restart = seeds / total
    if dangling is None:
        dangling = np.asarray(transition.sum(axis=1)).ravel() == 0
    if method == "push":
        return _push(sp.csr_matrix(transition), transposed, restart, damping, tol, max_iter, dangling)
    back = sp.csr_matrix(transition.T) if transposed is None else transposed
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


def _push(
    transition: sp.csr_matrix,
    back: sp.csr_matrix | None,
    restart: np.ndarray,
    damping: float,
    tol: float,
    rounds: int,
    dangling: np.ndarray,
) -> np.ndarray:
    """Local push, every node over its threshold at once per round (so numpy does the work of a round); ``back``,
    the transposed transition matrix, is made on the first wide round when not given."""
    indptr, indices, weights = transition.indptr, transition.indices, transition.data
    degree = np.diff(indptr)
    threshold = tol * np.maximum(degree, 1)
    scores = np.zeros_like(restart)
    residual = restart.copy()
    slot = np.empty(restart.shape[0], dtype=np.int64)
    seeds = np.flatnonzero(restart)
    frontier = seeds[residual[seeds] > threshold[seeds]]
    for _ in range(rounds):
        if frontier.size == 0:
            break
        share = residual[frontier]
        residual[frontier] = 0.0
        scores[frontier] += (1.0 - damping) * share
        stranded = damping * share[dangling[frontier]].sum()  # a node without edges sends the walk to the seeds
        counts = degree[frontier]
        n_edges = int(counts.sum())
        if n_edges * _SPARSE_COST > transition.nnz:  # a frontier this wide: one product over the whole graph
            pushed = np.zeros_like(residual)
            pushed[frontier] = damping * share
            if back is None:
                back = sp.csr_matrix(transition.T)
            residual += back @ pushed
            residual[seeds] += stranded * restart[seeds]
            frontier = np.flatnonzero(residual > threshold)
            continue
        # the positions of the frontier's edges: each node's run indptr[u]..indptr[u+1], concatenated
        firsts = np.repeat(indptr[frontier] - (np.cumsum(counts) - counts), counts)
        edges = firsts + np.arange(n_edges)
        targets = indices[edges]
        np.add.at(residual, targets, weights[edges] * np.repeat(damping * share, counts))
        if stranded > 0:
            residual[seeds] += stranded * restart[seeds]
            targets = np.concatenate([targets, seeds])
        order = np.arange(targets.size)
        slot[targets] = order  # the last write wins: keeps one position of each touched node
        touched = targets[slot[targets] == order]
        frontier = touched[residual[touched] > threshold[touched]]
    return scores
