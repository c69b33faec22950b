"""CBPE for a binary classifier over data in memory: per chunk and slice, estimate each metric
from the chunk's score counts, add the realized value where labels are known and compare with
the lower threshold drawn from the reference's chunk-to-chunk variability."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from monitor.detectors import MIN_N
from monitor.errors import InputError
from monitor.estimation._calibration import Array, Calibration
from monitor.estimation._counts import count_scores
from monitor.estimation._metrics import METRICS, estimate_metrics
from monitor.estimation._realized import realized
from monitor.estimation._results import (
    Chunk,
    EstimateStatus,
    EstimationResult,
    chunk_bounds,
    lower_threshold,
)
from monitor.profiles.slicekeys import NULL_VALUE, value_text

Rows = NDArray[np.intp]


@dataclass(frozen=True)
class BinaryData:
    """Scores, 0/1 predictions and labels (NaN where unknown; None: no label column) per row,
    and the values of each slice column."""

    scores: Array
    predicted: Array
    labels: Array | None = None
    slices: Mapping[str, NDArray[np.object_]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = self.scores.size
        others = [("prediction", self.predicted), ("label", self.labels), *self.slices.items()]
        for name, values in others:
            if values is not None and len(values) != n:
                raise InputError(f"{name} has {len(values)} rows, scores have {n}")


@dataclass(frozen=True)
class EstimateOptions:
    """Chunk size (None: the whole current data is one chunk), metrics and minimum rows."""

    chunk_size: int | None = None
    metrics: tuple[str, ...] = METRICS
    min_n: int = MIN_N


def estimate_binary(
    calibration: Calibration, reference: BinaryData, current: BinaryData,
    options: EstimateOptions | None = None,
) -> list[EstimationResult]:  # fmt: skip
    """Results per (chunk, slice, metric): overall first, then each slice value."""
    how = options or EstimateOptions()
    n = current.scores.size
    chunks: list[Chunk | None] = list(chunk_bounds(n, how.chunk_size)) if how.chunk_size else [None]
    out: list[EstimationResult] = []
    for slice_, ref_rows, cur_rows in _groups(reference, current):
        bounds = _thresholds(reference, ref_rows, how)
        for chunk in chunks:
            rows = cur_rows if chunk is None else _within(cur_rows, chunk)
            out.extend(_one(calibration, current, rows, slice_, chunk, bounds, how))
    return out


def _one(
    calibration: Calibration, data: BinaryData, rows: Rows, slice_: dict[str, str] | None,
    chunk: Chunk | None, bounds: dict[str, float | None], how: EstimateOptions,
) -> list[EstimationResult]:  # fmt: skip
    counts = count_scores(calibration, data.scores[rows], data.predicted[rows])
    out = []
    for e in estimate_metrics(calibration, counts, how.metrics):
        real = _realized(e.metric, data, rows)
        low = bounds.get(e.metric)
        if counts.n < how.min_n:
            out.append(
                EstimationResult(
                    e.metric,
                    slice_,
                    chunk,
                    None,
                    None,
                    None,
                    real,
                    low,
                    counts.n,
                    "insufficient_data",
                )  # fmt: skip
            )
            continue
        status: EstimateStatus = "degraded" if low is not None and e.estimated < low else "ok"
        out.append(
            EstimationResult(
                e.metric, slice_, chunk, e.estimated, e.ci_low, e.ci_high, real, low, e.n, status
            )
        )
    return out


def _realized(metric: str, data: BinaryData, rows: Rows) -> float | None:
    if data.labels is None:
        return None
    return realized(metric, data.labels[rows], data.scores[rows], data.predicted[rows])


def _thresholds(ref: BinaryData, rows: Rows, how: EstimateOptions) -> dict[str, float | None]:
    """Per metric, the lower bound from the realized metric over the reference's chunks."""
    if ref.labels is None:
        return {}
    values: dict[str, list[float]] = {name: [] for name in how.metrics}
    for chunk in chunk_bounds(rows.size, how.chunk_size):
        part = rows[chunk.start : chunk.end]
        if part.size < how.min_n:
            continue
        for name in how.metrics:
            got = realized(name, ref.labels[part], ref.scores[part], ref.predicted[part])
            values[name].append(np.nan if got is None else got)
    return {name: lower_threshold(np.asarray(v, dtype=np.float64)) for name, v in values.items()}


def _within(rows: Rows, chunk: Chunk) -> Rows:
    return rows[(rows >= chunk.start) & (rows < chunk.end)]


def _groups(
    reference: BinaryData, current: BinaryData
) -> list[tuple[dict[str, str] | None, Rows, Rows]]:
    """(slice, reference rows, current rows): overall, then each current slice value."""
    groups: list[tuple[dict[str, str] | None, Rows, Rows]] = [
        (None, np.arange(reference.scores.size), np.arange(current.scores.size))
    ]
    for column, values in current.slices.items():
        cur_text = _texts(values)
        ref_values = reference.slices.get(column)
        ref_text = (
            _texts(ref_values)
            if ref_values is not None
            else np.full(reference.scores.size, None, dtype=object)
        )
        groups.extend(
            ({column: v}, np.flatnonzero(ref_text == v), np.flatnonzero(cur_text == v))
            for v in sorted(set(cur_text.tolist()))
        )
    return groups


def _texts(values: NDArray[np.object_]) -> NDArray[np.object_]:
    """Slice values as slice-key text (the one text form every slice uses)."""
    return np.asarray([value_text(v) or NULL_VALUE for v in values], dtype=object)
