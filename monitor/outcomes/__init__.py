"""Per-slice outcome metrics (classification and regression) with intervals and verdicts."""

from __future__ import annotations

from monitor.outcomes._base import (
    DEFAULT_METRICS,
    METRICS,
    Metric,
    OutcomeResult,
    OutcomeStatus,
    get_metric,
)
from monitor.outcomes._evaluate import MIN_SUPPORT, evaluate_outcomes
from monitor.outcomes._family import FAMILY_ALPHA
from monitor.outcomes._intervals import bootstrap, difference, rescale, wilson
from monitor.outcomes._multiclass import MulticlassSummary, class_of, confusion_metrics

__all__ = [
    "DEFAULT_METRICS",
    "FAMILY_ALPHA",
    "METRICS",
    "MIN_SUPPORT",
    "Metric",
    "MulticlassSummary",
    "OutcomeResult",
    "OutcomeStatus",
    "bootstrap",
    "class_of",
    "confusion_metrics",
    "difference",
    "evaluate_outcomes",
    "get_metric",
    "rescale",
    "wilson",
]
