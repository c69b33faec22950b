"""Two-sample Kolmogorov–Smirnov statistic on the binned CDFs (numeric columns).

What it measures: the largest gap between the reference and current CDFs, evaluated at the
reference's quantile edges (so it is at most the exact KS statistic: conservative).
Default threshold: 0.1. p-value: asymptotic, ``kstwo.sf(D, round(n_r n_c / (n_r + n_c)))``
as scipy's ``ks_2samp(method="asymp")``.
Edge cases: empty buckets add nothing to the CDF; no smoothing.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._base import Counts, Detector, Pair, proportions, register


def _ks(ref: Counts, cur: Counts, pair: Pair) -> NDArray[np.float64]:
    gap = np.cumsum(proportions(ref) - proportions(cur), axis=1)
    return np.asarray(np.abs(gap).max(axis=1), dtype=np.float64)


def _p_value(value: float, pair: Pair) -> float:
    from scipy.stats import kstwo

    nr, nc = pair.reference.n, pair.current.n
    en = max(round(nr * nc / (nr + nc)), 1)
    return float(np.clip(kstwo.sf(value, en), 0.0, 1.0))


DETECTOR = register(
    Detector(
        name="ks",
        kinds=frozenset({"numeric"}),
        default_threshold=0.1,
        statistic=_ks,
        p_value=_p_value,
        description="Kolmogorov-Smirnov statistic on binned CDFs",
    )
)
