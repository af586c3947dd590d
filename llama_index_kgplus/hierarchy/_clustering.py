"""RAPTOR's clustering: reduce the vectors (UMAP, or PCA where UMAP cannot run), soft-cluster them with a
Gaussian mixture whose size is chosen by BIC (or AIC), and re-cluster clusters that are too large.

UMAP is imported here, lazily, only when it is used. numba compiles its functions on first use (15-25 s on 2
cores); :func:`_umap` turns on numba's on-disk cache for them, so only the first process on a machine pays that.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus._vectors import unit_rows
from llama_index_kgplus.errors import KGPlusSetupError

logger = get_logger(__name__)
_MAX_DEPTH = 3


@dataclass
class ClusterResult:
    """Clusters of row indices, each row's primary cluster, and what the top-level mixture learned."""

    clusters: list[list[int]]
    primary: list[int]
    n_components: int = 1
    bic: np.ndarray = field(default_factory=lambda: np.zeros(0))
    aic: np.ndarray = field(default_factory=lambda: np.zeros(0))
    reducer: str = "none"
    reduced: np.ndarray | None = None


@dataclass(frozen=True)
class ClusterSettings:
    reduction_dim: int = 10
    n_neighbors: int | None = None
    metric: str = "cosine"
    reducer: Literal["umap", "pca"] = "umap"
    max_clusters: int = 50
    criterion: Literal["bic", "aic"] = "bic"
    threshold: float = 0.2
    max_cluster_size: int = 10
    search_patience: int | None = 5
    random_state: int = 0


def n_distinct(matrix: np.ndarray) -> int:
    """Distinct rows (to 6 decimals of the unit vectors): identical vectors count once."""
    return len(np.unique(np.round(unit_rows(matrix), 6), axis=0))


def _sklearn():
    try:
        from sklearn.decomposition import PCA
        from sklearn.mixture import GaussianMixture
    except ImportError as exc:
        raise KGPlusSetupError(
            "RAPTOR clustering needs scikit-learn: pip install 'llama-index-kgplus[raptor]'."
        ) from exc
    return PCA, GaussianMixture


@functools.cache
def _umap():
    """The ``umap`` module, with numba's on-disk cache on for its compiled functions (umap-learn does not ask
    for it, so every new process compiled them again); KGPlusSetupError if umap-learn is missing."""
    try:
        import umap
        import umap.layouts
        import umap.umap_
    except ImportError as exc:
        raise KGPlusSetupError(
            "RaptorSummaryNodeBuilder needs umap-learn (pip install 'llama-index-kgplus[raptor]'), "
            "or pass reducer='pca'."
        ) from exc
    for module in (umap.umap_, umap.layouts):
        for function in vars(module).values():
            if hasattr(function, "enable_caching") and hasattr(function, "py_func"):  # a numba dispatcher
                try:
                    function.enable_caching()
                except RuntimeError as exc:  # no writable cache folder: compile in memory, as before
                    logger.debug("numba cache off for %s: %s", function.__name__, exc)
    return umap


def reduce(matrix: np.ndarray, s: ClusterSettings) -> tuple[np.ndarray, str]:
    """UMAP to ``reduction_dim`` dimensions; PCA when asked, when there are too few rows for UMAP, or if it fails."""
    n = len(matrix)
    unit = unit_rows(matrix)
    if s.reducer == "umap" and n > s.reduction_dim + 2:
        umap = _umap()
        neighbors = s.n_neighbors or int(math.sqrt(n - 1))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reducer = umap.UMAP(
                    n_neighbors=max(2, min(neighbors, n - 1)),
                    n_components=s.reduction_dim,
                    metric=s.metric,
                    random_state=s.random_state,
                    n_jobs=1,
                )
                return np.asarray(reducer.fit_transform(unit), dtype=np.float64), "umap"
        except Exception as exc:  # UMAP's spectral step can fail on degenerate inputs: fall back, say so
            logger.warning("UMAP failed on %d vectors (%s); using PCA instead.", n, exc)
    PCA, _ = _sklearn()
    k = max(1, min(s.reduction_dim, n - 1, unit.shape[1]))
    return np.asarray(PCA(n_components=k, random_state=s.random_state).fit_transform(unit)), "pca"


def gaussian_mixture(
    points: np.ndarray, s: ClusterSettings, max_components: int
) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """Fit mixtures of 1, 2, ... components and keep the best by ``criterion``.

    The search stops at ``max_clusters``, at ``max_components``, or once the criterion has not improved for
    ``search_patience`` sizes in a row. Returns (membership probabilities, k, BICs, AICs of the sizes tried).
    """
    _, GaussianMixture = _sklearn()
    k_max = max(1, min(s.max_clusters, max_components))
    models, bics, aics = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(1, k_max + 1):
            gm = GaussianMixture(n_components=k, random_state=s.random_state, reg_covar=1e-5).fit(points)
            models.append(gm)
            bics.append(gm.bic(points))
            aics.append(gm.aic(points))
            scores = bics if s.criterion == "bic" else aics
            if s.search_patience is not None and k - 1 - int(np.argmin(scores)) >= s.search_patience:
                break
    scores = bics if s.criterion == "bic" else aics
    best = int(np.argmin(scores))
    return models[best].predict_proba(points), best + 1, np.asarray(bics), np.asarray(aics)


def soft_cluster(vectors: np.ndarray, s: ClusterSettings) -> ClusterResult:
    """Cluster the rows of ``vectors``; every row lands in one cluster at least (its primary one)."""
    matrix = np.asarray(vectors, dtype=np.float64)
    n = len(matrix)
    if n == 0:
        return ClusterResult([], [])
    result = ClusterResult([], [])
    raw = _cluster(np.arange(n), matrix, s, 0, result)
    merged: dict[tuple[int, ...], set[int]] = {}
    for members, primary in raw:
        merged.setdefault(tuple(sorted(members)), set()).update(primary)
    ordered = sorted(merged.items(), key=lambda item: (item[0][0], len(item[0])))
    result.clusters = [list(members) for members, _ in ordered]
    primary_of = [-1] * n
    for c, (_, primary) in enumerate(ordered):
        for i in primary:
            if primary_of[i] < 0:
                primary_of[i] = c
    result.primary = primary_of
    return result


def _cluster(
    idx: np.ndarray, matrix: np.ndarray, s: ClusterSettings, depth: int, record: ClusterResult
) -> list[tuple[set[int], set[int]]]:
    points = matrix[idx]
    n = len(idx)
    distinct = n_distinct(points) if n > 2 else n
    if n <= 2 or distinct < 2:
        if n > s.max_cluster_size:  # many identical vectors
            return _balanced_split(idx, set(idx.tolist()), matrix, s.max_cluster_size)
        return [(set(idx.tolist()), set(idx.tolist()))]
    reduced, used = reduce(points, s)
    probs, k, bics, aics = gaussian_mixture(reduced, s, distinct - 1)
    if depth == 0:
        record.n_components, record.bic, record.aic, record.reducer, record.reduced = k, bics, aics, used, reduced
    primary = probs.argmax(axis=1)
    out: list[tuple[set[int], set[int]]] = []
    for c in range(k):
        mask = (probs[:, c] > s.threshold) | (primary == c)
        members, prim = idx[mask], set(idx[primary == c].tolist())
        if len(members) == 0:
            continue
        if len(members) <= s.max_cluster_size:
            out.append((set(members.tolist()), prim))
        elif k == 1 or depth + 1 >= _MAX_DEPTH:
            out.extend(_balanced_split(members, prim, matrix, s.max_cluster_size))
        else:
            out.extend((m, p & prim) for m, p in _cluster(members, matrix, s, depth + 1, record))
    return out


def _balanced_split(
    members: np.ndarray, primary: set[int], matrix: np.ndarray, max_size: int
) -> list[tuple[set[int], set[int]]]:
    """Cut an oversized cluster into equal runs along its first principal direction (deterministic)."""
    unit = unit_rows(matrix[members])
    centered = unit - unit.mean(axis=0)
    _, _, vt = np.linalg.svd(centered, full_matrices=False)
    order = members[np.argsort(centered @ vt[0], kind="stable")]
    parts = np.array_split(order, math.ceil(len(members) / max_size))
    return [(set(p.tolist()), primary & set(p.tolist())) for p in parts]
