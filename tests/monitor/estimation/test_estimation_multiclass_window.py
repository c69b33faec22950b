"""The multiclass window path: the derived columns' profiles (`__cbpe_score.<k>`,
`__cbpe_predicted`) give the sums the raw rows give, hence the same estimates as
`estimate_multiclass`; profiles merge into the sums of the concatenation; edges (no rows, one
row, non-finite scores, a profile on other bins) keep the policy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from monitor.errors import CorruptProfileError
from monitor.estimation import (
    MULTICLASS_METRICS,
    EstimateOptions,
    MulticlassCalibration,
    MulticlassData,
    estimate_multiclass,
    fit_multiclass,
    multiclass_specs,
    multiclass_values,
    predicted_classes,
)
from monitor.estimation._columns import PREDICTED_COLUMN, multiclass_sums_of
from monitor.estimation._multiclass import estimate_sums, named_classes
from monitor.estimation._realized import realized_macro, summary_matrix
from monitor.estimation._stored import StoredMulticlass
from monitor.estimation._window import StoredModels, window_rows
from monitor.profiles import ColumnSpec

CLASSES = ("a", "b", "c")
OTHER_BINS = {"edges": [0.5], "probability": [0, 1], "counts": [1, 1], "threshold": 0.5,
              "raw_ece": 0}  # fmt: skip


def _scores(n: int, seed: int, sharp: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 1, (n, 3)) * sharp
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(3, p=row) for row in p], dtype=np.intp)
    return p, labels


def _calibration() -> MulticlassCalibration:
    p, y = _scores(3000, 0)
    return fit_multiclass(CLASSES, p, y, bins=30)


def _profiles(
    cal: MulticlassCalibration, scores: np.ndarray, predictions: list[Any] | None = None
) -> dict[str, Any]:
    values = multiclass_values(cal, scores, predictions)
    return {c: spec.profile(values[c]) for c, spec in multiclass_specs(cal).items()}


def _awkward(seed: int) -> np.ndarray:
    """Scores with a missing, an infinite and a 0/1 row, a tie and exact-1 probabilities."""
    p, _ = _scores(400, seed)
    extra = np.array([[np.nan, 0.5, 0.5], [np.inf, 0.0, 0.0], [0.0, 0.0, 1.0],
                      [1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])  # fmt: skip
    return np.concatenate([p, extra])


@pytest.mark.parametrize(("seed", "conditional"), [(1, True), (2, True), (3, True), (1, False)])
def test_profiles_give_the_estimates_of_the_raw_rows(seed: int, conditional: bool) -> None:
    cal = _calibration()
    if not conditional:  # a calibration stored before the conditional maps
        cal = MulticlassCalibration(cal.classes, cal.maps)
    scores = _awkward(seed)
    predicted = np.argmax(np.nan_to_num(scores, nan=-1.0), axis=1).astype(np.intp)
    data = MulticlassData(scores, predicted)
    raw = estimate_multiclass(cal, data, data, EstimateOptions(metrics=MULTICLASS_METRICS))
    sums = multiclass_sums_of(cal, _profiles(cal, scores))
    assert sums.n == scores.shape[0] - 2  # the rows with a non-finite score are left out
    ours = estimate_sums(sums, MULTICLASS_METRICS, cal.effective_reference_rows(sums.predicted))
    for want, got in zip((r for r in raw if r.slice is None), ours, strict=True):
        assert want.metric == got.metric and want.n == got.n
        assert got.estimated == pytest.approx(want.estimated, abs=1e-12)
        assert (got.ci_low, got.ci_high) == (pytest.approx(want.ci_low, abs=1e-12),
                                             pytest.approx(want.ci_high, abs=1e-12))  # fmt: skip


def test_profiles_merge_into_the_sums_of_the_concatenation() -> None:
    cal = _calibration()
    a, b = _awkward(4), _awkward(5)[:9]
    pa, pb = _profiles(cal, a), _profiles(cal, b)
    merged = {c: pa[c].merge(pb[c]) for c in pa}
    got = estimate_sums(multiclass_sums_of(cal, merged), MULTICLASS_METRICS, cal.reference_rows)
    want = estimate_sums(multiclass_sums_of(cal, _profiles(cal, np.concatenate([a, b]))),
                         MULTICLASS_METRICS, cal.reference_rows)  # fmt: skip
    for g, w in zip(got, want, strict=True):
        assert g.estimated == pytest.approx(w.estimated, abs=1e-12) and g.n == w.n
        assert g.ci_low == pytest.approx(w.ci_low, abs=1e-12)


def _models(cal: MulticlassCalibration) -> StoredModels:
    stored = StoredMulticlass(("pa", "pb", "pc"), "y", cal, {"accuracy": 0.6},
                              {'{"r":"x"}': {"accuracy": 0.99}})  # fmt: skip
    return StoredModels(stored, None)


@pytest.mark.parametrize("n", [0, 1])
def test_empty_and_one_row_windows_are_insufficient_data(n: int) -> None:
    cal = _calibration()
    profiles = {("", c): p for c, p in _profiles(cal, _scores(n, 6)[0]).items()}
    rows = window_rows(profiles, {}, _models(cal), min_n=30)
    assert [r.metric for r in rows] == list(MULTICLASS_METRICS)
    assert {r.status for r in rows} == {"insufficient_data"} and {r.n for r in rows} == {n}
    assert all(r.value is None for r in rows)


def test_window_rows_per_slice_with_own_or_overall_threshold() -> None:
    cal = _calibration()
    flat = _scores(300, 7, sharp=0.2)[0]  # unconfident scores: a low estimated accuracy
    profiles = {(k, c): p for k in ("", '{"r":"x"}', '{"r":"y"}')
                for c, p in _profiles(cal, flat).items()}  # fmt: skip
    rows = {(r.slice_key, r.metric): r for r in window_rows(profiles, {}, _models(cal), 30)}
    assert rows[("", "accuracy")].threshold_low == 0.6
    assert rows[('{"r":"x"}', "accuracy")].threshold_low == 0.99
    assert rows[('{"r":"y"}', "accuracy")].threshold_low == 0.6  # no threshold of its own
    assert rows[('{"r":"x"}', "accuracy")].status == "degraded"


def test_a_profile_on_other_bins_is_refused() -> None:
    cal = _calibration()
    profiles = _profiles(cal, _scores(50, 8)[0])
    profiles[PREDICTED_COLUMN] = ColumnSpec(PREDICTED_COLUMN, "numeric",
                                            edges=(0.0, 2.0)).profile(np.array([0.5]))  # fmt: skip
    with pytest.raises(CorruptProfileError, match="other bins"):
        multiclass_sums_of(cal, profiles)


@pytest.mark.parametrize(
    "broken",
    [
        {"classes": ["a"], "scores": ["pa"], "calibrations": []},  # one class
        {"classes": ["a", "b"], "scores": ["pa"], "calibrations": []},  # lengths differ
        {"classes": ["a", "b"], "scores": ["pa", "pb"], "calibrations": [{}, {}]},
        {"thresholds": [1, 2]},  # thresholds not a mapping
        {"calibrations_other": None},  # one side of the conditional maps only
        {"calibrations_other": 3},  # not a list
        {"calibrations_other": [{}, {}, {}]},
        {"calibrations_other": [OTHER_BINS] * 3},  # conditional maps on other bins
    ],
)
def test_a_malformed_stored_multiclass_calibration_is_refused(broken: dict[str, Any]) -> None:
    cal = _calibration()
    good = StoredMulticlass(("pa", "pb", "pc"), "y", cal, {"accuracy": 0.6}).to_dict()
    assert StoredMulticlass.from_dict(good, "b").calibration.classes == CLASSES
    with pytest.raises(CorruptProfileError, match="baseline 'x'"):
        StoredMulticlass.from_dict({**good, **broken}, "baseline 'x'")


def test_realized_from_a_summary_is_over_the_baseline_classes() -> None:
    # class "c" never appears; a pair naming "z" (no score in the baseline) is left out
    cells = {("a", "a"): 3, ("a", "b"): 1, ("b", "b"): 2, ("z", "a"): 5, ("b", "z"): 4}
    matrix = summary_matrix(CLASSES, cells)
    assert matrix.sum() == 6
    assert realized_macro("accuracy", matrix) == pytest.approx(5 / 6)
    assert realized_macro("precision", matrix) == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert realized_macro("recall", matrix) == pytest.approx((3 / 4 + 1 + 0) / 3)
    assert realized_macro("f1", matrix) == pytest.approx((6 / 7 + 4 / 5 + 0) / 3)
    # one-vs-rest TN / (TN + FP): "a" 2/2, "b" 3/4 (one "a" predicted "b"), absent "c" 6/6
    assert realized_macro("specificity", matrix) == pytest.approx((1 + 3 / 4 + 1) / 3)
    assert realized_macro("accuracy", summary_matrix(CLASSES, {("z", "z"): 2})) is None


def test_realized_specificity_of_a_class_without_negatives_counts_zero() -> None:
    matrix = summary_matrix(CLASSES, {("a", "a"): 2, ("a", "b"): 1})
    assert realized_macro("specificity", matrix) == pytest.approx((0 + 2 / 3 + 1) / 3)
    assert realized_macro("specificity", summary_matrix(CLASSES, {})) is None


def test_estimated_specificity_is_nannymls_one_vs_rest_mean() -> None:
    """Per class k: rows not predicted k add 1 − q_k to TN, rows predicted k add 1 − q_k to
    FP (NannyML's `estimate_specificity` on the calibrated, normalised probabilities)."""
    cal = _calibration()
    scores, _ = _scores(500, 10)
    predicted = predicted_classes(scores)
    q = cal.calibrate(scores)
    want = np.mean([(1 - q[predicted != k, k]).sum() / (1 - q[:, k]).sum() for k in range(3)])
    data = MulticlassData(scores, predicted)
    (got,) = estimate_multiclass(cal, data, data, EstimateOptions(metrics=("specificity",)))
    assert got.metric == "specificity" and got.estimated == pytest.approx(want, abs=1e-12)
    assert got.ci_low is not None and got.ci_high is not None and got.estimated is not None
    assert 0 < got.ci_low < got.estimated < got.ci_high < 1


def test_an_events_own_class_is_its_prediction_else_the_highest_score() -> None:
    cal = _calibration()
    scores, _ = _scores(300, 9)
    top = scores.argmax(axis=1)
    own = (top + 1) % 3  # label predictions that disagree with the scores
    predictions: list[Any] = [CLASSES[k] for k in own]
    predictions[:3] = [None, "z", 7]  # missing, or naming no class of the baseline
    predicted = np.concatenate([top[:3], own[3:]])
    assert (predicted_classes(scores, named_classes(CLASSES, predictions)) == predicted).all()
    data = MulticlassData(scores, predicted)
    raw = estimate_multiclass(cal, data, data, EstimateOptions(metrics=MULTICLASS_METRICS))
    ours = estimate_sums(multiclass_sums_of(cal, _profiles(cal, scores, predictions)),
                         MULTICLASS_METRICS, cal.reference_rows)  # fmt: skip
    for want, got in zip((r for r in raw if r.slice is None), ours, strict=True):
        assert got.estimated == pytest.approx(want.estimated, abs=1e-12), want.metric
    by_top = estimate_sums(
        multiclass_sums_of(cal, _profiles(cal, scores)), MULTICLASS_METRICS, cal.reference_rows
    )
    assert ours[1].metric == "accuracy" and ours[1].estimated < by_top[1].estimated - 0.3
