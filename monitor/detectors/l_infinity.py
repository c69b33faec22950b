"""L-infinity distance: the largest change of any single bucket's proportion.

What it measures: max over buckets of |cur - ref| proportions — "which category moved most".
Default threshold: 0.1 (ten percentage points).
Edge cases: no smoothing; finite with empty buckets. Null by multinomial bootstrap.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._base import Counts, Detector, NullScaling, Pair, proportions, register


def _linf(ref: Counts, cur: Counts, pair: Pair) -> NDArray[np.float64]:
    return np.asarray(np.abs(proportions(ref) - proportions(cur)).max(axis=1), dtype=np.float64)


DETECTOR = register(
    Detector(
        name="l_infinity",
        kinds=frozenset({"numeric", "categorical"}),
        default_threshold=0.1,
        statistic=_linf,
        description="largest absolute change of one bucket's proportion",
        null_scaling=NullScaling(power=1),
    )
)
