"""Per-window CBPE state: rows per (calibration bin, predicted class). Counts add, so windows,
slices and replicas merge exactly, and the expected confusion matrix follows from them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from monitor.errors import InputError
from monitor.estimation._calibration import Array, Calibration


@dataclass(frozen=True)
class ScoreCounts:
    """Rows per calibration bin, split by predicted class (column 0: negative, 1: positive),
    and the rows whose score (or given prediction) was missing or non-finite (left out of every
    estimate)."""

    counts: tuple[tuple[int, int], ...]
    missing: int = 0

    @property
    def n(self) -> int:
        return sum(a + b for a, b in self.counts)

    def array(self) -> NDArray[np.float64]:
        return np.asarray(self.counts, dtype=np.float64).reshape(-1, 2)

    def merge(self, other: ScoreCounts) -> ScoreCounts:
        """The counts of both (same calibration)."""
        if len(other.counts) != len(self.counts):
            raise InputError("score counts on different calibrations cannot be merged")
        both = self.array() + other.array()
        return ScoreCounts(_tuples(both), self.missing + other.missing)


def count_scores(
    calibration: Calibration, scores: Array, predicted: Array | None = None
) -> ScoreCounts:
    """Count `scores` into the calibration's bins; `predicted` (0/1 per row) overrides the
    threshold's decision where the model's own prediction is known."""
    finite = np.isfinite(scores)
    if predicted is not None:
        finite &= np.isfinite(np.asarray(predicted, dtype=np.float64))
    s = scores[finite]
    bins = calibration.bin_of(s)
    if predicted is None:
        pred = calibration.predicted_positive()[bins].astype(np.intp)
    else:
        pred = (np.asarray(predicted)[finite] >= 0.5).astype(np.intp)
    flat = np.bincount(bins * 2 + pred, minlength=calibration.n_bins * 2)
    return ScoreCounts(_tuples(flat.reshape(-1, 2)), int((~finite).sum()))


def empty_counts(calibration: Calibration) -> ScoreCounts:
    """No rows yet."""
    return ScoreCounts(((0, 0),) * calibration.n_bins)


def _tuples(array: NDArray[np.float64] | NDArray[np.int64]) -> tuple[tuple[int, int], ...]:
    return tuple((int(a), int(b)) for a, b in array)
