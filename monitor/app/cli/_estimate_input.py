"""What `modelwatch estimate` reads: score, prediction, label and slice columns of a data file,
checked with one-line errors naming the file and column."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.app.cli._roles import looks_like_id
from monitor.data.datafile import read_frame as read
from monitor.data.datafile import require_columns
from monitor.errors import InputError
from monitor.estimation import (
    BinaryData,
    MulticlassData,
    RegressionData,
    class_column,
    predicted_classes,
)
from monitor.summaries import window_of

Floats = NDArray[np.float64]


@dataclass(frozen=True)
class ScoreColumns:
    """Binary: one score column (classes empty). Multiclass: a score column per class."""

    columns: tuple[str, ...]
    classes: tuple[str, ...] = ()

    @property
    def multiclass(self) -> bool:
        return bool(self.classes)


def parse_scores(values: Sequence[str]) -> ScoreColumns:
    """`--score COL` once (binary) or `--score CLASS=COL` per class (multiclass)."""
    pairs = [v.split("=", 1) for v in values]
    if len(pairs) == 1 and len(pairs[0]) == 1:
        return ScoreColumns((values[0],))
    if any(len(p) != 2 or not p[0] or not p[1] for p in pairs) or len(pairs) < 2:
        raise InputError("--score: give one COL (binary) or CLASS=COL for each of 2+ classes")
    return ScoreColumns(tuple(p[1] for p in pairs), tuple(p[0] for p in pairs))


def read_frame(path: str, scores: ScoreColumns, prediction: str | None,
               slice_by: Sequence[str]) -> Any:  # fmt: skip
    """The whole file; InputError naming a missing score, prediction or slice column."""

    return read(path, [*scores.columns, *([prediction] if prediction else []), *slice_by])


def read_binary(
    path: str, frame: Any, scores: ScoreColumns, label: str, prediction: str | None,
    threshold: float, slice_by: Sequence[str],
) -> BinaryData:  # fmt: skip
    """Score (probabilities), 0/1 prediction (or score ≥ threshold), label if present, slices."""
    s = _probabilities(frame, scores.columns[0], path)
    predicted = (s >= threshold).astype(np.float64) if prediction is None else (
        _zero_one(frame, prediction, path))  # fmt: skip
    labels = _zero_one(frame, label, path) if label in frame.columns else None
    return BinaryData(s, predicted, labels, _slices(frame, slice_by))


def read_multiclass(
    path: str, frame: Any, scores: ScoreColumns, label: str, prediction: str | None,
    slice_by: Sequence[str],
) -> MulticlassData:  # fmt: skip
    """A score per class, the predicted class (`predicted_classes`: the `prediction` column's
    class, the highest score where it is missing or not given), label if present."""
    s = np.column_stack([_probabilities(frame, c, path) for c in scores.columns])
    where = f"{path}: "
    given = None if prediction is None else class_column(frame, prediction, scores.classes, where)
    predicted = predicted_classes(s, given)
    labels = class_column(frame, label, scores.classes, where) if label in frame.columns else None
    return MulticlassData(s, predicted, labels, _slices(frame, slice_by))


def read_regression(
    path: str, frame: Any, features: Sequence[str], prediction: str, label: str,
    slice_by: Sequence[str],
) -> RegressionData:  # fmt: skip
    """Features, prediction and label (if present) as numbers; InputError naming a missing
    feature, a non-number or an infinite value."""
    require_columns(frame, features, path)
    labels = _finite(frame, label, path) if label in frame.columns else None
    columns = {c: frame[c].to_numpy() for c in features}
    predicted = _finite(frame, prediction, path)
    return RegressionData(columns, predicted, labels, _slices(frame, slice_by))


def _finite(frame: Any, column: str, path: str) -> Floats:
    """A numeric column, NaN where missing; InputError on an infinite value."""
    values = _numeric(frame, column, path)
    if np.isinf(values).any():
        raise InputError(f"{path}: column '{column}': infinite value (must be a finite number)")
    return values


def feature_columns(frame: Any, wanted: Sequence[str] | None, taken: Sequence[str],
                    path: str) -> list[str]:  # fmt: skip
    """The multivariate features: `wanted` (each must exist), or every column not already a
    score, label, prediction or slice, that is not a timestamp and does not look like an id."""

    if wanted is not None:
        for col in wanted:
            if col not in frame.columns:
                raise InputError(f"{path}: column '{col}' not found")
        return list(wanted)
    return [
        c for c in frame.columns
        if c not in taken and frame[c].dtype.kind in "biufO" and str(frame[c].dtype) != "category"
        and not looks_like_id(frame[c])
    ]  # fmt: skip


def _slices(frame: Any, slice_by: Sequence[str]) -> dict[str, NDArray[np.object_]]:
    return {c: frame[c].to_numpy(dtype=object) for c in slice_by}


def _numeric(frame: Any, column: str, path: str) -> Floats:
    import pandas as pd

    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() & frame[column].notna()
    if bad.any():
        first = frame[column][bad].iloc[0]
        raise InputError(f"{path}: column '{column}': not a number: {first!r}")
    return np.asarray(values.to_numpy(dtype=np.float64, na_value=np.nan))


def _probabilities(frame: Any, column: str, path: str) -> Floats:
    values = _numeric(frame, column, path)
    finite = values[np.isfinite(values)]
    if ((finite < 0) | (finite > 1)).any():
        raise InputError(f"{path}: column '{column}': scores must be probabilities in [0, 1]")
    return values


def _zero_one(frame: Any, column: str, path: str) -> Floats:
    """0/1 (or true/false) values; NaN where missing; InputError on anything else."""
    raw = frame[column]
    if raw.dtype == bool:
        return np.asarray(raw.to_numpy(dtype=np.float64))
    values = _numeric(frame, column, path)
    known = values[np.isfinite(values)]
    if not np.isin(known, (0.0, 1.0)).all():
        other = known[~np.isin(known, (0.0, 1.0))][0]
        raise InputError(f"{path}: column '{column}': expected 0/1, got {other:g}")
    return values


def sort_by_time(frame: Any, column: str, window_s: float, path: str) -> tuple[Any, list[Any]]:
    """`frame` in time order (stable) and the start of each row's `window_s` window."""
    import pandas as pd

    if column not in frame.columns:
        raise InputError(f"{path}: column '{column}' not found")
    ts = pd.to_datetime(frame[column], utc=True, errors="coerce")
    bad = ts.isna()
    if bad.any():
        first = frame[column][bad].iloc[0]
        raise InputError(f"{path}: column '{column}': not a timestamp: {first!r}")
    order = np.argsort(ts.to_numpy(), kind="stable")
    ordered = frame.iloc[order].reset_index(drop=True)
    starts = [window_of(t.to_pydatetime(), window_s) for t in ts.iloc[order]]
    return ordered, starts
