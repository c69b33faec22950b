"""Jensen–Shannon distance between bucket distributions (numeric and categorical).

What it measures: sqrt of the JS divergence (natural log) between reference and current
bucket proportions; 0 for identical, at most sqrt(ln 2) ≈ 0.83. Same definition as
``scipy.spatial.distance.jensenshannon`` and Evidently's ``jensenshannon`` test.
Default threshold: 0.1.
Edge cases: no smoothing needed (0·log 0 = 0), finite with empty buckets.
p-value: on exact-count columns (categorical, discrete numeric) the chi-square homogeneity test
of the buckets, sparse buckets pooled (`evidence.homogeneity_p`): it resolves the tiny p-values
the evidence rule needs, which 300 bootstrap draws cannot. On binned numeric columns the null
is a multinomial bootstrap from the reference. Either way sparse high-cardinality columns in
small windows, whose distance is large by sampling alone, are not called drift.
On binned (not discrete) numeric columns the buckets are 8 merged quantile groups
(`monitor.detectors._coarse`): value and null alike.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._base import Counts, Detector, NullScaling, Pair, proportions, register
from monitor.detectors._coarse import coarse_counts
from monitor.detectors._evidence import exact_counts, profile_homogeneity_p


def _kl_to(p: Counts, m: Counts) -> NDArray[np.float64]:
    ratio = np.divide(p, m, out=np.ones_like(p), where=p > 0)
    return np.asarray((p * np.log(ratio)).sum(axis=1), dtype=np.float64)


def js_distance(ref: Counts, cur: Counts, pair: Pair | None = None) -> NDArray[np.float64]:
    """Batched JS distance between rows of counts."""
    p, q = proportions(ref), proportions(cur)
    m = (p + q) / 2
    div = (_kl_to(p, m) + _kl_to(q, m)) / 2
    return np.sqrt(np.maximum(div, 0.0))


def _p_value(value: float, pair: Pair) -> float | None:
    if not exact_counts(pair.reference):
        return None
    return profile_homogeneity_p(pair.reference, pair.current)


DETECTOR = register(
    Detector(
        name="jensen_shannon",
        kinds=frozenset({"numeric", "categorical"}),
        default_threshold=0.1,
        statistic=js_distance,
        p_value=_p_value,
        description="Jensen-Shannon distance (natural log)",
        buckets=coarse_counts,
        null_scaling=NullScaling(power=1),
    )
)
