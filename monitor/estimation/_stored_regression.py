"""The loss models a baseline stores for a regression model (`baseline create --prediction COL
--label COL --features C,...`): fitted on the reference, kept in the baseline's settings under
"estimation" (`task: regression`, the boosters in LightGBM's text format) with each loss
metric's reference-chunk lower and upper thresholds, overall and per slice (as the
classification calibrations: `_stored.reference_thresholds`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor.errors import InputError
from monitor.estimation._regression import (
    REGRESSION_METRICS,
    RegressionModel,
    fit_regression,
    realized_loss,
)
from monitor.estimation._results import REFERENCE_CHUNKS
from monitor.estimation._stored import (
    Bounds,
    Rows,
    concat,
    floats,
    judged_by,
    reference_thresholds,
    thresholds_of,
)

TASK = "regression"


@dataclass(frozen=True)
class StoredRegression:
    """A baseline's loss models, the prediction and label columns they were fitted on, and
    the thresholds of each loss (lower, and upper under `high_key`), overall and per slice."""

    prediction: str
    label: str
    model: RegressionModel
    thresholds: Bounds
    slice_thresholds: dict[str, Bounds] = field(default_factory=dict)

    def bounds(self, key: str) -> Bounds:
        """The thresholds a slice key (OVERALL: "") is judged by: its own, else the overall."""
        return judged_by(self.thresholds, self.slice_thresholds, key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": TASK,
            "prediction": self.prediction,
            "label": self.label,
            "model": self.model.to_dict(),
            "thresholds": self.thresholds,
            "slice_thresholds": self.slice_thresholds,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> StoredRegression:
        model = RegressionModel.from_dict(data.get("model", {}), where)
        return cls(str(data.get("prediction")), str(data.get("label")), model,
                   *thresholds_of(data, where))  # fmt: skip


def categorical_features(frame: Any, features: Sequence[str]) -> list[str]:
    """The features a loss model treats as categories: those whose reference values are not
    numbers (strings, booleans, pandas categories)."""
    return [c for c in features if frame[c].dtype.kind not in "iuf"]


def check_features(features: Sequence[str], prediction: str, label: str) -> None:
    """InputError when the prediction or the label is among the loss models' features (the
    label is not there when the models are applied; the prediction is an input already)."""
    for role, column in (("prediction", prediction), ("label", label)):
        if column in features:
            raise InputError(f"--features: '{column}' is the {role} column, not a feature")


def fit_stored_regression(
    batches: Iterable[Any], features: Sequence[str], prediction: str, label: str,
    chunks: int = REFERENCE_CHUNKS, slice_by: Sequence[str] = (),
) -> StoredRegression:  # fmt: skip
    """Fit the loss models on reference `batches` (pandas frames) and draw the thresholds."""
    check_features(features, prediction, label)
    frame = concat(batches, list(dict.fromkeys([*features, prediction, label, *slice_by])))
    p, y = floats(frame, prediction), floats(frame, label)
    columns = {c: frame[c].to_numpy() for c in features}
    model = fit_regression(columns, categorical_features(frame, features), p, y)

    def real(metric: str, rows: Rows) -> float | None:
        return realized_loss(metric, y[rows], p[rows])

    overall, per_slice = reference_thresholds(frame, slice_by, real, REGRESSION_METRICS, chunks)
    return StoredRegression(prediction, label, model, overall, per_slice)
