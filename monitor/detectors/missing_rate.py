"""Change in the share of missing values (None, NaN, ±inf) of a column.

What it measures: |current missing rate - reference missing rate|, in proportion points.
Default threshold: 0.05 (five percentage points).
p-value: two-proportion z-test with the pooled rate (analytic); Fisher's exact test when an
expected count is below 5, where the normal approximation calls rare events significant.
Edge cases: sample size is rows including nulls; a pooled rate of 0 or 1 gives p = 1.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._base import Counts, Detector, Pair, proportions, register
from monitor.profiles.kinds import Profile


def _buckets(profile: Profile) -> NDArray[np.float64]:
    return np.array([profile.n, profile.null_count], dtype=np.float64)


def _rows(profile: Profile) -> int:
    return profile.n + profile.null_count


def _diff(ref: Counts, cur: Counts, pair: Pair) -> NDArray[np.float64]:
    return np.abs(proportions(cur)[:, 1] - proportions(ref)[:, 1])


def _p_value(value: float, pair: Pair) -> float:
    from scipy.special import ndtr

    nr, nc = _rows(pair.reference), _rows(pair.current)
    pooled = (pair.reference.null_count + pair.current.null_count) / (nr + nc)
    if min(nr, nc) * min(pooled, 1 - pooled) < 5:
        return _fisher(pair)
    se = math.sqrt(pooled * (1 - pooled) * (1 / nr + 1 / nc))
    if se == 0:
        return 1.0
    return float(2 * ndtr(-value / se))


DETECTOR = register(
    Detector(
        name="missing_rate",
        kinds=frozenset({"numeric", "categorical"}),
        default_threshold=0.05,
        statistic=_diff,
        p_value=_p_value,
        buckets=_buckets,
        size=_rows,
        description="absolute change of the missing-value rate",
        evidence=False,
    )
)


def _fisher(pair: Pair) -> float:
    from scipy.stats import fisher_exact

    table = [
        [pair.reference.null_count, pair.reference.n],
        [pair.current.null_count, pair.current.n],
    ]
    return float(fisher_exact(table).pvalue)
