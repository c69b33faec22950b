"""Mergeable outcome summaries: the sufficient statistics of outcome metrics per window and slice.

A summary is built from joined (label, prediction) pairs at label-join time and merged in place,
so a window's metrics, or a day's, come from summaries and never from a rescan of raw rows.

Classification (binary) keeps the confusion counts at the configured threshold, plus per class
and per score bin (`BINS` equal-width bins on [0, 1], `BINS // ECE_BINS` inside each calibration
bin) the count, the score sum and the log-loss sum. Counts-based metrics (accuracy, precision,
recall, f1) and the calibration error are exact; log loss is exact up to float rounding; ROC-AUC
treats scores in one bin as tied, so it is within `roc_auc_error` (half the share of positive /
negative pairs that share a bin) of the exact value.

Regression keeps n, the sums of error, |error|, error², error⁴, the sums of |error / y| and its
square over rows with y != 0, and a log-bucketed histogram of |error| for quantiles within
`QUANTILE_ACCURACY` relative error.

Multiclass keeps the confusion matrix of (true class, predicted class) and, for predictions
with class probabilities, a one-vs-rest score histogram per class (see `_multiclass`).

Pairs whose label or score is not usable (not a number, not finite, a label outside {0, 1} or a
score outside [0, 1] for classification) are counted in `invalid` and otherwise skipped: one bad
pair never stops the others from being scored.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import orjson
from numpy.typing import NDArray

from monitor.errors import CorruptProfileError, InputError
from monitor.outcomes._multiclass import MulticlassSummary, class_of
from monitor.outcomes._score_bins import BINS, score_bins
from monitor.outcomes.metrics import CLIP

Task = Literal["classification", "regression", "multiclass"]
Array = NDArray[np.float64]

QUANTILE_ACCURACY = 0.01
_GAMMA = (1 + QUANTILE_ACCURACY) / (1 - QUANTILE_ACCURACY)
_LOG_GAMMA = math.log(_GAMMA)


def score_of(prediction: Any, output: str | None) -> float | None:
    """The number outcome metrics score: a plain number, a named output, or the positive class."""
    if isinstance(prediction, dict):
        key = output if output is not None else (next(iter(prediction)) if prediction else None)
        prediction = prediction.get(key) if key is not None else None
    if isinstance(prediction, list):
        prediction = prediction[-1] if prediction else None
    if isinstance(prediction, bool):
        return float(prediction)
    if isinstance(prediction, int | float):
        return float(prediction)
    if isinstance(prediction, str):
        try:
            return float(prediction)
        except ValueError:
            return None
    return None


_PLAIN = frozenset({int, float, bool, type(None)})


def scores_of(values: Sequence[Any], output: str | None) -> Array:
    """`score_of` of many values, NaN where there is none (plain numbers without a Python loop)."""
    if set(map(type, values)) <= _PLAIN:
        return np.array(values, dtype=np.float64)
    scored = (score_of(v, output) for v in values)
    return np.fromiter((math.nan if s is None else s for s in scored), np.float64, len(values))


def predicted_positive(
    score: Array, threshold: float
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Which scores a binary classifier's counts use (finite, in [0, 1]) and which of them
    predict the positive class (at or above `threshold`): the one rule of the predicted class,
    for the label join's confusion counts and the selection counted over all predictions."""
    with np.errstate(invalid="ignore"):
        scored = np.isfinite(score) & (score >= 0) & (score <= 1)
        return scored, scored & (score >= threshold)


def selected_of(
    predictions: Sequence[Any], output: str | None, threshold: float
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """`predicted_positive` of raw predictions (as sent), scored as the label join scores them."""
    return predicted_positive(scores_of(predictions, output), threshold)


@dataclass
class ClassificationSummary:
    """Binary classification statistics of a set of pairs (see the module docstring)."""

    threshold: float
    # tp, fp, tn, fn at `threshold`
    confusion: NDArray[np.int64] = field(default_factory=lambda: np.zeros(4, np.int64))
    count: NDArray[np.int64] = field(default_factory=lambda: np.zeros((2, BINS), np.int64))
    score_sum: Array = field(default_factory=lambda: np.zeros((2, BINS)))
    loss_sum: Array = field(default_factory=lambda: np.zeros((2, BINS)))
    invalid: int = 0

    @property
    def n(self) -> int:
        return int(self.confusion.sum())

    def add(self, y: Array, score: Array, sign: int = 1) -> None:
        """Add (sign=1) or remove (sign=-1) pairs; unusable pairs only count as invalid."""
        scored, positive = predicted_positive(score, self.threshold)
        ok = scored & np.isfinite(y) & np.isin(y, (0.0, 1.0))
        self.invalid += sign * int((~ok).sum())
        y, score, pred = y[ok], score[ok], positive[ok]
        cls = y.astype(np.intp)
        cells = np.bincount(cls * 2 + (~pred).astype(np.intp), minlength=4)
        # cells: 0 = neg & pred (fp), 1 = neg & not pred (tn), 2 = tp, 3 = fn
        self.confusion += sign * cells[[2, 0, 1, 3]].astype(np.int64)
        flat = cls * BINS + score_bins(score)
        p = np.clip(score, CLIP, 1 - CLIP)
        loss = -(y * np.log(p) + (1 - y) * np.log(1 - p))
        size = 2 * BINS
        self.count += sign * np.bincount(flat, minlength=size).reshape(2, BINS)
        self.score_sum += sign * np.bincount(flat, score, size).reshape(2, BINS)
        self.loss_sum += sign * np.bincount(flat, loss, size).reshape(2, BINS)

    def sweep(self, thresholds: Sequence[float]) -> NDArray[np.int64]:
        """Confusion counts [tp, fp, tn, fn] per threshold, each rounded up to a bin edge.

        Scores in the bin holding a threshold count as at or above it, so counts are exact for
        thresholds on the 1/BINS grid up to float rounding at bin edges.
        """
        edges = np.clip(np.ceil(np.asarray(thresholds, np.float64) * BINS), 0, BINS).astype(int)
        above = np.concatenate([np.cumsum(self.count[:, ::-1], axis=1)[:, ::-1], [[0], [0]]], 1)
        totals = self.count.sum(axis=1)
        tp, fp = above[1, edges], above[0, edges]
        return np.stack([tp, fp, totals[0] - fp, totals[1] - tp], axis=1)

    def merge(self, other: ClassificationSummary) -> ClassificationSummary:
        """The summary of both sets of pairs (thresholds must agree)."""
        if other.threshold != self.threshold:
            raise InputError(
                f"cannot merge outcome summaries at thresholds {self.threshold} and "
                f"{other.threshold}"
            )
        return ClassificationSummary(
            self.threshold,
            self.confusion + other.confusion,
            self.count + other.count,
            self.score_sum + other.score_sum,
            self.loss_sum + other.loss_sum,
            self.invalid + other.invalid,
        )

    def to_doc(self) -> dict[str, Any]:
        cells = np.flatnonzero(self.count.reshape(-1))
        return {
            "task": "classification",
            "threshold": self.threshold,
            "confusion": self.confusion.tolist(),
            "cells": cells.tolist(),
            "count": self.count.reshape(-1)[cells].tolist(),
            "score_sum": self.score_sum.reshape(-1)[cells].tolist(),
            "loss_sum": self.loss_sum.reshape(-1)[cells].tolist(),
            "invalid": self.invalid,
        }

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> ClassificationSummary:
        out = cls(float(doc["threshold"]), np.asarray(doc["confusion"], np.int64))
        cells = np.asarray(doc["cells"], np.intp)
        out.count.reshape(-1)[cells] = doc["count"]
        out.score_sum.reshape(-1)[cells] = doc["score_sum"]
        out.loss_sum.reshape(-1)[cells] = doc["loss_sum"]
        out.invalid = int(doc["invalid"])
        return out


_REG_SUMS = ("err", "abs", "sq", "e4", "ape", "ape2")


@dataclass
class RegressionSummary:
    """Regression statistics of a set of pairs (see the module docstring)."""

    n: int = 0
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_REG_SUMS, 0.0))
    nonzero_y: int = 0
    # |error| histogram: bucket i holds errors in (GAMMA**(i-1), GAMMA**i]; "z" counts zeros.
    buckets: dict[str, int] = field(default_factory=dict)
    invalid: int = 0

    def add(self, y: Array, pred: Array, sign: int = 1) -> None:
        """Add (sign=1) or remove (sign=-1) pairs; non-finite pairs only count as invalid."""
        ok = np.isfinite(y) & np.isfinite(pred)
        self.invalid += sign * int((~ok).sum())
        y, pred = y[ok], pred[ok]
        err = y - pred
        absolute = np.abs(err)
        nz = y != 0
        with np.errstate(over="ignore"):
            ape = absolute[nz] / np.abs(y[nz])
        self.n += sign * int(y.size)
        self.nonzero_y += sign * int(nz.sum())
        with np.errstate(over="ignore", invalid="ignore"):
            parts = (err, absolute, err**2, err**4, ape, ape**2)
            for name, values in zip(_REG_SUMS, parts, strict=True):
                self.sums[name] += sign * float(values.sum())
        keys, counts = np.unique(_buckets(absolute), return_counts=True)
        for key, count in zip(keys.tolist(), counts.tolist(), strict=True):
            name = "z" if key == _ZERO else str(key)
            self.buckets[name] = self.buckets.get(name, 0) + sign * count
            if self.buckets[name] == 0:
                del self.buckets[name]

    def merge(self, other: RegressionSummary) -> RegressionSummary:
        """The summary of both sets of pairs."""
        buckets = dict(self.buckets)
        for key, count in other.buckets.items():
            buckets[key] = buckets.get(key, 0) + count
        return RegressionSummary(
            self.n + other.n,
            {k: self.sums[k] + other.sums[k] for k in _REG_SUMS},
            self.nonzero_y + other.nonzero_y,
            buckets,
            self.invalid + other.invalid,
        )

    def error_quantile(self, q: float) -> float | None:
        """The q-quantile of |error| within QUANTILE_ACCURACY relative error; None when empty."""
        if self.n <= 0:
            return None
        rank = q * (self.n - 1)
        seen = self.buckets.get("z", 0)
        if rank < seen:
            return 0.0
        for key in sorted(int(k) for k in self.buckets if k != "z"):
            seen += self.buckets[str(key)]
            if rank < seen:
                return 2 * _GAMMA**key / (_GAMMA + 1)
        return None

    def to_doc(self) -> dict[str, Any]:
        return {
            "task": "regression",
            "n": self.n,
            # Sums of powers can overflow to inf, which JSON has no number for.
            "sums": {k: v if math.isfinite(v) else repr(v) for k, v in self.sums.items()},
            "nonzero_y": self.nonzero_y,
            "buckets": self.buckets,
            "invalid": self.invalid,
        }

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> RegressionSummary:
        sums = {k: float(doc["sums"][k]) for k in _REG_SUMS}
        buckets = {str(k): int(v) for k, v in doc["buckets"].items()}
        return cls(int(doc["n"]), sums, int(doc["nonzero_y"]), buckets, int(doc["invalid"]))


_ZERO = np.iinfo(np.int64).min


def _buckets(absolute: Array) -> NDArray[np.int64]:
    with np.errstate(divide="ignore", over="ignore"):
        keys = np.ceil(np.log(absolute) / _LOG_GAMMA)
    return np.where(absolute > 0, keys, _ZERO).astype(np.int64)


OutcomeSummary = ClassificationSummary | RegressionSummary | MulticlassSummary


def new_summary(task: Task, threshold: float) -> OutcomeSummary:
    """An empty summary for `task`."""
    if task == "classification":
        return ClassificationSummary(threshold)
    if task == "multiclass":
        return MulticlassSummary()
    return RegressionSummary()


def pair_values(label: Any, prediction: Any, task: Task, output: str | None) -> tuple[Any, Any]:
    """What a summary of `task` adds for one joined pair: numbers, or classes (multiclass).

    Unusable sides come back as NaN (numbers) or None (classes); `add_pairs` counts them
    as invalid.
    """
    if task == "multiclass":
        return class_of(label), MulticlassSummary.prediction(prediction, output)
    y, s = score_of(label, None), score_of(prediction, output)
    return (math.nan if y is None else y), (math.nan if s is None else s)


def pair_columns(
    labels: Sequence[Any], predictions: Sequence[Any], task: Task, output: str | None
) -> tuple[NDArray[Any], NDArray[Any]]:
    """`pair_values` of many pairs, column-wise: float arrays, or object arrays of classes."""
    if task == "multiclass":
        truth = np.empty(len(labels), dtype=object)
        truth[:] = [class_of(v) for v in labels]
        predicted = np.empty(len(predictions), dtype=object)
        predicted[:] = [MulticlassSummary.prediction(v, output) for v in predictions]
        return truth, predicted
    return scores_of(labels, None), scores_of(predictions, output)


def add_pairs(summary: OutcomeSummary, ys: Any, ss: Any, sign: int = 1) -> None:
    """Add the `pair_values` of many pairs (lists or `pair_columns` arrays) to `summary`."""
    if isinstance(summary, MulticlassSummary):
        summary.add_classes(ys, ss, sign)
    else:
        summary.add(np.asarray(ys, np.float64), np.asarray(ss, np.float64), sign=sign)


# Stored classification summaries: this magic, a fixed header, then the non-empty bins' arrays.
# Older payloads (JSON documents, which start with "{") are still read.
_BINARY = b"MWC1"
_HEADER = struct.Struct("<4sdq4qI")
_CELL_DTYPES: tuple[np.dtype[Any], ...] = tuple(np.dtype(d) for d in ("<u2", "<i8", "<f8", "<f8"))


def summary_to_bytes(summary: OutcomeSummary) -> bytes:
    """The stored form of a summary: classification binary (only non-empty bins; decoded
    without a parse, as the label join rewrites it per batch), other tasks compact JSON."""
    if isinstance(summary, ClassificationSummary):
        return _classification_bytes(summary)
    return orjson.dumps(summary.to_doc(), option=orjson.OPT_SERIALIZE_NUMPY)


def summary_from_bytes(payload: bytes) -> OutcomeSummary:
    """Inverse of `summary_to_bytes`, and reads the JSON payloads of earlier releases."""
    if bytes(payload[:4]) == _BINARY:
        return _classification_from_bytes(payload)
    doc = orjson.loads(payload)
    if doc.get("task") == "classification":
        return ClassificationSummary.from_doc(doc)
    if doc.get("task") == "multiclass":
        return MulticlassSummary.from_doc(doc)
    return RegressionSummary.from_doc(doc)


def merge_summaries(summaries: list[OutcomeSummary]) -> OutcomeSummary | None:
    """All summaries merged into one (None for none); they must be of one task."""
    if not summaries:
        return None
    out = summaries[0]
    for other in summaries[1:]:
        if type(other) is not type(out):
            raise InputError("cannot merge outcome summaries of different tasks")
        out = out.merge(other)  # type: ignore[arg-type]
    return out


def _classification_bytes(summary: ClassificationSummary) -> bytes:
    cells = np.flatnonzero(summary.count.reshape(-1))
    head = _HEADER.pack(
        _BINARY, summary.threshold, summary.invalid, *summary.confusion.tolist(), cells.size
    )
    arrays = (summary.count, summary.score_sum, summary.loss_sum)
    columns = [cells, *(a.reshape(-1)[cells] for a in arrays)]
    return head + b"".join(
        c.astype(d).tobytes() for c, d in zip(columns, _CELL_DTYPES, strict=True)
    )


def _classification_from_bytes(payload: bytes) -> ClassificationSummary:
    """Decode a binary classification summary; CorruptProfileError when it is not one."""
    threshold, invalid, confusion, cells, count, score_sum, loss_sum = _cell_columns(payload)
    out = ClassificationSummary(threshold, np.asarray(confusion, np.int64), invalid=invalid)
    out.count.reshape(-1)[cells] = count
    out.score_sum.reshape(-1)[cells] = score_sum
    out.loss_sum.reshape(-1)[cells] = loss_sum
    return out


def _cell_columns(payload: bytes) -> tuple[Any, ...]:
    """A binary classification summary's threshold, invalid count, confusion counts and its
    non-empty cells' (cell, count, score sum, loss sum) arrays (CorruptProfileError)."""
    try:
        _, threshold, invalid, *confusion, size = _HEADER.unpack_from(payload)
        offset, columns = _HEADER.size, []
        for dtype in _CELL_DTYPES:
            columns.append(np.frombuffer(payload, dtype, size, offset))
            offset += size * dtype.itemsize
    except (struct.error, ValueError):
        raise CorruptProfileError("outcome summary: truncated binary payload") from None
    if offset != len(payload) or (size and int(columns[0].max()) >= 2 * BINS):
        raise CorruptProfileError("outcome summary: malformed binary payload")
    return (threshold, invalid, confusion, *columns)


def merged_from_bytes(payloads: Sequence[bytes]) -> OutcomeSummary | None:
    """`merge_summaries` of the stored summaries, equal to it bit for bit: binary
    classification summaries summed cell by cell in one pass (each cell's values added in the
    payloads' order, as the pairwise merge adds them) instead of each decoded into dense
    arrays and merged pair by pair (a day merges ~24 per slice)."""
    if len(payloads) < 2 or not all(p[:4] == _BINARY for p in payloads):
        return merge_summaries([summary_from_bytes(p) for p in payloads])
    parts = [_cell_columns(p) for p in payloads]
    threshold = parts[0][0]
    for other in parts[1:]:
        if other[0] != threshold:
            raise InputError(
                f"cannot merge outcome summaries at thresholds {threshold} and {other[0]}"
            )
    size = 2 * BINS
    cells = np.concatenate([p[3] for p in parts]).astype(np.intp)
    summed = [  # weighted: float64 sums, added per cell in input order
        np.bincount(cells, np.concatenate([p[i] for p in parts]).astype(np.float64), size).astype(
            np.float64, copy=False
        )
        for i in (4, 5, 6)
    ]
    return ClassificationSummary(
        threshold,
        np.sum([p[2] for p in parts], axis=0, dtype=np.int64),
        summed[0].astype(np.int64).reshape(2, BINS),
        summed[1].reshape(2, BINS),
        summed[2].reshape(2, BINS),
        sum(p[1] for p in parts),
    )
