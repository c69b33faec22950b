"""Multiclass outcome summaries: the confusion matrix of (true class, predicted class) pairs.

A class is a label as users send it: a string, or an integer (``3``, ``3.0`` and ``"3"`` are
the same class ``"3"``). The predicted class of a prediction is the prediction itself when it is
a label; the class with the largest probability when it is a map of class -> probability (the
ZipMap shape; ``outcomes.output`` names the key holding the map or label, when predictions are
objects with several outputs); the index of the largest probability for a list. Pairs with no
usable true or predicted class are counted in ``invalid`` and skipped.

The summary keeps only non-empty cells, so its size is bounded by (classes seen)², not rows;
merging adds cells, so every counts-based metric of a merge is exact.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

Cell = tuple[str, str]


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


@dataclass
class MulticlassSummary:
    """Confusion counts of multiclass pairs: cells[(true, predicted)] = count."""

    cells: dict[Cell, int] = field(default_factory=dict)
    invalid: int = 0

    @property
    def n(self) -> int:
        return sum(self.cells.values())

    def add_classes(
        self, truth: Sequence[str | None], predicted: Sequence[str | None], sign: int = 1
    ) -> None:
        """Add (sign=1) or remove (sign=-1) pairs of classes; a None side counts as invalid."""
        for (t, p), k in Counter(zip(truth, predicted, strict=True)).items():
            if t is None or p is None:
                self.invalid += sign * k
                continue
            count = self.cells.get((t, p), 0) + sign * k
            if count:
                self.cells[(t, p)] = count
            else:
                self.cells.pop((t, p), None)

    def add(self, y: Sequence[Any], prediction: Sequence[Any], sign: int = 1) -> None:
        """Add raw labels and predictions (see `class_of`)."""
        self.add_classes([class_of(v) for v in y], [class_of(v) for v in prediction], sign)

    def merge(self, other: MulticlassSummary) -> MulticlassSummary:
        """The summary of both sets of pairs."""
        cells = dict(self.cells)
        for cell, count in other.cells.items():
            cells[cell] = cells.get(cell, 0) + count
        return MulticlassSummary(
            {c: k for c, k in cells.items() if k}, self.invalid + other.invalid
        )

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
        return {"task": "multiclass", "cells": cells, "invalid": self.invalid}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> MulticlassSummary:
        cells = {(str(t), str(p)): int(k) for t, p, k in doc["cells"]}
        return cls(cells, int(doc["invalid"]))


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
