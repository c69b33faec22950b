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
    strategy: Literal["constant", "reference"] = Field(
        default="constant",
        description=(
            "`constant`: each detector's default bound; `reference`: derived from "
            "the baseline's reference chunks."
        ),
    )
    k: float = Field(
        default=3.0,
        ge=0,
        allow_inf_nan=False,
        description="`reference`: bound = mean + k·std of the chunk statistics.",
    )
    floor_fraction: float = Field(
        default=0.5,
        ge=0,
        allow_inf_nan=False,
        description="`reference`: never below this fraction of the constant bound.",
    )


class DriftConfig(StrictModel):
    """How windows are compared with the baseline."""

    baseline: str = Field(
        default="default", description="Name of the baseline windows are compared with."
    )
    # Empty: the documented default per column kind (wasserstein numeric, jensen_shannon
    # categorical) plus missing_rate where nulls occur.
    methods: list[DriftMethod] = Field(
        default_factory=list,
        description=(
            "Drift methods; empty: wasserstein (numeric), jensen_shannon "
            "(categorical, discrete numeric), plus missing_rate where nulls "
            "occur."
        ),
    )
    alpha: float = Field(
        default=0.01,
        gt=0,
        lt=1,
        description=(
            "Benjamini-Hochberg false-discovery level over all results of one evaluation."
        ),
    )
    # Exact-count columns (categorical, boolean, discrete numeric) also drift when the
    # chi-square homogeneity test of their buckets gives p below this, whatever the effect size.
    evidence_alpha: float = Field(
        default=1e-6,
        gt=0,
        lt=1,
        description=(
            "Exact-count columns also drift when the chi-square p-value is below "
            "this, whatever the effect size."
        ),
    )
    min_n: int = Field(
        default=30, ge=1, description="Fewer values than this on either side: `insufficient_data`."
    )
    thresholds: ThresholdsConfig = Field(
        default_factory=ThresholdsConfig, description="Where drift bounds come from."
    )


class OutcomeConfig(StrictModel):
    """Per-slice outcome metrics from joined predictions and labels."""

    task: Literal["classification", "regression", "multiclass"] = Field(
        default="classification",
        description=(
            "What the model predicts: `classification` (binary), `regression` or `multiclass`."
        ),
    )
    metrics: list[OutcomeMetric] = Field(
        default_factory=list, description="Outcome metrics to compute; empty: the task's defaults."
    )
    classes: list[str] = Field(
        default_factory=list,
        description=(
            "Multiclass: the classes a label may name (others are dead letters, "
            "`invalid_label`); empty: any class name or integer."
        ),
    )
    # Baseline value per metric (e.g. from validation); no value means the metric is reported
    # without a verdict.
    baseline: dict[OutcomeMetric, Annotated[float, Field(allow_inf_nan=False)]] = Field(
        default_factory=dict,
        description=(
            "Reference value per metric; a metric without one is reported without a verdict."
        ),
    )
    tolerance: float = Field(
        default=0.02,
        ge=0,
        allow_inf_nan=False,
        description="`degraded` when the whole 95% interval lies beyond baseline ∓ tolerance.",
    )
    # One evaluation (a version's window: every metric of every slice) is one family of tests.
    correction: Literal["family", "per_result"] = Field(
        default="family",
        description=(
            "`family`: any result of one evaluation (every metric × slice with a baseline) is "
            "falsely `degraded` at most 2.5% of the time (Holm: stricter levels per interval); "
            "`per_result`: each result's 95% interval alone (2.5% per result)."
        ),
    )
    threshold: float = Field(
        default=0.5,
        allow_inf_nan=False,
        description="Score at or above which a binary prediction is the positive class.",
    )
    min_support: int = Field(
        default=30, ge=1, description="Fewer supporting rows than this: `insufficient_data`."
    )
    # The prediction output used as the score when predictions are objects or lists.
    output: str | None = Field(
        default=None,
        description=(
            "The prediction output used as the score when predictions are objects or lists."
        ),
    )
