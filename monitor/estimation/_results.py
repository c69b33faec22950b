"""The frozen result row of an estimate and the reference-derived lower thresholds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np

from monitor.estimation._calibration import Array

EstimateStatus = Literal["ok", "degraded", "drift", "insufficient_data"]
THRESHOLD_K = 3.0  # NannyML's thresholds: mean ± 3 std over reference chunks (ours: `band_k`)
# Losses (regression): higher is worse. Their bounds carry an upper threshold too, kept in the
# same metric -> value mapping as the lower ones under `high_key(metric)` (so stored baselines'
# thresholds keep one shape); above it is `degraded`, below the lower one `drift` (the loss
# left the reference band on the good side: the data changed, the model did not get worse).
LOSS_METRICS = ("mae", "mse", "rmse")


def high_key(metric: str) -> str:
    """The key of a metric's upper threshold in a bounds mapping."""
    return f"{metric}.high"


REFERENCE_CHUNKS = 10  # without a chunk size, the reference is cut into this many chunks


@dataclass(frozen=True)
class Chunk:
    """Rows [start, end) of the data (by position), numbered from 0; with `--period`, the
    start of the time window the rows fall in."""

    index: int
    start: int
    end: int
    period_start: datetime | None = None


@dataclass(frozen=True)
class EstimationResult:
    """One metric for one (chunk, slice): estimate and band, the realized value where labels
    are known, the reference-derived lower threshold and the verdict."""

    metric: str
    slice: dict[str, str] | None
    chunk: Chunk | None
    estimated: float | None
    ci_low: float | None
    ci_high: float | None
    realized: float | None
    threshold_low: float | None
    n: int
    status: EstimateStatus
    threshold_high: float | None = None  # losses only (regression)


def band_k(chunks: int) -> float:
    """How many (population) std of `chunks` reference values a new chunk's value may lie from
    their mean before it is out of band: the normal two-sided tail at THRESHOLD_K (0.27%) as a
    Student-t prediction interval, ``t(m - 1) quantile * sqrt((m + 1) / (m - 1))``; 4.53 at
    10 chunks, 3.22 at 50 and THRESHOLD_K in the limit."""
    from scipy.stats import norm, t

    m = chunks
    tail = float(norm.sf(THRESHOLD_K))
    return float(t.isf(tail, m - 1)) * math.sqrt((m + 1) / (m - 1))


def prediction_band(values: Array) -> tuple[float | None, float | None]:
    """NannyML's mean ± 3 std of a metric over reference chunks, widened to a prediction
    interval for one more chunk: mean ± `band_k` population std of the finite values, the low
    end clipped at 0; (None, None) with fewer than two."""
    finite = values[np.isfinite(values)]
    if finite.size < 2:
        return None, None
    centre, spread = float(finite.mean()), band_k(finite.size) * float(finite.std())
    return max(0.0, centre - spread), centre + spread


def lower_threshold(values: Array) -> float | None:
    """The low end of `prediction_band` (`degraded` under it; a loss: `drift`)."""
    return prediction_band(values)[0]


def upper_threshold(values: Array) -> float | None:
    """The high end of `prediction_band` (a loss: `degraded` above it)."""
    return prediction_band(values)[1]


def chunk_bounds(n: int, size: int | None, count: int = REFERENCE_CHUNKS) -> list[Chunk]:
    """Contiguous chunks of `size` rows (the last one may be short), or `count` equal ones."""
    if n == 0:
        return []
    if size is None:
        size = max(1, -(-n // count))
    return [Chunk(i, s, min(s + size, n)) for i, s in enumerate(range(0, n, size))]


def period_chunks(window_starts: Sequence[datetime]) -> list[Chunk]:
    """One chunk per run of equal window starts (rows sorted by time)."""
    out: list[Chunk] = []
    begin = 0
    for i in range(1, len(window_starts) + 1):
        if i == len(window_starts) or window_starts[i] != window_starts[begin]:
            out.append(Chunk(len(out), begin, i, window_starts[begin]))
            begin = i
    return out
