"""Multiclass CBPE's maps conditioned on the predicted class: they remove the one-vs-rest
estimate's bias on miscalibrated scores, a side with too few reference rows keeps the class's
one map, and a calibration stored without them (before them) loads and estimates as before:
one map per class for both sides, rows normalised. Bands are widened for the reference rows
each conditional map learnt from (`effective_reference_rows`)."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.estimation import (
    EstimateOptions,
    MulticlassCalibration,
    MulticlassData,
    estimate_multiclass,
    fit_multiclass,
)
from monitor.estimation._calibration import Calibration
from monitor.estimation._metrics import BAND_Z, widening
from monitor.estimation._multiclass import MIN_SIDE, estimate_sums, multiclass_sums
from monitor.estimation._stored import OTHER_KEY, PREDICTED_KEY, StoredMulticlass

CLASSES = ("a", "b", "c", "d")


def _overconfident(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(true probabilities Dirichlet(2, 2, 2, 2), labels drawn from them, scores: the
    probabilities cubed and renormalised — overconfident)."""
    p = rng.dirichlet(np.full(len(CLASSES), 2.0), n)
    labels = (rng.random((n, 1)) > p.cumsum(axis=1)).sum(axis=1).astype(np.intp)
    scores = p**3
    return p, labels, scores / scores.sum(axis=1, keepdims=True)


def _accuracy(cal: MulticlassCalibration, scores: np.ndarray, predicted: np.ndarray) -> float:
    """The estimated accuracy of rows (as `estimate_multiclass` computes it per chunk)."""
    sums = multiclass_sums(cal, cal.calibrate(scores, predicted), scores, predicted)
    (accuracy,) = estimate_sums(sums, ("accuracy",), cal.reference_rows)
    return accuracy.estimated


def test_conditional_maps_estimate_an_overconfident_models_accuracy_without_bias() -> None:
    """Maps on 100,000 reference rows, one 50,000-row chunk; the truth is the chunk's expected
    accuracy (the true probability of each row's predicted class), free of label noise.
    Over 10 seeds the estimate erred +0.0087 (sd 0.0014) with one map per class, normalised,
    and −0.0001 (sd 0.0014, at most 0.0028) with the conditional maps."""
    rng = np.random.default_rng(7)
    _, ry, rs = _overconfident(rng, 100_000)
    p, _, cs = _overconfident(rng, 50_000)
    predicted = cs.argmax(axis=1)
    truth = float(p[np.arange(p.shape[0]), predicted].mean())
    cal = fit_multiclass(CLASSES, rs, ry)
    assert cal.conditional
    assert abs(_accuracy(cal, cs, predicted) - truth) < 0.0045
    one_map = MulticlassCalibration(cal.classes, cal.maps)  # as before the conditional maps
    assert _accuracy(one_map, cs, predicted) - truth > 0.0045


def test_a_side_with_too_few_reference_rows_keeps_the_classes_one_map() -> None:
    rng = np.random.default_rng(3)
    _, labels, scores = _overconfident(rng, 3_000)
    predicted = scores.argmax(axis=1)
    rare = np.flatnonzero(predicted == 3)[MIN_SIDE - 1 :]
    predicted[rare] = 0  # class d predicted in MIN_SIDE - 1 rows
    cal = fit_multiclass(CLASSES, scores, labels, bins=20, predicted=predicted)
    assert cal.predicted_maps is not None and cal.other_maps is not None
    assert cal.predicted_maps[3] is cal.maps[3] and cal.other_maps[3] is not cal.maps[3]
    assert all(cal.predicted_maps[k] is not cal.maps[k] for k in range(3))


@pytest.fixture(scope="module")
def stored() -> StoredMulticlass:
    rng = np.random.default_rng(5)
    _, labels, scores = _overconfident(rng, 3_000)
    cal = fit_multiclass(CLASSES, scores, labels, bins=20)
    return StoredMulticlass(("pa", "pb", "pc", "pd"), "y", cal, {"accuracy": 0.6})


def test_the_conditional_maps_are_stored_and_loaded(stored: StoredMulticlass) -> None:
    loaded = StoredMulticlass.from_dict(stored.to_dict(), "baseline 'x'")
    assert loaded.calibration == stored.calibration and loaded.calibration.conditional


def test_a_baseline_stored_before_the_conditional_maps_estimates_as_before(
    stored: StoredMulticlass,
) -> None:
    old = {k: v for k, v in stored.to_dict().items() if k not in (PREDICTED_KEY, OTHER_KEY)}
    cal = StoredMulticlass.from_dict(old, "baseline 'x'").calibration
    assert not cal.conditional and cal.maps == stored.calibration.maps
    _, labels, scores = _overconfident(np.random.default_rng(6), 500)
    predicted = scores.argmax(axis=1)
    q = cal.calibrate(scores, predicted)
    # one map per class for both sides, normalised per row (NannyML's estimate)
    one = np.column_stack([m.calibrate(scores[:, k]) for k, m in enumerate(cal.maps)])
    assert q == pytest.approx(one / one.sum(axis=1, keepdims=True), abs=1e-12)
    data = MulticlassData(scores, predicted, labels)
    how = EstimateOptions(chunk_size=500, metrics=("accuracy",))
    (old_estimate,) = estimate_multiclass(cal, data, data, how)
    (new_estimate,) = estimate_multiclass(stored.calibration, data, data, how)
    assert old_estimate.estimated == pytest.approx(float(q[np.arange(500), predicted].mean()))
    assert old_estimate.estimated != pytest.approx(new_estimate.estimated)


def _map(counts: tuple[int, int]) -> Calibration:
    return Calibration((0.5,), (0.2, 0.8), counts, 0.5, 0.0)


def test_the_band_is_widened_for_the_rows_each_conditional_map_learnt_from() -> None:
    """3 classes on 3,000 reference rows; each class's predicted-side map learnt from 1,000
    rows in one non-empty bin, its other-side map from 2,000 in two: N'_s = N_s² / (N_s +
    B_s), and per side N_eff = n Σ n_s / Σ n_s² / N'_s, the smaller side's."""
    maps = tuple(_map((1_500, 1_500)) for _ in range(3))
    cal = MulticlassCalibration(("a", "b", "c"), maps, tuple(_map((0, 1_000)) for _ in range(3)),
                                tuple(_map((1_500, 500)) for _ in range(3)))  # fmt: skip
    p, o = 1_000**2 / 1_001, 2_000**2 / 2_002

    def effective(rows: list[float]) -> int:
        n = sum(rows)
        mine = n * n / sum(r * r / p for r in rows)
        rest = n * 2 * n / sum((n - r) ** 2 / o for r in rows)
        return round(min(mine, rest))

    # predicted in the reference's shares: about the reference rows (less its bins' share)
    assert cal.effective_reference_rows(np.array([3_000.0, 3_000, 3_000])) == effective(
        [3_000, 3_000, 3_000]) == 2_997  # fmt: skip
    # mostly class a, whose predicted side learnt from a third of the rows: much wider
    skewed = cal.effective_reference_rows(np.array([8_000.0, 500, 500]))
    assert skewed == effective([8_000, 500, 500]) == 1_255
    assert cal.effective_reference_rows(np.zeros(3)) == cal.reference_rows == 3_000


def _band(cal: MulticlassCalibration, rows: int) -> tuple[tuple[float, float], float]:
    """A 1,000-row chunk predicted mostly class a: (the accuracy band `estimate_multiclass`
    gives, the half-width of ±BAND_Z SE widened for `rows` reference rows)."""
    _, labels, scores = _overconfident(np.random.default_rng(8), 1_000)
    predicted = np.where(np.arange(1_000) % 4 == 0, scores.argmax(axis=1), 0)
    data = MulticlassData(scores, predicted, labels)
    how = EstimateOptions(chunk_size=1_000, metrics=("accuracy",))
    (got,) = estimate_multiclass(cal, data, data, how)
    sums = multiclass_sums(cal, cal.calibrate(scores, predicted), scores, predicted)
    (want,) = estimate_sums(sums, ("accuracy",), rows)
    assert got.ci_low is not None and got.ci_high is not None
    assert got.estimated == pytest.approx(want.estimated)
    return (got.ci_low, got.ci_high), BAND_Z * want.se * widening(1_000, rows)


def test_an_estimate_band_uses_the_effective_reference_rows(stored: StoredMulticlass) -> None:
    cal = stored.calibration
    _, labels, scores = _overconfident(np.random.default_rng(8), 1_000)
    predicted = np.where(np.arange(1_000) % 4 == 0, scores.argmax(axis=1), 0)
    rows = cal.effective_reference_rows(np.bincount(predicted, minlength=4).astype(np.float64))
    assert rows < cal.reference_rows
    (low, high), half = _band(cal, rows)
    assert high - low == pytest.approx(2 * half)
    assert half > _band(cal, cal.reference_rows)[1]  # wider than for all the reference rows


def test_a_baseline_stored_before_the_conditional_maps_widens_for_all_reference_rows(
    stored: StoredMulticlass,
) -> None:
    old = {k: v for k, v in stored.to_dict().items() if k not in (PREDICTED_KEY, OTHER_KEY)}
    cal = StoredMulticlass.from_dict(old, "baseline 'x'").calibration
    assert cal.effective_reference_rows(np.array([1_000.0, 0, 0, 0])) == cal.reference_rows
    (low, high), half = _band(cal, cal.reference_rows)  # as before
    assert high - low == pytest.approx(2 * half)
