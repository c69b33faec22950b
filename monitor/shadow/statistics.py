"""Paired statistics of shadow pairs: flip-rate interval, McNemar's exact test, paired differences.

All three read counts a mergeable summary keeps (`monitor.shadow.summary`), so a day's verdict
is a merge of its windows' counts, never a rescan of events:

- the flip rate `flips / decided` with its Wilson score interval (`monitor.outcomes.wilson`);
- McNemar's exact test on the discordant correctness pairs: b (primary right, shadow wrong) and
  c (shadow right, primary wrong); under H0 b ~ Binomial(b + c, 1/2), two-sided p-value
  `min(1, 2 * P(X <= min(b, c)))`; p = 1 when there is no discordant pair;
- the paired mean difference (shadow minus primary) of per-request values d_i with a normal
  interval from their count, sum and sum of squares (the sample variance, n - 1): the accuracy
  difference (d_i in {-1, 0, 1}: sum c - b, sum of squares b + c) or the absolute-error
  difference of regression. Fewer than 2 pairs: no interval (None).
"""

from __future__ import annotations

import math
from statistics import NormalDist

from monitor.outcomes import wilson

__all__ = ["Z95", "flip_interval", "mcnemar_exact", "paired_difference"]

Z95 = NormalDist().inv_cdf(0.975)


def flip_interval(flips: int, decided: int) -> tuple[float, float, float] | None:
    """(rate, low, high) of `flips` among `decided` pairs (Wilson 95%); None without pairs."""
    if decided <= 0:
        return None
    low, high = wilson(flips, decided)
    return flips / decided, low, high


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value of `b` and `c` discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    # = scipy.stats.binom.cdf, without scipy.stats' import (collectors import this module)
    from scipy.special import bdtr

    return float(min(1.0, 2.0 * bdtr(min(b, c), n, 0.5)))


def paired_difference(
    n: int, total: float, squares: float, z: float = Z95
) -> tuple[float, float | None, float | None] | None:
    """(mean, low, high) of n paired differences from their sum and sum of squares; None
    without pairs, no interval with one."""
    if n <= 0:
        return None
    mean = total / n
    if n < 2:
        return mean, None, None
    variance = max(squares - n * mean * mean, 0.0) / (n - 1)
    half = z * math.sqrt(variance / n)
    return mean, mean - half, mean + half
