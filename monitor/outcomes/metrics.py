"""Outcome metrics as pure functions of (y_true, y_score) — binary classification —,
(y_true, y_pred) — regression — or (true classes, predicted classes) — multiclass. Each returns
a float; callers check support first."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from monitor.outcomes._ece import ece as bias_corrected_ece
from monitor.outcomes._multiclass import confusion_metrics

Array = NDArray[np.float64]
CLIP = 1e-15  # log loss clips probabilities to [CLIP, 1 - CLIP]


def _labels(score: Array, threshold: float) -> Array:
    return (score >= threshold).astype(np.float64)


def accuracy(y: Array, score: Array, threshold: float = 0.5) -> float:
    return float((y == _labels(score, threshold)).mean())


def precision(y: Array, score: Array, threshold: float = 0.5) -> float:
    pred = _labels(score, threshold)
    positives = pred.sum()
    return float((y * pred).sum() / positives) if positives else 0.0


def recall(y: Array, score: Array, threshold: float = 0.5) -> float:
    actual = y.sum()
    return float((y * _labels(score, threshold)).sum() / actual) if actual else 0.0


def f1(y: Array, score: Array, threshold: float = 0.5) -> float:
    pred = _labels(score, threshold)
    tp = (y * pred).sum()
    denom = pred.sum() + y.sum()
    return float(2 * tp / denom) if denom else 0.0


def specificity(y: Array, score: Array, threshold: float = 0.5) -> float:
    """True negatives over actual negatives; 0 when there are none. Not in the outcome
    registry (summaries do not compute it yet): estimation's realized specificity."""
    pred = _labels(score, threshold)
    negatives = y == 0
    return specificity_of(int((pred[negatives] == 0).sum()), int((pred[negatives] == 1).sum()))


def specificity_of(tn: int, fp: int) -> float:
    """Specificity from confusion counts: tn / (tn + fp), 0 without negatives."""
    return tn / (tn + fp) if tn + fp else 0.0


def roc_auc(y: Array, score: Array, threshold: float = 0.5) -> float:
    """Mann–Whitney AUC with average ranks for ties; 0.5 if one class is absent."""
    from scipy.stats import rankdata

    n_pos = y.sum()
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.5
    ranks = rankdata(score)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def log_loss(y: Array, score: Array, threshold: float = 0.5) -> float:
    p = np.clip(score, CLIP, 1 - CLIP)
    return float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())


def ece(y: Array, score: Array, threshold: float = 0.5) -> float:
    """Expected calibration error over 10 equal-width probability bins, bias-corrected (the
    plug-in minus its estimated sampling bias, at least 0; `monitor.outcomes._ece`)."""
    return bias_corrected_ece(y, score)


def mae(y: Array, pred: Array, threshold: float = 0.5) -> float:
    return float(np.abs(y - pred).mean())


def rmse(y: Array, pred: Array, threshold: float = 0.5) -> float:
    return float(np.sqrt(np.square(y - pred).mean()))


def mape(y: Array, pred: Array, threshold: float = 0.5) -> float:
    """Mean absolute percentage error over rows with y != 0 (others cannot be expressed)."""
    keep = y != 0
    if not keep.any():
        return 0.0
    return float(np.abs((y[keep] - pred[keep]) / y[keep]).mean())


def _multiclass(name: str) -> Callable[[Array, Array, float], float]:
    def fn(y: Array, pred: Array, threshold: float = 0.5) -> float:
        classes, codes = np.unique(np.concatenate([y, pred]).astype(str), return_inverse=True)
        k = classes.size
        cells = np.bincount(codes[: y.size] * k + codes[y.size :], minlength=k * k)
        return float(confusion_metrics(cells.reshape(k, k).astype(np.float64))[name])

    fn.__name__ = name
    return fn


multiclass_accuracy = _multiclass("accuracy")
macro_precision = _multiclass("macro_precision")
macro_recall = _multiclass("macro_recall")
macro_f1 = _multiclass("macro_f1")
