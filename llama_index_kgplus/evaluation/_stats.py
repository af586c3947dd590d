"""Mean with a t-distribution confidence interval."""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean_ci(
    values: Sequence[float], confidence: float = 0.95, bounds: tuple[float, float] | None = None
) -> tuple[float, float, float]:
    """``(mean, low, high)``; with one value the interval is that value.

    ``bounds`` clips the interval to the range the values can take (scores in [0, 1], differences in [-1, 1]):
    with few questions the t interval otherwise reaches impossible values.
    """
    from scipy import stats

    n = len(values)
    if n == 0:
        raise ValueError("no values")
    mean = sum(values) / n
    if n == 1:
        return mean, mean, mean
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = stats.t.ppf((1 + confidence) / 2, n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return mean, low, high
