"""CBPE for a binary classifier over data in memory (see `_run` for the per-chunk loop)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from numpy.typing import NDArray

from monitor.errors import InputError
from monitor.estimation._calibration import Array, Calibration
from monitor.estimation._counts import count_scores
from monitor.estimation._metrics import Estimate, estimate_metrics
from monitor.estimation._realized import realized
from monitor.estimation._results import EstimationResult
from monitor.estimation._run import EstimateOptions, Rows, Side, run


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


def estimate_binary(
    calibration: Calibration, reference: BinaryData, current: BinaryData,
    options: EstimateOptions | None = None,
) -> list[EstimationResult]:  # fmt: skip
    """Results per (slice, chunk, metric): overall first, then each slice value."""
    how = options or EstimateOptions()
    return run(_side(calibration, reference, how), _side(calibration, current, how), how)


def _side(calibration: Calibration, data: BinaryData, how: EstimateOptions) -> Side:
    return Side(
        data.scores.size,
        data.slices,
        partial(_estimate, calibration, data, how.metrics),
        partial(_realized, data),
    )


def _estimate(
    calibration: Calibration, data: BinaryData, metrics: tuple[str, ...], rows: Rows
) -> list[Estimate]:
    counts = count_scores(calibration, data.scores[rows], data.predicted[rows])
    return estimate_metrics(calibration, counts, metrics)


def _realized(data: BinaryData, metric: str, rows: Rows) -> float | None:
    if data.labels is None:
        return None
    return realized(metric, data.labels[rows], data.scores[rows], data.predicted[rows])
