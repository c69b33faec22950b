"""The loop every estimator shares: per slice (overall first) and chunk, estimate the metrics
from the rows, add realized values where labels are known, compare with the lower threshold
drawn from the realized metric over the same slice's reference chunks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from monitor.detectors import MIN_N
from monitor.estimation._metrics import METRICS, Estimate
from monitor.estimation._results import (
    LOSS_METRICS,
    Chunk,
    EstimateStatus,
    EstimationResult,
    chunk_bounds,
    high_key,
    lower_threshold,
    upper_threshold,
)
from monitor.profiles.slicekeys import NULL_VALUE, key_of, value_text

Rows = NDArray[np.intp]
Slices = Mapping[str, NDArray[np.object_]]


@dataclass(frozen=True)
class EstimateOptions:
    """Chunk size (None: the whole current data is one chunk), metrics, minimum rows and,
    optionally, fixed overall thresholds."""

    chunk_size: int | None = None
    metrics: tuple[str, ...] = METRICS
    min_n: int = MIN_N
    # overall lower thresholds known in advance (a baseline's); None: from reference chunks
    thresholds: Mapping[str, float | None] | None = None
    # chunks by time period (current, reference) instead of by chunk_size
    periods: tuple[tuple[Chunk, ...], tuple[Chunk, ...]] | None = None
    # lower thresholds per slice key known in advance (a baseline's); a slice without its
    # own takes `thresholds`
    slice_thresholds: Mapping[str, Mapping[str, float | None]] | None = None


@dataclass(frozen=True)
class Side:
    """One dataset as the loop sees it: its size, slice values, the estimates for some of its
    rows and the realized metric on some of its rows (None: no labels)."""

    n: int
    slices: Slices
    estimate: Callable[[Rows], list[Estimate]]
    realized: Callable[[str, Rows], float | None]


def run(reference: Side, current: Side, how: EstimateOptions) -> list[EstimationResult]:
    """Results per (slice, chunk, metric): overall first, then each current slice value."""
    chunks: list[Chunk | None] = (
        list(how.periods[0]) if how.periods is not None
        else list(chunk_bounds(current.n, how.chunk_size)) if how.chunk_size else [None]
    )  # fmt: skip
    out: list[EstimationResult] = []
    overall: dict[str, float | None] = {}
    for slice_, ref_rows, cur_rows in _groups(reference, current):
        fixed = _fixed(how, slice_)
        bounds = dict(fixed) if fixed is not None else _thresholds(reference, ref_rows, how)
        if slice_ is None:
            overall = bounds
        else:  # too few reference rows of the slice for a bound of its own: the overall one
            bounds = {m: overall.get(m) if v is None else v for m, v in bounds.items()}
        for chunk in chunks:
            rows = cur_rows if chunk is None else _within(cur_rows, chunk)
            out.extend(_one(current, rows, slice_, chunk, bounds, how))
    return out


def _fixed(
    how: EstimateOptions, slice_: dict[str, str] | None
) -> Mapping[str, float | None] | None:
    """The thresholds known in advance for a slice (None: draw them from the reference)."""
    if slice_ is None:
        return how.thresholds
    if how.slice_thresholds is None:
        return None
    return how.slice_thresholds.get(key_of(slice_), how.thresholds)


def _one(
    data: Side, rows: Rows, slice_: dict[str, str] | None, chunk: Chunk | None,
    bounds: dict[str, float | None], how: EstimateOptions,
) -> list[EstimationResult]:  # fmt: skip
    return judge(data.estimate(rows), lambda metric: data.realized(metric, rows), slice_, chunk,
                 bounds, how.min_n)  # fmt: skip


def judge(
    estimates: list[Estimate], realized: Callable[[str], float | None],
    slice_: dict[str, str] | None, chunk: Chunk | None, bounds: Mapping[str, float | None],
    min_n: int,
) -> list[EstimationResult]:  # fmt: skip
    """The result rows of `estimates`: `insufficient_data` under `min_n` rows, `degraded` below
    the metric's lower bound (a loss: above its upper bound, `drift` below its lower one), else
    `ok`; each with its realized value where known."""
    out = []
    for e in estimates:
        real = realized(e.metric)
        low, high = bounds.get(e.metric), bounds.get(high_key(e.metric))
        if e.n < min_n:
            out.append(EstimationResult(e.metric, slice_, chunk, None, None, None, real, low,
                                        e.n, "insufficient_data", high))  # fmt: skip
            continue
        below = low is not None and e.estimated < low
        status: EstimateStatus = "degraded" if below else "ok"
        if e.metric in LOSS_METRICS:
            above = high is not None and e.estimated > high
            status = "degraded" if above else "drift" if below else "ok"
        out.append(EstimationResult(e.metric, slice_, chunk, e.estimated, e.ci_low, e.ci_high,
                                    real, low, e.n, status, high))  # fmt: skip
    return out


def _thresholds(ref: Side, rows: Rows, how: EstimateOptions) -> dict[str, float | None]:
    """Per metric, the lower bound from the realized metric over the reference's chunks."""
    values: dict[str, list[float]] = {name: [] for name in how.metrics}
    parts = (
        [_within(rows, c) for c in how.periods[1]] if how.periods is not None
        else [rows[c.start : c.end] for c in chunk_bounds(rows.size, how.chunk_size)]
    )  # fmt: skip
    for part in parts:
        if part.size < how.min_n:
            continue
        for name in how.metrics:
            got = ref.realized(name, part)
            if got is None:
                return {}
            values[name].append(got)
    return reference_bounds(values)


def reference_bounds(values: Mapping[str, list[float]]) -> dict[str, float | None]:
    """Per metric, its lower threshold over the reference chunks' values (a loss also its upper
    one, under `high_key`)."""
    out: dict[str, float | None] = {}
    for name, v in values.items():
        array = np.asarray(v, dtype=np.float64)
        out[name] = lower_threshold(array)
        if name in LOSS_METRICS:
            out[high_key(name)] = upper_threshold(array)
    return out


def _within(rows: Rows, chunk: Chunk) -> Rows:
    return rows[(rows >= chunk.start) & (rows < chunk.end)]


def _groups(reference: Side, current: Side) -> list[tuple[dict[str, str] | None, Rows, Rows]]:
    """(slice, reference rows, current rows): overall, then each current slice value."""
    groups: list[tuple[dict[str, str] | None, Rows, Rows]] = [
        (None, np.arange(reference.n), np.arange(current.n))
    ]
    for column, values in current.slices.items():
        cur_text = _texts(values)
        ref_values = reference.slices.get(column)
        ref_text = (
            _texts(ref_values)
            if ref_values is not None
            else np.full(reference.n, None, dtype=object)
        )
        groups.extend(
            ({column: v}, np.flatnonzero(ref_text == v), np.flatnonzero(cur_text == v))
            for v in sorted(set(cur_text.tolist()))
        )
    return groups


def _texts(values: NDArray[np.object_]) -> NDArray[np.object_]:
    """Slice values as slice-key text (the one text form every slice uses)."""
    return np.asarray([value_text(v) or NULL_VALUE for v in values], dtype=object)
