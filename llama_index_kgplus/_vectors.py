"""The one home of vector arithmetic on embeddings: unit length and cosine similarity (zero vectors stay zero
and have similarity 0).

Example:

```python
from llama_index_kgplus._vectors import cosine, unit_rows

cosine([1, 0], [1, 1])          # 0.7071...
unit_rows(np.array([[3.0, 4.0]]))  # array([[0.6, 0.8]])
```
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "cosine",
    "mean_pairwise_cosine",
    "unit",
    "unit_rows",
]


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (rows of zeros are left as they are), in the matrix's own dtype."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms).astype(matrix.dtype, copy=False)


def unit(vector: Sequence[float] | np.ndarray) -> np.ndarray:
    """One vector scaled to length 1 (float64; a zero vector is left as it is)."""
    array = np.asarray(vector, dtype=np.float64)
    norm = np.linalg.norm(array)
    return array / norm if norm > 0 else array


def cosine(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Cosine similarity of two vectors (0.0 when either is zero)."""
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norm = float(np.linalg.norm(va) * np.linalg.norm(vb))
    return float(va @ vb / norm) if norm else 0.0


def mean_pairwise_cosine(matrix: Sequence[Sequence[float]] | np.ndarray) -> float:
    """Mean cosine similarity over all pairs of different rows (1.0 for fewer than two rows)."""
    rows = np.asarray(matrix, dtype=np.float64)
    n = len(rows)
    if n < 2:
        return 1.0
    unit = unit_rows(rows)
    total = unit.sum(axis=0)  # the sum over pairs i != j of u_i . u_j is |sum u|^2 minus each |u_i|^2
    return float((total @ total - np.einsum("ij,ij->", unit, unit)) / (n * (n - 1)))
