"""Task-aware comparison: what an output means (class scores, a binary score, labels, a value).

The kind is detected from the reference output's shape and values:
  - `scores`: float [N, K], K >= 2 (probabilities or logits); a flip is a changed top-1 class.
  - `binary`: float [N] or [N, 1] with every value in [0, 1]; a flip is a changed decision at the
    policy's decision threshold.
  - `labels`: integer [N] or [N, 1]; a flip is a changed label.
  - `regression`: any other float [N] or [N, 1]; no flips.
  - `tensor`: anything else; compared elementwise only.
Task metrics with labels: accuracy (all classifiers) and ROC-AUC (binary and 2-class scores),
MAE and RMSE (regression). A *drop* is in points: (reference - candidate) * 100 for accuracy and
ROC-AUC, and the percentage increase of the error for MAE and RMSE.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from guards._stats import exact_interval

Side = Literal["reference", "candidate"]
Kind = Literal["scores", "binary", "labels", "regression", "tensor"]
HIGHER_IS_BETTER = {"accuracy": True, "roc_auc": True, "mae": False, "rmse": False}


@dataclass(frozen=True)
class Task:
    """One output interpreted for its task, with per-row predictions of both models."""

    output: str
    kind: Kind
    reference: np.ndarray
    candidate: np.ndarray
    decision_threshold: float = 0.5
    # Whole-set predictions and sort orders, reused by every slice.
    _cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    @property
    def metrics(self) -> tuple[str, ...]:
        if self.kind == "regression":
            return ("mae", "rmse")
        if self.kind == "binary" or (self.kind == "scores" and self.reference.shape[1] == 2):
            return ("accuracy", "roc_auc")
        return ("accuracy",) if self.kind in ("scores", "labels") else ()

    def predicted(self, which: np.ndarray) -> np.ndarray | None:
        """Predicted class per row (None for regression and tensors)."""
        if self.kind == "scores":
            return np.asarray(np.argmax(which, axis=1))
        if self.kind == "binary":
            return (which.reshape(-1) >= self.decision_threshold).astype(np.int64)
        return np.asarray(which.reshape(-1)) if self.kind == "labels" else None

    def flips(self) -> np.ndarray | None:
        """Per row: did the candidate's decision differ from the reference's."""
        ref, cand = self.predicted(self.reference), self.predicted(self.candidate)
        return None if ref is None or cand is None else ref != cand

    def topk_overlap(self, k: int) -> np.ndarray | None:
        """Per row share of the reference's top-k classes the candidate also ranks top-k."""
        if self.kind != "scores" or self.reference.shape[1] <= 2:
            return None
        k = min(k, self.reference.shape[1] - 1)
        top_r = np.argsort(-self.reference, axis=1)[:, :k]
        top_c = np.argsort(-self.candidate, axis=1)[:, :k]
        hits = (top_r[:, :, None] == top_c[:, None, :]).any(axis=2).sum(axis=1)
        return np.asarray(hits / k, dtype=np.float64)

    def positive_score(self, which: np.ndarray) -> np.ndarray:
        return which[:, 1] if self.kind == "scores" else which.reshape(-1)

    def correct(self, side: Side, labels: np.ndarray) -> np.ndarray:
        """Per row: is this model's prediction the label (computed once per side)."""
        key = f"correct_{side}"
        if key not in self._cache:
            pred = self.predicted(getattr(self, side))
            assert pred is not None
            self._cache[key] = pred == labels
        return self._cache[key]

    def membership(self, rows: np.ndarray) -> np.ndarray:
        """A boolean mask of `rows`; the last one is kept, as both models ask for the same."""
        last = self._cache.get("member_rows")
        if last is not rows:
            mask = np.zeros(len(self.reference), dtype=bool)
            mask[rows] = True
            self._cache["member_rows"], self._cache["member"] = rows, mask
        return self._cache["member"]

    def score_order(self, side: Side) -> np.ndarray:
        """Row indices sorted by this model's positive score (computed once per side)."""
        key = f"order_{side}"
        if key not in self._cache:
            score = self.positive_score(getattr(self, side))
            self._cache[key] = np.argsort(score, kind="stable")
        return self._cache[key]


def detect_task(
    output: str, reference: np.ndarray, candidate: np.ndarray, threshold: float
) -> Task:
    """Interpret an output from its shape and values (see the module docstring)."""
    return Task(output, _kind(reference), reference, candidate, threshold)


def _kind(ref: np.ndarray) -> Kind:
    column = ref.ndim == 1 or (ref.ndim == 2 and ref.shape[1] == 1)
    if np.issubdtype(ref.dtype, np.integer) and column:
        return "labels"
    if not np.issubdtype(ref.dtype, np.floating):
        return "tensor"
    if ref.ndim == 2 and ref.shape[1] >= 2:
        return "scores"
    if column:
        finite = ref[np.isfinite(ref)]
        in_unit = finite.size > 0 and finite.min() >= 0.0 and finite.max() <= 1.0
        return "binary" if in_unit else "regression"
    return "tensor"


@dataclass(frozen=True)
class MetricDrop:
    """A task metric for both models on some rows, its drop, and a lower bound of the drop."""

    metric: str
    reference: float
    candidate: float
    drop: float
    drop_lower_bound: float | None


def metric_drop(
    task: Task, metric: str, labels: np.ndarray, rows: np.ndarray, confidence: float
) -> MetricDrop:
    """The drop of `metric` from reference to candidate on `rows` (indices)."""
    ref = _METRICS[metric](task, "reference", rows, labels)
    cand = _METRICS[metric](task, "candidate", rows, labels)
    if HIGHER_IS_BETTER[metric]:
        drop = (ref - cand) * 100.0
    else:
        drop = (cand - ref) / ref * 100.0 if ref > 0 else (math.inf if cand > ref else 0.0)
    bound = _accuracy_drop_bound(task, rows, labels, confidence) if metric == "accuracy" else None
    return MetricDrop(metric, ref, cand, drop, bound)


def _accuracy(task: Task, side: Side, rows: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(task.correct(side, labels)[rows])) if len(rows) else math.nan


def _roc_auc(task: Task, side: Side, rows: np.ndarray, labels: np.ndarray) -> float:
    """Mann-Whitney AUC; the slice's rows are taken in the globally sorted order (no re-sort)."""
    order = task.score_order(side)
    order = order[task.membership(rows)[order]]
    pos = labels[order] == 1
    n1, n0 = int(pos.sum()), int(len(order) - pos.sum())
    if n1 == 0 or n0 == 0:
        return math.nan
    ranks = _average_ranks_sorted(task.positive_score(getattr(task, side))[order])
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def _average_ranks_sorted(values: np.ndarray) -> np.ndarray:
    """1-based ranks of ascending `values`, ties sharing their average rank."""
    n = len(values)
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    counts = np.diff(np.r_[starts, n])
    return np.repeat(starts + (counts + 1) / 2.0, counts)


def _mae(task: Task, side: Side, rows: np.ndarray, labels: np.ndarray) -> float:
    out = getattr(task, side).reshape(-1)[rows]
    return float(np.mean(np.abs(out - labels[rows]))) if len(rows) else math.nan


def _rmse(task: Task, side: Side, rows: np.ndarray, labels: np.ndarray) -> float:
    out = getattr(task, side).reshape(-1)[rows]
    return float(np.sqrt(np.mean((out - labels[rows]) ** 2))) if len(rows) else math.nan


_METRICS: dict[str, Callable[[Task, Side, np.ndarray, np.ndarray], float]] = {
    "accuracy": _accuracy,
    "roc_auc": _roc_auc,
    "mae": _mae,
    "rmse": _rmse,
}


def _accuracy_drop_bound(
    task: Task, rows: np.ndarray, labels: np.ndarray, confidence: float
) -> float:
    """Paired lower bound of the accuracy drop, in points (Bonferroni over two Wilson bounds).

    Only rows where exactly one model is right move accuracy: `lost` (reference right,
    candidate wrong) and `won`; drop = (lost - won) / n.
    """
    ref_ok = task.correct("reference", labels)[rows]
    cand_ok = task.correct("candidate", labels)[rows]
    n = len(rows)
    each = 1.0 - (1.0 - confidence) / 2.0
    lost_lo, _ = exact_interval(int(np.sum(ref_ok & ~cand_ok)), n, each)
    _, won_hi = exact_interval(int(np.sum(~ref_ok & cand_ok)), n, each)
    return (lost_lo - won_hi) * 100.0
