"""Small windows' bands: CBPE's the exact interval of the realized metric (`_exact`) instead of
±3 normal standard errors, which miss a skewed, discrete metric (a precision over a few dozen
predicted positives near 1) far more often than the promised 0.27%; DLE's MSE and RMSE a gamma
interval (a mean of squared losses is right-skewed).

The miss probabilities here are exact: the window's true positives and false negatives are
binomial (one calibrated probability per predicted class), computed with scipy's binomial
rather than the estimator's own FFT."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, chi2

from monitor.estimation import count_scores, estimate_metrics
from monitor.estimation._calibration import Calibration
from monitor.estimation._counts import ScoreCounts
from monitor.estimation._exact import (
    EXACT_METRICS,
    TAIL,
    exact_intervals,
    gamma_interval,
    poisson_binomial,
)
from monitor.estimation._metrics import _ESTIMATORS as ESTIMATORS
from monitor.estimation._metrics import METRICS, band, expected
from monitor.estimation._regression import LossModel, LossSums, RegressionModel, estimate_losses

NOMINAL = 2 * TAIL  # 0.0027: the normal two-sided tail at 3 SE
REFERENCE = 5_000


def _model(q_negative: float, q_positive: float) -> Calibration:
    """Two bins split at the threshold 0.5, each with one calibrated probability."""
    return Calibration((0.5,), (q_negative, q_positive), (REFERENCE // 2,) * 2, 0.5, 0.0)


def _realized(
    negatives: int, positives: int, qn: float, qp: float
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every (TP, FN) of the window, its probability, and each metric's value there."""
    tp, fn = np.meshgrid(np.arange(positives + 1.0), np.arange(negatives + 1.0), indexing="ij")
    weight = np.outer(binom.pmf(np.arange(positives + 1), positives, qp),
                      binom.pmf(np.arange(negatives + 1), negatives, qn))  # fmt: skip
    tn, fp = negatives - fn, positives - tp
    with np.errstate(invalid="ignore", divide="ignore"):
        values = {
            "accuracy": (tp + tn) / (positives + negatives),
            "precision": tp / positives,
            "recall": np.nan_to_num(tp / (tp + fn)),
            "f1": 2 * tp / (tp + fn + positives),
            "specificity": np.nan_to_num(tn / (tn + fp)),
        }
    return values, weight


def _miss(value: np.ndarray, weight: np.ndarray, low: float, high: float) -> float:
    return float(weight[(value < low - 1e-12) | (value > high + 1e-12)].sum())


@pytest.mark.parametrize(("positives", "qp", "qn"), [(30, 0.9, 0.3), (25, 0.95, 0.1)])
def test_exact_band_covers_a_skewed_small_window_the_normal_band_misses(
    positives: int, qp: float, qn: float
) -> None:
    calibration, negatives = _model(qn, qp), 100 - positives
    counts = ScoreCounts(((negatives, 0), (0, positives)))
    values, weight = _realized(negatives, positives, qn, qp)
    e = expected(calibration, counts)
    new = {r.metric: r for r in estimate_metrics(calibration, counts)}
    old = {m: band(m, *ESTIMATORS[m](e), 100, REFERENCE) for m in EXACT_METRICS}
    # the normal band: the precision near 1 misses 0.0072-0.0078, 2.7-2.9x the promise
    assert _miss(values["precision"], weight, old["precision"].ci_low, 1.0) > 2.5 * NOMINAL
    for m in EXACT_METRICS:
        assert _miss(values[m], weight, new[m].ci_low, new[m].ci_high) <= NOMINAL, m
        assert new[m].ci_low <= new[m].estimated <= new[m].ci_high, m


def test_poisson_binomial_is_the_convolution_of_binomials() -> None:
    rows, q = np.array([3.0, 0.0, 5.0, 2.0]), np.array([0.2, 0.5, 0.7, 0.99])
    pmf = np.ones(1)
    for k, p in zip(rows.astype(int), q, strict=True):
        pmf = np.convolve(pmf, binom.pmf(np.arange(k + 1), k, p))
    first, got = poisson_binomial(rows, q)
    assert first + got.size <= pmf.size
    assert got == pytest.approx(pmf[first : first + got.size], abs=1e-12)
    assert pmf[:first].sum() + pmf[first + got.size :].sum() < 1e-12
    # 400 rows: a DFT of 224 points, aliased, still exact around the mean
    rows, q = np.array([150.0, 250.0]), np.array([0.02, 0.6])
    first, got = poisson_binomial(rows, q)
    pmf = np.convolve(binom.pmf(np.arange(151), 150, 0.02), binom.pmf(np.arange(251), 250, 0.6))
    assert got == pytest.approx(pmf[first : first + got.size], abs=1e-12)
    assert pmf[:first].sum() + pmf[first + got.size :].sum() < 1e-12
    assert poisson_binomial(np.zeros(3), np.full(3, 0.5)) == (0, pytest.approx([1.0]))


def test_intervals_leave_at_most_the_tail_on_each_side() -> None:
    values, weight = _realized(60, 40, 0.25, 0.8)
    got = exact_intervals(np.array([[60.0, 0.0], [0.0, 40.0]]), np.array([0.25, 0.8]),
                          EXACT_METRICS)  # fmt: skip
    for m, (low, high) in got.items():
        assert float(weight[values[m] < low - 1e-12].sum()) <= TAIL, m
        assert float(weight[values[m] > high + 1e-12].sum()) <= TAIL, m
        # and no narrower: one step further in would leave more than the tail outside
        assert float(weight[values[m] <= low + 1e-12].sum()) > TAIL, m
        assert float(weight[values[m] >= high - 1e-12].sum()) > TAIL, m


@pytest.mark.parametrize(
    "cells",
    [
        ((0, 0), (0, 0)),  # no rows
        ((1, 0), (0, 0)),  # one row
        ((0, 0), (0, 1)),
        ((0, 0), (0, 60)),  # every row predicted positive
        ((60, 0), (0, 0)),  # every row predicted negative
    ],
)
@pytest.mark.parametrize(("qn", "qp"), [(0.3, 0.9), (0.0, 1.0)])
def test_tiny_and_one_class_windows_give_finite_bands_around_the_estimate(
    cells: tuple[tuple[int, int], ...], qn: float, qp: float
) -> None:
    for r in estimate_metrics(_model(qn, qp), ScoreCounts(cells)):
        assert r.metric in METRICS
        assert all(math.isfinite(v) for v in (r.estimated, r.se, r.ci_low, r.ci_high)), r
        assert 0.0 <= r.ci_low <= r.estimated <= r.ci_high <= 1.0, r


def test_windows_of_exact_rows_and_more_keep_the_normal_band() -> None:
    calibration = _model(0.3, 0.9)
    scores = np.repeat([0.2, 0.7], 500)
    counts = count_scores(calibration, scores)
    e = expected(calibration, counts)
    for r in estimate_metrics(calibration, counts):
        assert r == band(r.metric, *ESTIMATORS[r.metric](e), 1_000, REFERENCE)


def test_small_window_mse_band_is_the_gamma_interval_a_chi_square_needs() -> None:
    # 100 rows of N(0, 1) errors: the realized MSE is chi-square(100) / 100 (mean 1, SE
    # sqrt(0.02)), exactly the gamma of that mean and SE. ±3 SE misses 0.0036 (0.0034 above).
    n, se = 100, math.sqrt(0.02)
    old_low, old_high = 1.0 - 3 * se, 1.0 + 3 * se
    assert chi2.cdf(old_low * n, n) + chi2.sf(old_high * n, n) > 1.2 * NOMINAL
    low, high = gamma_interval(1.0, se)
    assert chi2.cdf(low * n, n) == pytest.approx(TAIL, rel=1e-9)
    assert chi2.sf(high * n, n) == pytest.approx(TAIL, rel=1e-9)


def _regression_model(rows: int = REFERENCE) -> RegressionModel:
    """Loss models as estimate_losses reads them: only the reference's loss mean and std."""
    return RegressionModel((), {}, LossModel("absolute", "", 0.8, 0.6),
                           LossModel("squared", "", 1.0, math.sqrt(2.0)), rows)  # fmt: skip


def test_dle_small_windows_get_the_gamma_band_larger_ones_keep_nannymls() -> None:
    model = _regression_model()
    wider = math.sqrt(1 + 100 / REFERENCE)
    got = {e.metric: e for e in estimate_losses(model, LossSums(100, 80.0, 100.0))}
    low, high = gamma_interval(1.0, math.sqrt(2.0) / 10)
    assert (got["mse"].ci_low, got["mse"].ci_high) == pytest.approx(
        (1.0 - (1.0 - low) * wider, 1.0 + (high - 1.0) * wider)
    )
    assert got["rmse"].ci_high == pytest.approx(1.0 + (math.sqrt(high) - 1.0) * wider)
    assert got["mae"].ci_high == pytest.approx(0.8 + 3 * 0.06 * wider)  # MAE: normal
    # 1,000 rows and more: NannyML's ±3 sampling errors, widened (the oracle's chunk sizes)
    big = {e.metric: e for e in estimate_losses(model, LossSums(1_000, 800.0, 1_000.0))}
    half = 3 * math.sqrt(2.0 / (4 * 1_000)) * math.sqrt(1 + 1_000 / REFERENCE)
    assert (big["rmse"].ci_low, big["rmse"].ci_high) == pytest.approx((1.0 - half, 1.0 + half))


@pytest.mark.parametrize(
    "sums",
    [
        LossSums(0, 0.0, 0.0),
        LossSums(1, 0.8, 1.0),
        LossSums(1, 0.0, 0.0),
        LossSums(100, 0.0, 0.0),
        LossSums(30, 1e-9, 1e-12),
    ],  # fmt: skip
)
def test_dle_tiny_windows_give_finite_bands_around_the_estimate(sums: LossSums) -> None:
    for e in estimate_losses(_regression_model(), sums):
        assert all(math.isfinite(v) for v in (e.estimated, e.se, e.ci_low, e.ci_high)), e
        assert 0.0 <= e.ci_low <= e.estimated <= e.ci_high, e


def test_dle_gamma_band_never_falls_under_three_se_above() -> None:
    # an MSE 1e-6 of the reference's: the gamma of that mean and the reference's SE puts its
    # upper quantile near 0; the band keeps at least the normal +3 SE above
    got = {e.metric: e for e in estimate_losses(_regression_model(), LossSums(100, 0.0, 1e-4))}
    assert got["mse"].ci_high >= 1e-6 + 3 * math.sqrt(2.0) / 10
    assert got["rmse"].ci_high >= math.sqrt(1e-6 + 3 * math.sqrt(2.0) / 10) - 1e-12
