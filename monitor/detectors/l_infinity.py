"""L-infinity distance: the largest change of any single bucket's proportion.

What it measures: max over buckets of |cur - ref| proportions — "which category moved most".
Default threshold: 0.1 (ten percentage points).
Edge cases: no smoothing; finite with empty buckets. Null by multinomial bootstrap.
p-value: on categorical columns the tested statistic counts each category's change as it is
(the reported value's terms) and puts the change of the pooled buckets, ``other`` (the values
beyond the top K) and ``unseen``, in units of a typical bucket's sampling noise: a pool
holding a share ``p > 1/k`` of the rows (``k`` buckets the reference fills) counts
``|change| * sqrt(f (1 - f) / (p (1 - p)))``, ``f = 1/k``. Unscaled, on high-cardinality
columns under no change the max was nearly always the noise of ``other`` (a third of the rows
or more), which hid every category's change (power 0.19–0.63 against NannyML's 0.41–0.81 over
1,000 values, bench/calibration_peers.py). A bulk move into ``other`` or a new value (merged
into it for the test) is many of its sampling sds, so it still counts. Categories are not
scaled: scaling every bucket above 1/k, as this test first did, made the few largest
categories equally noisy and the max of them all a multiple comparison, and lost to NannyML's
plain max (0.32 / 0.75 / 0.92 against 0.50 / 0.83 / 0.93 on 1,000 Zipf values at 100 / 1,000
/ 10,000 rows; 1,500 / 600 / 200 windows); a change confined to small categories beside a
dominant one is then the dominant one's noise to beat, as in NannyML's (``chi2`` weighs every
category). Numeric columns are unchanged. The reported value is the plain largest change.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._base import Counts, Detector, NullScaling, Pair, proportions, register


def _linf(ref: Counts, cur: Counts, pair: Pair) -> NDArray[np.float64]:
    diff = np.abs(proportions(ref) - proportions(cur)) * _weights(pair)
    return np.asarray(diff.max(axis=1), dtype=np.float64)


def _weights(pair: Pair) -> NDArray[np.float64]:
    """Per bucket, 1, but for the pools (``other``, ``unseen``: a categorical profile's last
    two buckets) the sampling sd of a 1/k share over the pool's own where it holds more."""
    ref = pair.reference
    weights = np.ones(ref.counts.size)
    shares = ref.counts / max(int(ref.counts.sum()), 1)
    seen = shares[shares > 0]
    if ref.kind != "categorical" or seen.size < 2:
        return weights
    floor = 1.0 / seen.size
    pools = np.maximum(shares[-2:], floor)
    weights[-2:] = np.sqrt(floor * (1 - floor) / (pools * (1 - pools)))
    return weights


def _observed(pair: Pair) -> float:
    ref, cur = pair.reference.counts[None, :], pair.current.counts[None, :]
    return float(
        np.abs(proportions(ref.astype(np.float64)) - proportions(cur.astype(np.float64))).max()
    )


DETECTOR = register(
    Detector(
        name="l_infinity",
        kinds=frozenset({"numeric", "categorical"}),
        default_threshold=0.1,
        statistic=_linf,
        observed=_observed,
        description="largest absolute change of one bucket's proportion",
        null_scaling=NullScaling(power=1),
    )
)
