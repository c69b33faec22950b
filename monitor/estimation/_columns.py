"""The derived columns the collectors add at ingest when a baseline stores estimation models, and
how a window's profiles of them turn back into the estimator's inputs (one owner for both ends).

- `__cbpe_score`: the model's score, profiled on a spec whose buckets are exactly the
  calibration's bins (bucket i = calibration bin i), so a window's profile holds the rows per
  bin: times each bin's calibrated probability that is the window's expected confusion matrix,
  and counts add across batches, slices and replicas.
- `__pca_error`: each event's reconstruction error (missing values imputed as on the
  reference), profiled like any numeric column; the window's mean error is its profile's mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.errors import CorruptProfileError
from monitor.estimation._calibration import Calibration
from monitor.estimation._counts import ScoreCounts
from monitor.estimation._multiclass import (
    MulticlassCalibration,
    MulticlassSums,
    named_classes,
    predicted_classes,
)
from monitor.estimation._regression import LossSums, RegressionModel
from monitor.profiles import ColumnSpec

SCORE_COLUMN = "__cbpe_score"
ERROR_COLUMN = "__pca_error"
PREDICTED_COLUMN = "__cbpe_predicted"  # multiclass (below)
# regression (DLE): each event's expected absolute and squared loss (below)
ABSOLUTE_COLUMN = "__dle_absolute"
SQUARED_COLUMN = "__dle_squared"
LOSS_COLUMNS = (ABSOLUTE_COLUMN, SQUARED_COLUMN)
DERIVED_COLUMNS = (SCORE_COLUMN, ERROR_COLUMN, PREDICTED_COLUMN, *LOSS_COLUMNS)


def score_spec(calibration: Calibration) -> ColumnSpec:
    """The spec of `__cbpe_score`: the calibration's edges plus a closing edge above the last.

    A numeric spec's last interior bucket is closed at its last edge, the calibration's last
    bin is open above; the extra edge (last + 1) makes every calibration bin one bucket, and
    scores past it land in the overflow bucket, which `score_counts` folds into the last bin.
    """
    edges = calibration.edges or (calibration.threshold,)
    return ColumnSpec(SCORE_COLUMN, "numeric", edges=(*edges, edges[-1] + 1.0))


def score_counts(calibration: Calibration, profile: Any) -> ScoreCounts:
    """The window's rows per (calibration bin, predicted class) from its `__cbpe_score` profile;
    predicted positive: the bin lies at or above the calibration's threshold."""
    if profile.spec.fingerprint != score_spec(calibration).fingerprint:
        raise CorruptProfileError(
            f"column '{SCORE_COLUMN}': profiled on other bins than the baseline's calibration "
            "(the baseline was replaced within the window)"
        )
    per_bin = np.asarray(profile.counts, dtype=np.int64)
    if not calibration.edges:  # one calibration bin: the spec's threshold edge splits nothing
        per_bin = np.array([per_bin.sum()], dtype=np.int64)
    else:
        per_bin = np.concatenate([per_bin[:-2], [per_bin[-2] + per_bin[-1]]])
    positive = calibration.predicted_positive()
    pairs = tuple(
        (0, int(c)) if pos else (int(c), 0) for c, pos in zip(per_bin, positive, strict=True)
    )
    return ScoreCounts(pairs, int(profile.null_count))


# Multiclass (`baseline create --score CLASS=COL ...`): a column per class, `__cbpe_score.<k>`
# (k: the class's index in the baseline's order), whose value is 2·bin + q (its score's bin in
# the class's calibration and its calibrated probability q ∈ [0, 1], `probabilities`); on edges
# 0, 2, 4, ... each bin is one bucket, whose count is the rows of that bin and whose sum minus
# 2·bin·count is their summed q. `__cbpe_predicted` is 2·j + q of the predicted class j (the
# event's own class, else the highest score: `predicted_classes`): per bucket the rows
# predicted j and their expected true positives; its moments give the sum of q²
# (Σv² = m2 + n·mean²), hence the accuracy's spread Σq(1 − q).
CLASS_COLUMN = "__cbpe_score.{}"


def multiclass_specs(calibration: MulticlassCalibration) -> dict[str, ColumnSpec]:
    """The spec of each multiclass derived column, by column name."""
    out = {
        CLASS_COLUMN.format(k): _even_spec(CLASS_COLUMN.format(k), cal.n_bins)
        for k, cal in enumerate(calibration.maps)
    }
    out[PREDICTED_COLUMN] = _even_spec(PREDICTED_COLUMN, len(calibration.classes))
    return out


def _even_spec(column: str, buckets: int) -> ColumnSpec:
    return ColumnSpec(column, "numeric", edges=tuple(2.0 * i for i in range(buckets + 1)))


def multiclass_values(
    calibration: MulticlassCalibration, scores: NDArray[np.float64],
    predictions: Sequence[Any] | None = None,
) -> dict[str, NDArray[np.float64]]:  # fmt: skip
    """The multiclass derived columns of rows of scores (one column per class, in the
    calibration's order) and, if given, the events' own predictions (`predicted_classes`);
    NaN in every column where a score is missing or not finite."""
    finite: NDArray[np.bool_] = np.asarray(np.isfinite(scores).all(axis=1))
    bins = calibration.bins(scores)  # a non-finite score's bin is never used: its row is NaN
    given = None if predictions is None else named_classes(calibration.classes, predictions)
    predicted = predicted_classes(scores, given)
    q = calibration.probabilities(bins, predicted)
    out: dict[str, NDArray[np.float64]] = {}
    for k, b in enumerate(bins):
        out[CLASS_COLUMN.format(k)] = 2.0 * b + q[:, k]
    out[PREDICTED_COLUMN] = 2.0 * predicted + q[np.arange(len(q)), predicted]
    for values in out.values():
        values[~finite] = np.nan
    return out


def multiclass_sums_of(calibration: MulticlassCalibration, profiles: Any) -> MulticlassSums:
    """The window's multiclass sums from its derived-column profiles (`profiles[column]`)."""
    specs = multiclass_specs(calibration)
    for column, spec in specs.items():
        found = profiles.get(column)
        if found is None or found.spec.fingerprint != spec.fingerprint:
            raise CorruptProfileError(
                f"column '{column}': missing or profiled on other bins than the baseline's "
                "calibration (the baseline was replaced within the window)"
            )
    rows, q = zip(*(_rows_and_q(profiles[CLASS_COLUMN.format(k)])
                    for k in range(len(calibration.maps))), strict=True)  # fmt: skip
    pred = profiles[PREDICTED_COLUMN]
    predicted, hits = _rows_and_q(pred)
    j = np.arange(predicted.size, dtype=np.float64)
    squares = float(pred.m2) + pred.n * float(pred.mean) ** 2
    q_squared = squares - float((4 * j * j * predicted + 4 * j * hits).sum())
    return MulticlassSums(rows, q, predicted, hits, float(hits.sum()) - q_squared, int(pred.n))


def _rows_and_q(profile: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    counts = np.asarray(profile.counts, dtype=np.float64)[1:-1]
    sums = np.asarray(profile.sums, dtype=np.float64)[1:-1]
    q = sums - 2.0 * np.arange(counts.size) * counts
    return counts, np.clip(q, 0.0, counts)


# Regression (`baseline create --task regression`): `__dle_absolute` and `__dle_squared`, each
# event's expected absolute and squared loss from the baseline's loss models (NaN where the
# prediction is missing), profiled like any numeric column; a window's profile count and mean
# give the rows and the summed loss (`LossSums`), which add across batches, slices, replicas.


def loss_values(
    model: RegressionModel, columns: Mapping[str, NDArray[Any]], prediction: NDArray[np.float64]
) -> dict[str, NDArray[np.float64]]:
    """The regression derived columns of rows of features and predictions."""
    losses = model.losses(columns, prediction)
    return {ABSOLUTE_COLUMN: losses[:, 0], SQUARED_COLUMN: losses[:, 1]}


def loss_sums_of(profiles: Any) -> LossSums:
    """A window's `LossSums` from its `__dle_absolute` and `__dle_squared` profiles."""
    found = [profiles.get(c) for c in LOSS_COLUMNS]
    if any(p is None for p in found):
        raise CorruptProfileError(f"columns {', '.join(LOSS_COLUMNS)}: a profile is missing")
    absolute, squared = found
    if int(absolute.n) != int(squared.n):
        raise CorruptProfileError(f"columns {', '.join(LOSS_COLUMNS)}: unequal row counts")
    n = int(absolute.n)
    return LossSums(n, float(absolute.mean) * n, float(squared.mean) * n)
