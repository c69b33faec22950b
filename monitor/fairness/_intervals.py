"""Intervals of fairness metrics: Newcombe's for a difference of proportions, Katz's log
interval for a ratio, and the Bonferroni z that makes several of them simultaneous."""

from __future__ import annotations

import math
from statistics import NormalDist

from monitor.outcomes import difference, wilson


def simultaneous_z(alpha: float, comparisons: int) -> float:
    """The two-sided z of `comparisons` intervals that all cover with probability 1 - alpha."""
    return NormalDist().inv_cdf(1 - alpha / (2 * max(comparisons, 1)))


def newcombe(x1: float, n1: int, x2: float, n2: int, z: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval of p1 - p2 (method 10: from each side's Wilson interval)."""
    return difference(x1 / n1, wilson(x1, n1, z), x2 / n2, wilson(x2, n2, z))


def katz(x1: float, n1: float, x2: float, n2: float, z: float) -> tuple[float, float]:
    """Katz's log interval of p1 / p2; a side with no successes gets 0.5 added to its count
    and its rows (the usual correction, so the interval stays finite)."""
    if x1 == 0 or x2 == 0:
        x1, n1, x2, n2 = x1 + 0.5, n1 + 0.5, x2 + 0.5, n2 + 0.5
    log_r = math.log((x1 / n1) / (x2 / n2))
    se = math.sqrt(max(1 / x1 - 1 / n1 + 1 / x2 - 1 / n2, 0.0))
    return math.exp(log_r - z * se), math.exp(log_r + z * se)


def absolute(low: float, high: float) -> tuple[float, float]:
    """The interval of |d| from an interval of d."""
    if low <= 0 <= high:
        return 0.0, max(-low, high)
    return min(abs(low), abs(high)), max(abs(low), abs(high))


def folded(low: float, high: float) -> tuple[float, float]:
    """The interval of min(r, 1/r) (a ratio read either way round) from an interval of r."""
    if low <= 1 <= high:
        return min(low, 1 / high), 1.0
    if high < 1:
        return low, high
    return 1 / high, 1 / low
