"""CBPE for a multiclass classifier, one-vs-rest: each class's score gets its own binned
calibration maps, and the estimates are accuracy (mean calibrated probability of the predicted
class), macro precision, recall, F1 and specificity, and macro one-vs-rest ROC-AUC (each class's
bins in its score order).

Each class k has two maps on the same bins of its score: P(y = k | s_k, predicted k), fitted on
the reference rows predicted k, and P(y = k | s_k, predicted another class), fitted on the rest;
a row's probability of k comes from the map of its side, unnormalised. The expected true
positives of k (rows predicted k) and its expected false negatives (rows predicted otherwise)
are then each a sum of the right conditional probability. NannyML's one map per class, P(y = k
| s_k) over both sides, normalised per row, is biased when the scores are miscalibrated: a bin
mixes rows where k is the argmax with rows where it is not (+0.005 accuracy for squared
Dirichlet scores; docs, Calibration). A side with fewer than `MIN_SIDE` labelled reference rows
keeps the class's one map; a calibration without the conditional maps (a baseline stored before
them) estimates as NannyML does: one map per class for both sides, rows normalised to sum to
one."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.errors import InputError
from monitor.estimation._calibration import (
    DEFAULT_BINS,
    MIN_REFERENCE,
    Array,
    Calibration,
    fit_calibration,
    refit,
)
from monitor.estimation._metrics import Estimate, band, soft_auc
from monitor.estimation._realized import class_matrix, realized_macro
from monitor.estimation._results import EstimationResult
from monitor.estimation._run import EstimateOptions, Rows, Side, run
from monitor.outcomes import class_of
from monitor.outcomes import metrics as m
from monitor.profiles import value_text

MULTICLASS_METRICS = ("roc_auc", "accuracy", "precision", "recall", "f1", "specificity")
MIN_SIDE = MIN_REFERENCE  # fewer reference rows on one side of a class: its one map serves there


@dataclass(frozen=True)
class MulticlassData:
    """Per row: one score per class (columns in `classes` order), the predicted class index,
    the true class index (-1 where unknown; None: no label column) and the slice values."""

    scores: NDArray[np.float64]
    predicted: NDArray[np.intp]
    labels: NDArray[np.intp] | None = None
    slices: Mapping[str, NDArray[np.object_]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = self.scores.shape[0]
        for name, values in [("prediction", self.predicted), ("label", self.labels),
                             *self.slices.items()]:  # fmt: skip
            if values is not None and len(values) != n:
                raise InputError(f"{name} has {len(values)} rows, scores have {n}")


@dataclass(frozen=True)
class MulticlassCalibration:
    """The classes in order, one one-vs-rest calibration map per class over all reference rows
    (its bins are the class's score bins) and, on those bins, each class's maps conditioned on
    the predicted class: `predicted_maps` fitted on the rows predicted that class,
    `other_maps` on the rest (None: a calibration stored before them; the one map serves both
    sides and rows are normalised)."""

    classes: tuple[str, ...]
    maps: tuple[Calibration, ...]
    predicted_maps: tuple[Calibration, ...] | None = None
    other_maps: tuple[Calibration, ...] | None = None

    def __post_init__(self) -> None:
        sides = (self.predicted_maps, self.other_maps)
        if (sides[0] is None) != (sides[1] is None):
            raise InputError("multiclass calibration: need both conditional maps or neither")
        for side in sides:
            if side is not None and (
                len(side) != len(self.maps)
                or any(c.edges != m.edges for c, m in zip(side, self.maps, strict=False))
            ):
                raise InputError("multiclass calibration: a conditional map on other bins")

    @property
    def conditional(self) -> bool:
        """Whether the maps are conditioned on the predicted class."""
        return self.predicted_maps is not None

    @property
    def reference_rows(self) -> int:
        """The labelled reference rows the maps were fitted on (every map sees them all)."""
        return sum(self.maps[0].counts) if self.maps else 0

    def effective_reference_rows(self, predicted: Array) -> int:
        """The reference rows a window's band is widened for (`widening`), given the window's
        rows per predicted class (`predicted`, in `classes` order). A map fitted on N_s rows
        adds n_s / N_s of the sampling variance of the n_s window rows it serves (as the one
        map of `widening`), times 1 + B_s / N_s for its B_s non-empty bins (a bin's rate
        from m rows has variance ∝ 1/m, and E[1/m] ≈ (1 + 1/E[m]) / E[m]: a side's bins hold
        few rows); so the maps of one side (those of the rows predicted each class, or of the
        rest) add Σ n_s² / N'_s / Σ n_s of it, N'_s = N_s² / (N_s + B_s), and N_eff = n Σ n_s
        / Σ n_s² / N'_s for a window of n rows: the smaller of the two sides', at most the
        reference rows. By Cauchy–Schwarz it is about the reference rows when the window
        predicts each class in the reference's shares (n_s / N_s alike), fewer otherwise: a
        window predicting mostly a class whose side learnt from few rows is widened more.
        Without conditional maps (a baseline stored before them), or for an empty window:
        the reference rows (every map sees them all)."""
        rows = np.asarray(predicted, dtype=np.float64)
        n = float(rows.sum())
        if self.predicted_maps is None or self.other_maps is None or n <= 0:
            return self.reference_rows
        sides = ((rows, self.predicted_maps), (n - rows, self.other_maps))
        fewest = min(float(self.reference_rows), *(_effective_rows(n, *side) for side in sides))
        return max(1, round(fewest))

    def calibrate(
        self, scores: NDArray[np.float64], predicted: NDArray[np.intp] | None = None
    ) -> NDArray[np.float64]:
        """Calibrated probabilities per row and class of rows of finite `scores` whose
        predicted classes are `predicted` (None: the highest score, `predicted_classes`)."""
        chosen = predicted_classes(scores) if predicted is None else predicted
        return self.probabilities(self.bins(scores), chosen)

    def bins(self, scores: NDArray[np.float64]) -> list[NDArray[np.intp]]:
        """Per class, the calibration bin of each row's score of that class."""
        return [c.bin_of(scores[:, k]) for k, c in enumerate(self.maps)]

    def probabilities(
        self, bins: list[NDArray[np.intp]], predicted: NDArray[np.intp]
    ) -> NDArray[np.float64]:
        """The calibrated probability of each class of rows in `bins` predicted `predicted`:
        per class, the map of the row's side; without conditional maps the one map per class,
        normalised to sum to one per row."""
        if self.predicted_maps is None or self.other_maps is None:
            return self._normalised(bins)
        columns = [
            np.where(predicted == k, np.asarray(p.probability)[b], np.asarray(o.probability)[b])
            for k, (p, o, b) in enumerate(zip(self.predicted_maps, self.other_maps, bins,
                                              strict=True))
        ]  # fmt: skip
        return np.column_stack(columns).astype(np.float64)

    def _normalised(self, bins: list[NDArray[np.intp]]) -> NDArray[np.float64]:
        cal = np.column_stack(
            [np.asarray(c.probability)[b] for c, b in zip(self.maps, bins, strict=True)]
        )
        total = cal.sum(axis=1, keepdims=True)
        uniform = np.full_like(cal, 1.0 / len(self.maps))
        return np.asarray(np.divide(cal, total, out=uniform, where=total > 0), dtype=np.float64)


def _effective_rows(n: float, served: Array, maps: tuple[Calibration, ...]) -> float:
    """n Σ n_s / Σ n_s² / N'_s over `maps` serving `served` rows n_s of an n-row window each,
    N'_s = N_s² / (N_s + B_s) for a map fitted on N_s rows (its counts; at least one) in B_s
    non-empty bins; infinite when they serve none (they add no noise)."""
    fitted = np.asarray([max(sum(c.counts), 1) for c in maps], dtype=np.float64)
    bins = np.asarray([sum(1 for x in c.counts if x > 0) for c in maps], dtype=np.float64)
    spread = float((served * served * (fitted + bins) / (fitted * fitted)).sum())
    return n * float(served.sum()) / spread if spread > 0 else math.inf


def predicted_classes(
    scores: NDArray[np.float64], given: NDArray[np.intp] | None = None
) -> NDArray[np.intp]:
    """The predicted class index of each row, one rule for files, baselines and the daemon: the
    row's own predicted class where it names one of the baseline's classes (`given`, -1 where
    it does not or is missing), else the class with the highest score (the first of equal
    maxima; a missing score counts lowest) — what a model's label output normally is, and the
    only prediction a list of class scores carries."""
    top: NDArray[np.intp] = np.argmax(np.nan_to_num(scores, nan=-1.0), axis=1).astype(np.intp)
    if given is None:
        return top
    return np.where(given >= 0, given, top).astype(np.intp)


def named_classes(classes: Sequence[str], values: Sequence[Any]) -> NDArray[np.intp]:
    """The index among `classes` of the class each event's prediction names (as the outcome
    summaries read it, `class_of`); -1 where it names none of them or is missing."""
    index = {c: i for i, c in enumerate(classes)}
    return np.fromiter((index.get(class_of(v) or "", -1) for v in values), np.intp, len(values))


def class_column(
    frame: Any, column: str, classes: Sequence[str], where: str = ""
) -> NDArray[np.intp]:
    """A file's label or prediction column as class indexes (-1 where missing); InputError
    (after `where`, e.g. the file) naming a class without a score column."""
    index = {c: i for i, c in enumerate(classes)}
    out = np.full(len(frame), -1, dtype=np.intp)
    for row, value in enumerate(frame[column].to_numpy(dtype=object)):
        text = value_text(value)
        if text is None:
            continue
        if text not in index:
            raise InputError(f"{where}column '{column}': class '{text}' has no --score "
                             f"CLASS=COL (classes: {', '.join(classes)})")  # fmt: skip
        out[row] = index[text]
    return out


def fit_multiclass(
    classes: Sequence[str], scores: NDArray[np.float64], labels: NDArray[np.intp],
    bins: int = DEFAULT_BINS, predicted: NDArray[np.intp] | None = None,
) -> MulticlassCalibration:  # fmt: skip
    """One-vs-rest binned calibration per class on labelled reference rows, and per class its
    maps on the rows `predicted` that class and on the rest (None: the highest score,
    `predicted_classes`); a side with fewer than `MIN_SIDE` labelled rows takes the class's
    map over all rows."""
    known = labels >= 0
    chosen = predicted_classes(scores) if predicted is None else predicted
    maps = tuple(
        fit_calibration(scores[known, k], (labels[known] == k).astype(np.float64), 0.5, bins)
        for k in range(len(classes))
    )

    def side(k: int, rows: NDArray[np.bool_]) -> Calibration:
        rows = rows & known & np.isfinite(scores[:, k])
        if int(rows.sum()) < MIN_SIDE:
            return maps[k]
        return refit(maps[k], scores[rows, k], (labels[rows] == k).astype(np.float64))

    ks = range(len(classes))
    return MulticlassCalibration(
        tuple(classes), maps, tuple(side(k, chosen == k) for k in ks),
        tuple(side(k, chosen != k) for k in ks),
    )  # fmt: skip


def estimate_multiclass(
    calibration: MulticlassCalibration, reference: MulticlassData, current: MulticlassData,
    options: EstimateOptions | None = None,
) -> list[EstimationResult]:  # fmt: skip
    """Results per (slice, chunk, metric) for a multiclass model."""
    how = options or EstimateOptions(metrics=MULTICLASS_METRICS)
    unknown = set(how.metrics) - set(MULTICLASS_METRICS)
    if unknown:
        raise InputError(f"multiclass estimates {', '.join(MULTICLASS_METRICS)}, "
                         f"not {', '.join(sorted(unknown))}")  # fmt: skip
    return run(_side(calibration, reference, how), _side(calibration, current, how), how)


def _side(c: MulticlassCalibration, data: MulticlassData, how: EstimateOptions) -> Side:
    finite: NDArray[np.bool_] = np.asarray(np.isfinite(data.scores).all(axis=1))
    q = np.zeros_like(data.scores)
    q[finite] = c.calibrate(data.scores[finite], data.predicted[finite])
    return Side(
        data.scores.shape[0],
        data.slices,
        partial(_estimate, c, data, q, finite, how.metrics),
        partial(realized_multiclass, data, len(c.classes)),
    )


def _estimate(
    c: MulticlassCalibration, data: MulticlassData, q: Array, finite: NDArray[np.bool_],
    metrics: tuple[str, ...], rows: Rows,
) -> list[Estimate]:  # fmt: skip
    rows = rows[finite[rows]]
    sums = multiclass_sums(c, q[rows], data.scores[rows], data.predicted[rows])
    return estimate_sums(sums, metrics, c.effective_reference_rows(sums.predicted))


@dataclass(frozen=True)
class MulticlassSums:
    """What multiclass estimates need of a set of rows, as sums that add across windows,
    slices and replicas (the daemon keeps them in profiles): per class, rows and summed
    calibrated probability of that class per calibration bin of its score; per predicted
    class, rows and summed calibrated probability of that class (the expected true
    positives); the sum of q·(1 − q) of the predicted class over rows; and the rows."""

    bin_rows: tuple[Array, ...]
    bin_q: tuple[Array, ...]
    predicted: Array
    hits: Array
    spread: float
    n: int


def multiclass_sums(
    c: MulticlassCalibration, q: Array, scores: Array, predicted: NDArray[np.intp]
) -> MulticlassSums:
    """The sums of rows with finite scores: `q` their calibrated probabilities
    (`MulticlassCalibration.calibrate`)."""
    k = len(c.classes)
    bins = [cal.bin_of(scores[:, j]) for j, cal in enumerate(c.maps)]
    p = q[np.arange(q.shape[0]), predicted] if q.shape[0] else np.empty(0)
    return MulticlassSums(
        tuple(np.bincount(b, minlength=cal.n_bins).astype(np.float64)
              for b, cal in zip(bins, c.maps, strict=True)),
        tuple(np.bincount(b, weights=q[:, j], minlength=cal.n_bins).astype(np.float64)
              for j, (b, cal) in enumerate(zip(bins, c.maps, strict=True))),
        np.bincount(predicted, minlength=k).astype(np.float64),
        np.bincount(predicted, weights=p, minlength=k).astype(np.float64),
        float((p * (1 - p)).sum()),
        int(q.shape[0]),
    )  # fmt: skip


def estimate_sums(
    sums: MulticlassSums, metrics: tuple[str, ...], n_reference: int
) -> list[Estimate]:
    """The estimated multiclass `metrics` of the rows `sums` describe, each with its band
    (widened for maps fitted on `n_reference` rows: the calibration's
    `effective_reference_rows` of `sums.predicted`)."""
    values = {
        "accuracy": _accuracy(sums),
        "roc_auc": _macro_auc(sums),
        "specificity": _macro_specificity(sums),
        **_macro_confusion(sums),
    }
    return [band(name, *values[name], sums.n, n_reference) for name in metrics]


def _accuracy(sums: MulticlassSums) -> tuple[float, float]:
    if sums.n == 0:
        return 0.0, 0.0
    return float(sums.hits.sum()) / sums.n, math.sqrt(max(sums.spread, 0.0)) / sums.n


def _macro_auc(sums: MulticlassSums) -> tuple[float, float]:
    """The mean of the classes' one-vs-rest AUCs; its standard error the mean of theirs (the
    bound for perfectly correlated errors). The classes' AUCs share rows (one class's positives
    are another's negatives): their errors correlate (about 0.3 between 3 classes), and the
    independent classes' sqrt(sum SE²) / k missed the realized macro AUC in 1–3% of chunks
    (nominal 0.27%; docs, Calibration)."""
    aucs, ses = [], []
    for rows, pos in zip(sums.bin_rows, sums.bin_q, strict=True):
        auc, se = soft_auc(pos, np.maximum(rows - pos, 0.0))
        aucs.append(auc)
        ses.append(se)
    return float(np.mean(aucs)), float(np.mean(ses))


def _macro_confusion(sums: MulticlassSums) -> dict[str, tuple[float, float]]:
    tp = sums.hits
    fp = np.maximum(sums.predicted - tp, 0.0)
    fn = np.maximum(np.asarray([q.sum() for q in sums.bin_q]) - tp, 0.0)
    precision = np.divide(tp, tp + fp, out=np.zeros_like(tp), where=tp + fp > 0)
    recall = np.divide(tp, tp + fn, out=np.zeros_like(tp), where=tp + fn > 0)
    f1 = np.divide(2 * tp, 2 * tp + fp + fn, out=np.zeros_like(tp), where=2 * tp + fp + fn > 0)
    support = max(float(sums.n), 1.0)
    return {
        name: (float(v.mean()), math.sqrt(max(v.mean() * (1 - v.mean()), 0.0) / support))
        for name, v in (("precision", precision), ("recall", recall), ("f1", f1))
    }


def _macro_specificity(sums: MulticlassSums) -> tuple[float, float]:
    """Mean over classes of expected TN / (TN + FP), one-vs-rest as NannyML: a row not
    predicted k is a true negative of k with probability 1 − q_k, one predicted k a false
    positive with that probability. Its standard error is NannyML's: the classes' binomial
    variances at their expected negatives, summed, rooted and divided by the class count."""
    true = np.asarray([q.sum() for q in sums.bin_q])
    fp = np.maximum(sums.predicted - sums.hits, 0.0)
    negatives = fp + np.maximum(sums.n - sums.predicted - true + sums.hits, 0.0)
    spec = np.divide(negatives - fp, negatives, out=np.zeros_like(fp), where=negatives > 0)
    var = np.divide(spec * (1 - spec), negatives, out=np.zeros_like(fp), where=negatives > 0)
    return float(spec.mean()), math.sqrt(float(var.sum())) / len(spec)


def realized_multiclass(data: MulticlassData, k: int, metric: str, rows: Rows) -> float | None:
    """`metric` (macro over the baseline's `k` classes) on the labelled rows among `rows`;
    None: none."""
    if data.labels is None:
        return None
    known = rows[data.labels[rows] >= 0]
    if known.size == 0:
        return None
    y, pred, s = data.labels[known], data.predicted[known], data.scores[known]
    if metric == "roc_auc":
        return float(np.mean([m.roc_auc((y == j).astype(np.float64), s[:, j]) for j in range(k)]))
    return realized_macro(metric, class_matrix(y, pred, k))
