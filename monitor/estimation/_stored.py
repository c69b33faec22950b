"""The calibration a baseline stores (`baseline create --score COL --label COL`, or `--score
CLASS=COL` per class for a multiclass model): fitted on the reference in one extra pass over its
score, label and slice columns, kept in the baseline's settings under "estimation" with the
reference-chunk lower threshold of each metric, overall and per slice.

Per-slice thresholds come from the slice's own reference rows cut into the same number of
chunks, where each chunk has at least `MIN_N` rows; a slice with fewer reference rows has no
entry and is judged against the overall threshold, as is a metric without a bound of its own
(`StoredEstimation.bounds`; `_run` applies the same rule to thresholds drawn from files)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.detectors import MIN_N
from monitor.errors import CorruptProfileError, InputError
from monitor.estimation._calibration import DEFAULT_BINS, Calibration, fit_calibration
from monitor.estimation._metrics import METRICS
from monitor.estimation._multiclass import (
    MULTICLASS_METRICS,
    MulticlassCalibration,
    MulticlassData,
    class_column,
    fit_multiclass,
    predicted_classes,
    realized_multiclass,
)
from monitor.estimation._realized import realized
from monitor.estimation._results import REFERENCE_CHUNKS, chunk_bounds
from monitor.estimation._run import reference_bounds
from monitor.profiles import NULL_VALUE, OVERALL, slice_key, value_text

SETTINGS_KEY = "estimation"
# a multiclass calibration's maps conditioned on the predicted class (absent: stored before them)
PREDICTED_KEY = "calibrations_predicted"
OTHER_KEY = "calibrations_other"
Bounds = dict[str, float | None]
Rows = NDArray[np.intp]


@dataclass(frozen=True)
class StoredEstimation:
    """A baseline's binary calibration, the columns it was fitted on, the lower threshold of
    each metric from the reference's chunks (None: too few chunks) and those of each slice
    key whose reference rows were enough."""

    score: str
    label: str
    calibration: Calibration
    thresholds: Bounds
    slice_thresholds: dict[str, Bounds] = field(default_factory=dict)

    def bounds(self, key: str) -> Bounds:
        """The thresholds a slice key (OVERALL: "") is judged by: its own, else the overall."""
        return judged_by(self.thresholds, self.slice_thresholds, key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "label": self.label,
            "calibration": self.calibration.to_dict(),
            "thresholds": self.thresholds,
            "slice_thresholds": self.slice_thresholds,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> StoredEstimation:
        cal = Calibration.from_dict(data.get("calibration", {}), where)
        return cls(str(data.get("score")), str(data.get("label")), cal, *thresholds_of(data, where))


@dataclass(frozen=True)
class StoredMulticlass:
    """A baseline's multiclass calibration: classes, the score column of each, the label
    column, one-vs-rest calibrations (with their maps conditioned on the predicted class) and
    the thresholds (as `StoredEstimation`)."""

    scores: tuple[str, ...]
    label: str
    calibration: MulticlassCalibration
    thresholds: Bounds
    slice_thresholds: dict[str, Bounds] = field(default_factory=dict)

    def bounds(self, key: str) -> Bounds:
        """The thresholds a slice key (OVERALL: "") is judged by: its own, else the overall."""
        return judged_by(self.thresholds, self.slice_thresholds, key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "classes": list(self.calibration.classes),
            "scores": list(self.scores),
            "label": self.label,
            "calibrations": [c.to_dict() for c in self.calibration.maps],
            **{key: [c.to_dict() for c in side] for key, side in (
                (PREDICTED_KEY, self.calibration.predicted_maps),
                (OTHER_KEY, self.calibration.other_maps)) if side is not None},
            "thresholds": self.thresholds,
            "slice_thresholds": self.slice_thresholds,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> StoredMulticlass:
        """Inverse of `to_dict`; a payload without the conditional maps (stored before them)
        loads with one map per class for both sides (`MulticlassCalibration`)."""
        classes = [str(c) for c in data.get("classes", [])]
        scores = [str(c) for c in data.get("scores", [])]
        maps = [Calibration.from_dict(c, where) for c in data.get("calibrations", [])]
        if len(classes) < 2 or not len(classes) == len(scores) == len(maps):
            raise CorruptProfileError(f"{where}: malformed multiclass calibration")
        try:
            sides = [
                None if data.get(key) is None
                else tuple(Calibration.from_dict(c, where) for c in list(data[key]))
                for key in (PREDICTED_KEY, OTHER_KEY)
            ]  # fmt: skip
            cal = MulticlassCalibration(tuple(classes), tuple(maps), *sides)
        except (InputError, TypeError) as exc:
            raise CorruptProfileError(f"{where}: malformed multiclass calibration: {exc}") from None
        return cls(tuple(scores), str(data.get("label")), cal, *thresholds_of(data, where))


def judged_by(overall: Bounds, per_slice: Mapping[str, Bounds], key: str) -> Bounds:
    own = {} if key == OVERALL else per_slice.get(key, {})
    return {m: own[m] if own.get(m) is not None else v for m, v in overall.items()}


def thresholds_of(data: dict[str, Any], where: str) -> tuple[Bounds, dict[str, Bounds]]:
    try:
        overall = _bounds(data.get("thresholds", {}))
        per_slice = {str(k): _bounds(v) for k, v in dict(data.get("slice_thresholds", {})).items()}
    except (TypeError, ValueError, AttributeError) as exc:
        raise CorruptProfileError(f"{where}: malformed thresholds: {exc}") from None
    return overall, per_slice


def _bounds(data: Mapping[str, Any]) -> Bounds:
    return {str(k): None if v is None else float(v) for k, v in dict(data).items()}


def fit_stored(
    batches: Iterable[Any], score: str, label: str, threshold: float = 0.5,
    bins: int = DEFAULT_BINS, chunks: int = REFERENCE_CHUNKS, slice_by: Sequence[str] = (),
) -> StoredEstimation:  # fmt: skip
    """Calibrate on the score and label columns of reference `batches` (pandas frames)."""
    frame = concat(batches, [score, label, *slice_by])
    s, y = floats(frame, score), floats(frame, label)
    calibration = fit_calibration(s, y, threshold, bins)
    pred = (s >= threshold).astype(np.float64)

    def real(metric: str, rows: Rows) -> float | None:
        return realized(metric, y[rows], s[rows], pred[rows])

    overall, per_slice = reference_thresholds(frame, slice_by, real, METRICS, chunks)
    return StoredEstimation(score, label, calibration, overall, per_slice)


def fit_stored_multiclass(
    batches: Iterable[Any], classes: Sequence[str], scores: Sequence[str], label: str,
    bins: int = DEFAULT_BINS, chunks: int = REFERENCE_CHUNKS, slice_by: Sequence[str] = (),
) -> StoredMulticlass:  # fmt: skip
    """One-vs-rest calibrations on reference `batches` (a score column per class in `classes`
    order; `label` holds class names)."""
    frame = concat(batches, [*scores, label, *slice_by])
    s = np.column_stack([floats(frame, c) for c in scores])
    y = class_column(frame, label, classes)
    data = MulticlassData(s, predicted_classes(s), y)
    calibration = fit_multiclass(classes, s, y, bins, data.predicted)

    def real(metric: str, rows: Rows) -> float | None:
        return realized_multiclass(data, len(classes), metric, rows)

    overall, per_slice = reference_thresholds(frame, slice_by, real, MULTICLASS_METRICS, chunks)
    return StoredMulticlass(tuple(scores), label, calibration, overall, per_slice)


def reference_thresholds(
    frame: Any, slice_by: Sequence[str], real: Callable[[str, Rows], float | None],
    metrics: Sequence[str], chunks: int,
) -> tuple[Bounds, dict[str, Bounds]]:  # fmt: skip
    """The lower threshold of each metric over `chunks` reference chunks, overall and per
    slice key with at least `chunks` × `MIN_N` reference rows."""
    count = max(chunks, 1)
    overall = _chunk_thresholds(np.arange(len(frame)), real, metrics, count)
    per_slice: dict[str, Bounds] = {}
    for column in slice_by:
        texts = np.asarray([value_text(v) or NULL_VALUE for v in frame[column].to_numpy(object)],
                           dtype=object)  # fmt: skip
        for value in sorted(set(texts.tolist())):
            rows = np.flatnonzero(texts == value)
            if rows.size >= count * MIN_N:
                per_slice[slice_key(column, value)] = _chunk_thresholds(rows, real, metrics, count)
    return overall, per_slice


def _chunk_thresholds(
    rows: Rows, real: Callable[[str, Rows], float | None], metrics: Sequence[str], count: int
) -> Bounds:
    values: dict[str, list[float]] = {m: [] for m in metrics}
    for c in chunk_bounds(rows.size, None, count):
        for m in metrics:
            got = real(m, rows[c.start : c.end])
            values[m].append(np.nan if got is None else got)
    return reference_bounds(values)


def concat(batches: Iterable[Any], columns: list[str]) -> Any:
    import pandas as pd

    parts = [b[columns] for b in batches]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def floats(frame: Any, column: str) -> Any:
    import pandas as pd

    values = pd.to_numeric(frame[column], errors="coerce")
    if (values.isna() & frame[column].notna()).any():
        raise InputError(
            f"column '{column}': not a number: {frame[column][values.isna()].iloc[0]!r}"
        )
    return values.to_numpy(dtype=np.float64, na_value=np.nan)
