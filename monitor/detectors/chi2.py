"""Chi-square test of homogeneity over buckets (numeric and categorical).

What it measures: value is Cramér's V = sqrt(chi² / N) of the 2 x k table (reference and
current counts per bucket), an effect size in [0, 1]; the p-value is the chi² test's.
Default threshold: 0.1.
p-value: analytic (chi² with k-1 degrees of freedom over non-empty buckets), buckets with an
expected count under 5 pooled first because the chi² approximation is anti-conservative for
sparse cells (`evidence.homogeneity_p`, the one owner of the test); the multinomial bootstrap
from the reference when fewer than two buckets remain.
Edge cases: buckets empty on both sides are dropped; no smoothing.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._base import Counts, Detector, Pair, register
from monitor.detectors._evidence import profile_homogeneity_p


def _chi2(ref: Counts, cur: Counts) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    table = np.stack([ref, cur], axis=1)  # (m, 2, k)
    rows = table.sum(axis=2, keepdims=True)
    cols = table.sum(axis=1, keepdims=True)
    total = rows.sum(axis=1, keepdims=True)
    expected = np.divide(rows * cols, total, out=np.zeros_like(table), where=total > 0)
    terms = np.divide(
        (table - expected) ** 2, expected, out=np.zeros_like(table), where=expected > 0
    )
    return terms.sum(axis=(1, 2)), total[:, 0, 0]


def _cramers_v(ref: Counts, cur: Counts, pair: Pair) -> NDArray[np.float64]:
    stat, total = _chi2(ref, cur)
    return np.sqrt(np.divide(stat, total, out=np.zeros_like(stat), where=total > 0))


def _p_value(value: float, pair: Pair) -> float | None:
    return profile_homogeneity_p(pair.reference, pair.current)


DETECTOR = register(
    Detector(
        name="chi2",
        kinds=frozenset({"numeric", "categorical"}),
        default_threshold=0.1,
        statistic=_cramers_v,
        p_value=_p_value,
        description="chi-square homogeneity test; value is Cramer's V",
    )
)
