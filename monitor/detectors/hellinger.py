"""Hellinger distance between bucket distributions.

What it measures: sqrt(1/2 * sum (sqrt(p) - sqrt(q))²), in [0, 1]; 0 for identical.
Default threshold: 0.1.
Edge cases: no smoothing; finite with empty buckets. Null by multinomial bootstrap.
On binned (not discrete) numeric columns the buckets are 8 merged quantile groups
(`monitor.detectors._coarse`): value and null alike. On discrete numeric columns of k values
adjacent values are joined into at most Sturges' ceil(log2 k) + 1 runs (8 at most) of about
equal reference mass, each expecting 5 rows at the smaller sample's size (`join_values`):
value and null alike.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._base import Counts, Detector, NullScaling, Pair, proportions, register
from monitor.detectors._coarse import coarse_counts, join_values


def _hellinger(ref: Counts, cur: Counts, pair: Pair) -> NDArray[np.float64]:
    ref, cur = join_values(ref, cur, pair)
    diff = np.sqrt(proportions(ref)) - np.sqrt(proportions(cur))
    return np.asarray(np.sqrt(0.5 * np.square(diff).sum(axis=1)), dtype=np.float64)


DETECTOR = register(
    Detector(
        name="hellinger",
        kinds=frozenset({"numeric", "categorical"}),
        default_threshold=0.1,
        statistic=_hellinger,
        description="Hellinger distance",
        buckets=coarse_counts,
        null_scaling=NullScaling(power=1),
    )
)
