"""Realized binary metrics where labels are known (the outcome metrics' own functions)."""

from __future__ import annotations

import numpy as np

from monitor.estimation._calibration import Array
from monitor.outcomes import metrics as m


def realized(metric: str, labels: Array, scores: Array, predicted: Array) -> float | None:
    """`metric` over the rows with a finite label, score and prediction; None when none."""
    known = np.isfinite(labels) & np.isfinite(scores) & np.isfinite(predicted)
    y, s, p = labels[known], scores[known], predicted[known]
    if y.size == 0:
        return None
    if metric == "roc_auc":
        return m.roc_auc(y, s)
    fn = {"accuracy": m.accuracy, "precision": m.precision, "recall": m.recall, "f1": m.f1,
          "specificity": m.specificity}  # fmt: skip
    return fn[metric](y, p, 0.5)
