"""Population Stability Index (numeric and categorical).

What it measures: sum over buckets of (cur - ref) * ln(cur / ref) on proportions — a
symmetric KL divergence. Rules of thumb: < 0.1 stable, 0.1–0.25 moderate, > 0.25 large.
Default threshold: 0.1.
Edge cases: proportions are smoothed with EPSILON (1e-4) and renormalised, so empty buckets
give a large but finite value. Null by multinomial bootstrap from the reference.
On binned (not discrete) numeric columns the buckets are 8 merged quantile groups
(`monitor.detectors._coarse`): value and null alike.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._base import Counts, Detector, NullScaling, Pair, register, smoothed
from monitor.detectors._coarse import coarse_counts


def _psi(ref: Counts, cur: Counts, pair: Pair) -> NDArray[np.float64]:
    p, q = smoothed(ref), smoothed(cur)
    return np.asarray(((q - p) * np.log(q / p)).sum(axis=1), dtype=np.float64)


DETECTOR = register(
    Detector(
        name="psi",
        kinds=frozenset({"numeric", "categorical"}),
        default_threshold=0.1,
        statistic=_psi,
        description="population stability index",
        buckets=coarse_counts,
        null_scaling=NullScaling(power=2),
    )
)
