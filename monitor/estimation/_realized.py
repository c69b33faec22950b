"""Realized metrics where labels are known: binary ones with the outcome metrics' own functions;
multiclass accuracy and macro precision, recall, F1 and specificity from a confusion matrix over
the baseline's classes (the file-based run and the daemon both call `realized_macro`), and in the
daemon the macro one-vs-rest ROC-AUC from an outcome summary's per-class score histograms
(`summary_macro_auc`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from monitor.estimation._calibration import Array
from monitor.outcomes import MulticlassSummary, confusion_metrics
from monitor.outcomes import metrics as m
from monitor.outcomes.from_summary import binned_roc_auc
from monitor.outcomes.summary import ClassificationSummary

# estimated multiclass metric -> its name among `confusion_metrics`
MACRO_NAMES = {"accuracy": "accuracy", "precision": "macro_precision",
               "recall": "macro_recall", "f1": "macro_f1"}  # fmt: skip
# every multiclass metric `realized_macro` computes from a confusion matrix
MACRO_METRICS = (*MACRO_NAMES, "specificity")


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


def realized_macro(metric: str, matrix: Array) -> float | None:
    """Multiclass `metric` (one of MACRO_METRICS) of `matrix[true, predicted]` over the
    baseline's classes, as NannyML averages and as the estimates are: a class neither true
    nor predicted in the rows counts 0 in the macro precision, recall and F1 (and 1 in the
    specificity: it has no false positives). None when the matrix is empty."""
    if matrix.sum() == 0:
        return None
    if metric == "specificity":
        return macro_specificity(matrix)
    return float(confusion_metrics(matrix)[MACRO_NAMES[metric]])


def macro_specificity(matrix: Array) -> float:
    """Mean over classes k of TN_k / (TN_k + FP_k), one-vs-rest: TN_k = total − true_k −
    predicted_k + diag_k, FP_k = predicted_k − diag_k; a class that every row truly is has no
    negatives and counts 0 (as a zero denominator does in the estimate)."""
    diag, true, predicted = np.diagonal(matrix), matrix.sum(axis=1), matrix.sum(axis=0)
    fp = predicted - diag
    tn = matrix.sum() - true - fp
    spec = np.divide(tn, tn + fp, out=np.zeros_like(diag), where=tn + fp > 0)
    return float(spec.mean())


def class_matrix(true: NDArray[np.intp], predicted: NDArray[np.intp], k: int) -> Array:
    """Counts[true, predicted] of class indexes in 0..k-1 (K × K)."""
    cells = np.bincount(true * k + predicted, minlength=k * k)
    return cells.reshape(k, k).astype(np.float64)


def summary_matrix(classes: Sequence[str], cells: Mapping[tuple[str, str], int]) -> Array:
    """The confusion matrix over the baseline's `classes` of an outcome summary's (true,
    predicted) cells; a pair naming another class is left out (the baseline cannot score it,
    and the file-based run refuses it)."""
    index = {c: i for i, c in enumerate(classes)}
    out = np.zeros((len(classes), len(classes)), dtype=np.float64)
    for (t, p), count in cells.items():
        if t in index and p in index:
            out[index[t], index[p]] += count
    return out


def class_histograms(
    classes: Sequence[str], summary: MulticlassSummary
) -> list[ClassificationSummary] | None:
    """Per baseline class, its one-vs-rest score histogram as a binary summary's bins; None
    when the summary holds no score of any of the classes (label-only predictions)."""
    if not any(c in summary.scores for c in classes):
        return None
    return [ClassificationSummary(0.5, count=summary.class_counts(c)) for c in classes]


def summary_macro_auc(classes: Sequence[str], summary: MulticlassSummary) -> float | None:
    """Macro one-vs-rest ROC-AUC over the baseline's `classes` of a summary's class score
    histograms (each within its `roc_auc_error`; a class without positives or negatives 0.5,
    as `realized_multiclass`); None when it holds no scores of them."""
    histograms = class_histograms(classes, summary)
    if histograms is None:
        return None
    return float(np.mean([binned_roc_auc(h) for h in histograms]))
