"""Multiclass outcome summaries: the confusion matrix of (true class, predicted class) pairs.

A class is a label as users send it: a string, or an integer (``3``, ``3.0`` and ``"3"`` are
the same class ``"3"``). The predicted class of a prediction is the prediction itself when it is
a label; the class with the largest probability when it is a map of class -> probability (the
ZipMap shape; ``outcomes.output`` names the key holding the map or label, when predictions are
objects with several outputs); the index of the largest probability for a list. Pairs with no
usable true or predicted class are counted in ``invalid`` and skipped.

The summary keeps only non-empty cells, so its size is bounded by (classes seen)², not rows;
merging adds cells, so every counts-based metric of a merge is exact.

When a prediction carries class probabilities (a list or a map, every value a number in
[0, 1]; `ScoredClass`) and the pair's true class is one of the classes it scores, the summary
also counts, per scored class k, the pair in the score bin of its probability of k (the binary
classification summary's bins, `score_bins`), split by whether the true class is k: a
one-vs-rest score histogram per class, kept as its non-empty cells, from which the macro
one-vs-rest ROC-AUC follows within the binning error. Label-only predictions add no scores.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.outcomes._score_bins import BINS, score_bins

Cell = tuple[str, str]
# per class: {score cell: count}, a cell being (1 if the true class is that class else 0) * BINS
# + the score bin, the layout of a binary classification summary's flattened `count`
ClassScores = dict[str, dict[int, int]]


def class_of(value: Any, output: str | None = None) -> str | None:
    """The class a label or prediction names (see the module docstring); None if none."""
    if isinstance(value, dict):
        if output is not None and output in value:
            return class_of(value[output])
        return _argmax(list(value.items()))
    if isinstance(value, list | tuple):
        return _argmax(list(enumerate(value)))
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value if value else None
    return None


def _argmax(items: list[tuple[Any, Any]]) -> str | None:
    scored = [(k, v) for k, v in items if _probability(v) is not None]
    if not scored or len(scored) != len(items):
        return None
    best = max(scored, key=lambda kv: float(kv[1]))  # the first of equal maxima, like argmax
    return class_of(best[0])


def _probability(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


@dataclass(frozen=True)
class ScoredClass:
    """A prediction's class with the probability it gives each class it scores."""

    predicted: str
    classes: tuple[str, ...]
    probabilities: tuple[float, ...]


def prediction_of(value: Any, output: str | None = None) -> str | ScoredClass | None:
    """What a multiclass summary keeps of a prediction: its class (`class_of`), with its class
    probabilities when it is a list or map of numbers in [0, 1] naming distinct classes."""
    if isinstance(value, dict):
        if output is not None and output in value:
            return prediction_of(value[output])
        names = tuple(class_of(k) for k in value)
        values: Sequence[Any] = list(value.values())
    elif isinstance(value, list | tuple):
        names, values = _index_names(len(value)), value
    else:
        return class_of(value)
    probabilities = _numbers(values)
    if probabilities is None:  # as `class_of`: no class unless every value is a number
        return None
    predicted = names[probabilities.index(max(probabilities))]  # the first of equal maxima
    if predicted is None or len(set(names)) != len(names) or None in names:
        return predicted
    if not 0.0 <= min(probabilities) <= max(probabilities) <= 1.0:
        return predicted
    return ScoredClass(predicted, names, probabilities)  # type: ignore[arg-type]


@functools.cache
def _index_names(k: int) -> tuple[str, ...]:
    """The classes of a list of k probabilities: its indexes."""
    return tuple(str(i) for i in range(k))


def _numbers(values: Sequence[Any]) -> tuple[float, ...] | None:
    """The values as floats when every one is a finite number (not a bool); None otherwise."""
    if not values:
        return None
    if all(type(v) is float for v in values):  # the common case, without a call per value
        out = tuple(values)
        return out if math.isfinite(sum(out)) or all(map(math.isfinite, out)) else None
    found = tuple(_probability(v) for v in values)
    return None if None in found else found  # type: ignore[return-value]


@dataclass
class MulticlassSummary:
    """Confusion counts of multiclass pairs: cells[(true, predicted)] = count."""

    cells: dict[Cell, int] = field(default_factory=dict)
    invalid: int = 0
    scores: ClassScores = field(default_factory=dict)

    @property
    def n(self) -> int:
        return sum(self.cells.values())

    def add_classes(
        self,
        truth: Sequence[str | None],
        predicted: Sequence[str | ScoredClass | None],
        sign: int = 1,
    ) -> None:
        """Add (sign=1) or remove (sign=-1) pairs of classes (`prediction_of`: with class
        probabilities, scored too); a None side counts as invalid."""
        classes = [p.predicted if isinstance(p, ScoredClass) else p for p in predicted]
        self._add_scores(truth, predicted, sign)
        for (t, p), k in Counter(zip(truth, classes, strict=True)).items():
            if t is None or p is None:
                self.invalid += sign * k
                continue
            count = self.cells.get((t, p), 0) + sign * k
            if count:
                self.cells[(t, p)] = count
            else:
                self.cells.pop((t, p), None)

    @staticmethod
    def prediction(value: Any, output: str | None = None) -> str | ScoredClass | None:
        """What the summary keeps of a prediction (`prediction_of`)."""
        return prediction_of(value, output)

    def _add_scores(
        self,
        truth: Sequence[str | None],
        predicted: Sequence[str | ScoredClass | None],
        sign: int,
    ) -> None:
        """Count the scored pairs whose true class is scored in each class's score cells,
        one array step per distinct set of scored classes (a list's classes are its indexes)."""
        groups: dict[tuple[str, ...], tuple[list[int], list[tuple[float, ...]]]] = {}
        for t, p in zip(truth, predicted, strict=True):
            if t is None or not isinstance(p, ScoredClass) or t not in p.classes:
                continue
            true, scores = groups.setdefault(p.classes, ([], []))
            true.append(p.classes.index(t))
            scores.append(p.probabilities)
        for classes, (true, scores) in groups.items():
            k = len(classes)
            positive = np.arange(k) == np.asarray(true, np.intp)[:, None]
            cells = positive * BINS + score_bins(np.asarray(scores, np.float64))
            flat = (np.arange(k) * 2 * BINS + cells).reshape(-1)
            counts = np.bincount(flat, minlength=k * 2 * BINS).reshape(k, 2 * BINS)
            for name, row in zip(classes, counts, strict=True):
                for cell in np.flatnonzero(row).tolist():
                    _add_cell(self.scores, name, cell, sign * int(row[cell]))

    def add(self, y: Sequence[Any], prediction: Sequence[Any], sign: int = 1) -> None:
        """Add raw labels and predictions (see `class_of` and `prediction_of`)."""
        self.add_classes([class_of(v) for v in y], [prediction_of(v) for v in prediction], sign)

    def merge(self, other: MulticlassSummary) -> MulticlassSummary:
        """The summary of both sets of pairs."""
        cells = dict(self.cells)
        for cell, count in other.cells.items():
            cells[cell] = cells.get(cell, 0) + count
        return MulticlassSummary(
            {c: k for c, k in cells.items() if k},
            self.invalid + other.invalid,
            _merged_scores(self.scores, other.scores),
        )

    def class_counts(self, name: str) -> NDArray[np.int64]:
        """Class `name`'s one-vs-rest score histogram: counts[1 if true class else 0, bin]."""
        out = np.zeros(2 * BINS, np.int64)
        histogram = self.scores.get(name, {})
        out[list(histogram)] = list(histogram.values())
        return out.reshape(2, BINS)

    def matrix(self) -> tuple[list[str], NDArray[np.int64]]:
        """(classes, counts[true, predicted]) over every class seen on either side, sorted."""
        classes = sorted({c for cell in self.cells for c in cell})
        index = {c: i for i, c in enumerate(classes)}
        out = np.zeros((len(classes), len(classes)), np.int64)
        for (t, p), count in self.cells.items():
            out[index[t], index[p]] = count
        return classes, out

    def to_doc(self) -> dict[str, Any]:
        cells = [[t, p, k] for (t, p), k in sorted(self.cells.items())]
        doc: dict[str, Any] = {"task": "multiclass", "cells": cells, "invalid": self.invalid}
        if self.scores:  # optional: summaries of label-only predictions (and older ones) lack it
            doc["scores"] = {
                name: {"cells": sorted(h), "count": [h[c] for c in sorted(h)]}
                for name, h in sorted(self.scores.items())
            }
        return doc

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> MulticlassSummary:
        cells = {(str(t), str(p)): int(k) for t, p, k in doc["cells"]}
        scores = {
            str(name): dict(zip(map(int, h["cells"]), map(int, h["count"]), strict=True))
            for name, h in doc.get("scores", {}).items()
        }
        return cls(cells, int(doc["invalid"]), scores)


def _merged_scores(a: ClassScores, b: ClassScores) -> ClassScores:
    """Both class score histograms added; empty cells and classes dropped."""
    out = {name: dict(histogram) for name, histogram in a.items()}
    for name, histogram in b.items():
        mine = out.setdefault(name, {})
        for cell, count in histogram.items():
            mine[cell] = mine.get(cell, 0) + count
    out = {name: {c: k for c, k in h.items() if k} for name, h in out.items()}
    return {name: h for name, h in out.items() if h}


def _add_cell(scores: ClassScores, name: str, cell: int, count: int) -> None:
    """Add `count` to a class's score cell; empty cells and classes vanish."""
    histogram = scores.setdefault(name, {})
    total = histogram.get(cell, 0) + count
    if total:
        histogram[cell] = total
    else:
        histogram.pop(cell, None)
    if not histogram:
        del scores[name]


def confusion_metrics(m: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Accuracy and macro precision, recall, F1 per confusion matrix m[..., true, predicted].

    Macro averages run over every class seen on either side; a class never predicted has
    precision 0 and one never true recall 0 (scikit-learn's zero_division=0).
    """
    diag = np.diagonal(m, axis1=-2, axis2=-1)
    true, pred = m.sum(axis=-1), m.sum(axis=-2)
    total = m.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(pred > 0, diag / pred, 0.0)
        recall = np.where(true > 0, diag / true, 0.0)
        f1 = np.where(true + pred > 0, 2 * diag / (true + pred), 0.0)
        accuracy = np.where(total > 0, diag.sum(axis=-1) / total, 0.0)
    return {
        "accuracy": accuracy,
        "macro_precision": precision.mean(axis=-1),
        "macro_recall": recall.mean(axis=-1),
        "macro_f1": f1.mean(axis=-1),
    }
