"""Scheduled weak-segment searches: a check reads a window's rows from a source and searches.

The daemon keeps no raw feature rows of its own (`labeled_predictions`, kept only with
`collect.keep_joined_rows`, holds a joined prediction's label, prediction and slice values,
not its features), so a check reads its rows like a skew check does: a Parquet file or
directory, or a SQL query on a database whose URL an environment variable holds.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator, model_validator

from monitor.config._base import StrictModel
from monitor.config._durations import Duration
from monitor.config.watch import FeatureSourceConfig, _printable

SegmentMode = Literal["labels", "estimated", "drift"]
SegmentMetric = Literal["error_rate", "accuracy", "absolute_error", "log_loss"]


class SegmentCheckConfig(StrictModel):
    """A weak-segment search the daemon runs on schedule over rows read from `current`.

    `labels`: `current` has the label and prediction columns. `estimated`: `reference` has
    labels and scores (the CBPE calibration is fitted on it), `current` scores only. `drift`:
    segments whose share of the rows moved from `reference` to `current`. A segment also found
    by the check's previous run is reported as persisting, otherwise as new.
    """

    name: str = Field(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="The check's name (a label of its signals and gauges).",
    )
    model: str = Field(min_length=1, max_length=200, description="A configured model's name.")
    mode: SegmentMode = Field(
        default="labels",
        description="`labels` (errors), `estimated` (expected errors, CBPE) or `drift` (share).",
    )
    current: FeatureSourceConfig = Field(description="The rows searched (the current window).")
    reference: FeatureSourceConfig | None = Field(
        default=None,
        description=(
            "Labelled reference rows (`estimated`) or the baseline's rows (`drift`); in every "
            "mode numeric features are binned on its quantiles (optional for `labels`)."
        ),
    )
    label: str | None = Field(default=None, min_length=1, description="The label column.")
    prediction: str | None = Field(
        default=None,
        min_length=1,
        description="The prediction column (the positive class's score for `estimated`).",
    )
    features: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="Features searched; empty: every column but the label and prediction.",
    )
    metric: SegmentMetric = Field(default="error_rate", description="`labels`: the row's loss.")
    threshold: float = Field(
        default=0.5, description="`estimated`: a score at or above this predicts positive."
    )
    max_predicates: int = Field(default=3, ge=1, le=5, description="Most predicates a segment has.")
    min_support: int = Field(default=30, ge=1, description="Fewest rows in a segment.")
    min_share: float = Field(default=0.01, ge=0, lt=1, description="Smallest share of the rows.")
    bins: int = Field(default=10, ge=2, le=100, description="Quantile bins of a numeric feature.")
    alpha: float = Field(
        default=0.05, gt=0, lt=1, description="False-discovery rate (BH over every slice tested)."
    )
    top: int = Field(default=10, ge=1, le=50, description="Most segments reported per run.")
    interval: Duration = Field(
        default=timedelta(days=1), description="How often the check runs (`1d`)."
    )

    _names = field_validator("model", "label", "prediction")(_printable)

    @field_validator("interval")
    @classmethod
    def _at_least_a_second(cls, value: timedelta) -> timedelta:
        if value.total_seconds() < 1:
            raise ValueError("must be at least 1 second")
        return value

    @model_validator(mode="after")
    def _mode_inputs(self) -> SegmentCheckConfig:
        needs = {"labels": ("label", "prediction"),
                 "estimated": ("reference", "label", "prediction"),
                 "drift": ("reference",)}[self.mode]  # fmt: skip
        missing = [n for n in needs if getattr(self, n) is None]
        if missing:
            raise ValueError(f"mode {self.mode} needs {', '.join(missing)}")
        return self
