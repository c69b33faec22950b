"""Score bins of the outcome summaries: `BINS` equal-width bins on [0, 1], `PER_ECE_BIN` inside
each calibration (ECE) bin. One binning for the binary classification summary and the
multiclass summary's class scores, so both get their ROC-AUC from the same histogram code."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

ECE_BINS = 10  # calibration bins of `metrics.ece`
PER_ECE_BIN = 100
BINS = ECE_BINS * PER_ECE_BIN


def score_bins(score: NDArray[np.float64]) -> NDArray[np.intp]:
    """Fine bin of each score, nested inside the calibration (ECE) bin `metrics.ece` uses."""
    coarse = np.minimum((score * ECE_BINS).astype(np.intp), ECE_BINS - 1)
    fine = np.floor((score * ECE_BINS - coarse) * PER_ECE_BIN).astype(np.intp)
    return coarse * PER_ECE_BIN + np.clip(fine, 0, PER_ECE_BIN - 1)
