"""CBPE core: the calibration map, mergeable score counts, estimates against realized values on
data whose calibration holds, and the edges (no rows, one row, non-finite scores)."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.errors import InputError
from monitor.estimation import (
    BinaryData,
    EstimateOptions,
    count_scores,
    empty_counts,
    estimate_binary,
    estimate_metrics,
    fit_calibration,
)
from monitor.outcomes import metrics as m


def _calibrated(n: int, seed: int, a: float = 2.0, b: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """Scores drawn from Beta(a, b) and labels drawn with exactly that probability."""
    rng = np.random.default_rng(seed)
    p = rng.beta(a, b, n)
    return p, (rng.random(n) < p).astype(np.float64)


def _miscalibrated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The model's score is the true probability squashed towards 0.5 (underconfident)."""
    p, y = _calibrated(n, seed)
    return 0.5 + (p - 0.5) * 0.4, y


def test_calibration_is_monotone_has_the_threshold_as_edge_and_learns_the_map() -> None:
    s, y = _miscalibrated(40_000, 1)
    c = fit_calibration(s, y, threshold=0.5, bins=50)
    assert 0.5 in c.edges
    assert all(b >= a for a, b in zip(c.probability, c.probability[1:], strict=False))
    # the squashed score 0.6 means a true probability of 0.75
    assert c.calibrate(np.array([0.6]))[0] == pytest.approx(0.75, abs=0.04)
    assert c.raw_ece > 0.1
    assert sum(c.counts) == 40_000


def test_bins_on_each_side_of_the_threshold_predict_their_side() -> None:
    s, y = _calibrated(5000, 2)
    c = fit_calibration(s, y, threshold=0.3, bins=20)
    pos = c.predicted_positive()
    bins = c.bin_of(np.array([0.2999, 0.3, 0.9]))
    assert pos[bins].tolist() == [False, True, True]


def test_estimates_match_realized_on_calibrated_data_within_their_band() -> None:
    ref_s, ref_y = _miscalibrated(50_000, 3)
    c = fit_calibration(ref_s, ref_y)
    inside, total = 0, 0
    for seed in range(10, 20):
        s, y = _miscalibrated(5000, seed)
        pred = (s >= 0.5).astype(np.float64)
        for e in estimate_metrics(c, count_scores(c, s, pred)):
            real = {
                "roc_auc": m.roc_auc(y, s),
                "accuracy": m.accuracy(y, pred),
                "precision": m.precision(y, pred),
                "recall": m.recall(y, pred),
                "f1": m.f1(y, pred),
                "specificity": float((pred[y == 0] == 0).mean()),
            }[e.metric]
            assert e.estimated == pytest.approx(real, abs=0.03), e.metric
            inside += e.ci_low <= real <= e.ci_high
            total += 1
    assert inside / total >= 0.9


def test_counts_merge_exactly_like_the_concatenation() -> None:
    s, y = _calibrated(3000, 4)
    c = fit_calibration(s, y)
    a, b = s[:1234], s[1234:]
    pred = (s >= 0.5).astype(np.float64)
    merged = count_scores(c, a, pred[:1234]).merge(count_scores(c, b, pred[1234:]))
    assert merged == count_scores(c, s, pred)
    assert empty_counts(c).merge(merged) == merged


def test_non_finite_scores_are_counted_missing_and_left_out() -> None:
    s, y = _calibrated(3000, 5)
    c = fit_calibration(s, y)
    bad = np.array([np.nan, np.inf, 0.7])
    counts = count_scores(c, bad, np.array([0.0, 1.0, 1.0]))
    assert counts.missing == 2 and counts.n == 1


def test_zero_and_one_row_windows_are_insufficient_data() -> None:
    s, y = _calibrated(3000, 6)
    c = fit_calibration(s, y)
    ref = BinaryData(s, (s >= 0.5).astype(np.float64), y)
    for n in (0, 1):
        cur = BinaryData(s[:n], (s[:n] >= 0.5).astype(np.float64))
        results = estimate_binary(c, ref, cur)
        assert {r.status for r in results} == {"insufficient_data"}
        assert all(r.estimated is None and r.n == n for r in results)


def test_exactly_min_n_rows_is_enough() -> None:
    s, y = _calibrated(3000, 7)
    c = fit_calibration(s, y)
    ref = BinaryData(s, (s >= 0.5).astype(np.float64), y)
    cur = BinaryData(s[:30], (s[:30] >= 0.5).astype(np.float64))
    results = estimate_binary(c, ref, cur, EstimateOptions(min_n=30))
    assert all(r.status != "insufficient_data" and r.estimated is not None for r in results)


def test_a_worse_model_on_shifted_data_is_degraded_against_reference_chunks() -> None:
    ref_s, ref_y = _calibrated(20_000, 8, 0.5, 0.5)  # confident: high accuracy
    c = fit_calibration(ref_s, ref_y)
    cur_s, _ = _calibrated(5000, 9, 5.0, 5.0)  # scores near 0.5: many expected errors
    ref = BinaryData(ref_s, (ref_s >= 0.5).astype(np.float64), ref_y)
    cur = BinaryData(cur_s, (cur_s >= 0.5).astype(np.float64))
    results = {r.metric: r for r in estimate_binary(c, ref, cur)}
    assert results["accuracy"].status == "degraded"
    low = results["accuracy"].threshold_low
    assert low is not None and results["accuracy"].estimated is not None
    assert results["accuracy"].estimated < low


def test_slices_use_their_own_reference_rows_and_chunks_cover_current() -> None:
    s, y = _calibrated(6000, 10)
    region = np.where(np.arange(6000) % 2 == 0, "eu", "us").astype(object)
    c = fit_calibration(s, y)
    data = BinaryData(s, (s >= 0.5).astype(np.float64), y, {"region": region})
    results = estimate_binary(
        c, data, data, EstimateOptions(chunk_size=2500, metrics=("accuracy",))
    )
    keys = [(None if r.slice is None else r.slice["region"], r.chunk.index) for r in results
            if r.chunk is not None]  # fmt: skip
    assert keys == [(None, 0), (None, 1), (None, 2), ("eu", 0), ("eu", 1), ("eu", 2),
                    ("us", 0), ("us", 1), ("us", 2)]  # fmt: skip
    assert [r.n for r in results[:3]] == [2500, 2500, 1000]
    assert all(r.realized is not None for r in results)


def test_too_little_or_non_binary_reference_is_a_clear_error() -> None:
    s, y = _calibrated(50, 11)
    with pytest.raises(InputError, match="at least 100"):
        fit_calibration(s, y)
    s, _ = _calibrated(500, 12)
    with pytest.raises(InputError, match="0/1"):
        fit_calibration(s, np.full(500, 2.0))


def test_rows_without_a_prediction_are_left_out_not_counted_negative() -> None:
    s, y = _calibrated(3000, 13)
    c = fit_calibration(s, y)
    counts = count_scores(c, np.array([0.9, 0.9]), np.array([1.0, np.nan]))
    assert counts.n == 1 and counts.missing == 1
    assert counts.array()[:, 0].sum() == 0  # nothing counted as predicted negative
