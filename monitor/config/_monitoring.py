"""Per-model settings of window evaluation: drift methods and outcome metrics."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from monitor.config._base import StrictModel
from monitor.config._names import DriftMethod, OutcomeMetric


class ThresholdsConfig(StrictModel):
    """Where drift bounds come from: constant per detector, or the reference's variability."""

    # "constant": each detector's default bound. "reference": mean + k·std of the statistic
    # between the baseline's reference chunks and the whole reference, never below
    # floor_fraction × the constant bound; constant where the baseline stored no variability.
    strategy: Literal["constant", "reference"] = "constant"
    k: float = Field(default=3.0, ge=0, allow_inf_nan=False)
    floor_fraction: float = Field(default=0.5, ge=0, allow_inf_nan=False)


class DriftConfig(StrictModel):
    """How windows are compared with the baseline."""

    baseline: str = "default"
    # Empty: the documented default per column kind (wasserstein numeric, jensen_shannon
    # categorical) plus missing_rate where nulls occur.
    methods: list[DriftMethod] = Field(default_factory=list)
    alpha: float = Field(default=0.01, gt=0, lt=1)
    # Exact-count columns (categorical, boolean, discrete numeric) also drift when the
    # chi-square homogeneity test of their buckets gives p below this, whatever the effect size.
    evidence_alpha: float = Field(default=1e-6, gt=0, lt=1)
    min_n: int = Field(default=30, ge=1)
    thresholds: ThresholdsConfig = Field(default_factory=ThresholdsConfig)


class OutcomeConfig(StrictModel):
    """Per-slice outcome metrics from joined predictions and labels."""

    task: Literal["classification", "regression", "multiclass"] = "classification"
    metrics: list[OutcomeMetric] = Field(default_factory=list)
    # Baseline value per metric (e.g. from validation); no value means the metric is reported
    # without a verdict.
    baseline: dict[OutcomeMetric, Annotated[float, Field(allow_inf_nan=False)]] = Field(
        default_factory=dict
    )
    tolerance: float = Field(default=0.02, ge=0, allow_inf_nan=False)
    threshold: float = Field(default=0.5, allow_inf_nan=False)
    min_support: int = Field(default=30, ge=1)
    # The prediction output used as the score when predictions are objects or lists.
    output: str | None = None
