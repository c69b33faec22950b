"""Per-slice outcome metrics with intervals, compared with baseline values and tolerances."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.errors import InputError
from monitor.outcomes._base import (
    DEFAULT_METRICS,
    Array,
    Metric,
    OutcomeResult,
    Task,
    get_metric,
)
from monitor.outcomes._family import FAMILY_ALPHA, Correction, decide, status_of
from monitor.outcomes._intervals import bootstrap, wilson
from monitor.outcomes._multiclass import class_of

MIN_SUPPORT = 30
Rows = NDArray[np.intp]


def evaluate_outcomes(
    y_true: Any,
    y_score: Any,
    task: Task = "classification",
    slices: Mapping[str, Any] | None = None,
    metrics: Sequence[str] | None = None,
    baseline: Mapping[str, float] | None = None,
    tolerance: Mapping[str, float] | float = 0.0,
    threshold: float = 0.5,
    min_support: int = MIN_SUPPORT,
    correction: Correction = "family",
) -> list[OutcomeResult]:
    """Each metric overall, then per value of each slice column.

    Classification is binary: ``y_true`` in {0, 1}, ``y_score`` the positive-class probability
    (labels are ``score >= threshold``); multiclass takes class labels (or probability maps) on
    both sides (see `multiclass.class_of`). Status ``degraded`` needs the value worse than
    ``baseline - tolerance`` (``+`` for lower-is-better metrics) with its whole 95% interval
    beyond that level, so a small noisy slice is not called degraded; fewer than `min_support`
    supporting rows give ``insufficient_data``. ``correction``: ``family`` tests the intervals
    at stricter levels so that any result of the call is falsely ``degraded`` at most 2.5% of
    the time (Holm, `_family`); ``per_result`` each at 95% (2.5% per result).
    """
    y, s = _arrays(y_true, y_score, task)
    chosen = [get_metric(n) for n in metrics or DEFAULT_METRICS[task]]
    for metric in chosen:
        if not metric.accepts(task):
            raise InputError(f"metric '{metric.name}' is for {metric.task}, not {task}")
    chosen = [metric.for_task(task) for metric in chosen]
    groups: list[tuple[dict[str, str] | None, Rows]] = [(None, np.arange(y.size))]
    groups += _slice_groups(slices or {}, y.size)
    out = []
    for slice_, rows in groups:
        for metric in chosen:
            base = (baseline or {}).get(metric.name)
            tol = tolerance if isinstance(tolerance, float | int) else tolerance.get(metric.name)
            out.append(_one(metric, y[rows], s[rows], slice_, base, tol, threshold, min_support))
    return decide(out, correction)


def _arrays(y_true: Any, y_score: Any, task: Task) -> tuple[Array, Array]:
    if task == "multiclass":
        y, s = _classes(y_true, "y_true"), _classes(y_score, "predictions")
        if y.size != s.size:
            raise InputError(f"y_true has {y.size} rows but predictions have {s.size}")
        return y, s
    y = np.asarray(y_true, dtype=np.float64).reshape(-1)
    s = np.asarray(y_score, dtype=np.float64).reshape(-1)
    if y.size != s.size:
        raise InputError(f"y_true has {y.size} rows but predictions have {s.size}")
    if not (np.isfinite(y).all() and np.isfinite(s).all()):
        raise InputError("labels and predictions must be finite (no nulls)")
    if task == "classification":
        if not np.isin(y, (0.0, 1.0)).all():
            raise InputError("classification labels must be 0 or 1")
        if ((s < 0) | (s > 1)).any():
            raise InputError("classification scores must be probabilities in [0, 1]")
    return y, s


def _classes(values: Any, name: str) -> Array:
    out = [class_of(v) for v in values]
    if any(c is None for c in out):
        raise InputError(f"multiclass {name} must be class labels or probability maps")
    return np.asarray(out, dtype=object)


def _slice_groups(slices: Mapping[str, Any], n: int) -> list[tuple[dict[str, str], Rows]]:
    import pandas as pd

    groups: list[tuple[dict[str, str], Rows]] = []
    for column, values in slices.items():
        codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
        if codes.size != n:
            raise InputError(f"slice column '{column}' has {codes.size} rows, expected {n}")
        labels = [str(u) for u in uniques]
        order = sorted(range(len(labels)), key=lambda i: labels[i])
        groups.extend(({column: labels[i]}, np.flatnonzero(codes == i)) for i in order)
    return groups


def _support(metric: Metric, y: Array, s: Array, threshold: float) -> int:
    if metric.support == "predicted_positive":
        return int((s >= threshold).sum())
    if metric.support == "actual_positive":
        return int(y.sum())
    return int(y.size)


def _one(
    metric: Metric,
    y: Array,
    s: Array,
    slice_: dict[str, str] | None,
    base: float | None,
    tol: float | None,
    threshold: float,
    min_support: int,
) -> OutcomeResult:
    n = _support(metric, y, s, threshold)
    empty = OutcomeResult(metric.name, slice_, None, None, None, base, tol, n, "insufficient_data")
    one_class = metric.name == "roc_auc" and (y.min() == y.max() if y.size else True)
    if n < min_support or one_class:
        return empty
    if metric.estimate is not None:
        value, lo, hi = metric.estimate(y, s, y.size)
    elif metric.proportion:
        value = metric.fn(y, s, threshold)
        lo, hi = wilson(value * n, n)
    else:
        value = metric.fn(y, s, threshold)
        lo, hi = bootstrap(lambda a, b: metric.fn(a, b, threshold), y, s, seed=y.size)
    status = status_of(metric, value, lo, hi, base, tol or 0.0)
    level = None if base is None else FAMILY_ALPHA
    return OutcomeResult(metric.name, slice_, value, lo, hi, base, tol, n, status, level)
