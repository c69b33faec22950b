"""Outcome degradation keeps its promised false-alarm rate: the fast version of
bench/calibration_decisions.py's `outcomes` rows.

Labelled windows of a calibrated classifier (and of a regressor), baseline = each metric's
population value, tolerance 0: a result is `degraded` when its whole 95% interval lies beyond
the baseline, so at most 2.5% of results per metric, whole windows and slices alike (each
result at 95%: `correction: per_result`), and at most 2.5% of evaluations with any `degraded`
result under `correction: family` (the rows' "any result, family"; `test_family.py` has the
fast one). A test fails when a rate's one-sided 99.9% Clopper-Pearson bound lies above 0.025
(`bench.calibration.exceeds`).
"""

from __future__ import annotations

import pytest

from bench.calibration_decisions import failures, outcome_rows

# Null simulations (seconds of CPU each): the full lane's; the fast lane stays under 90 s.
pytestmark = pytest.mark.slow

PROPORTIONS = ("accuracy", "precision", "recall")  # Wilson intervals: cheap, more reps
BOOTSTRAPPED = ("f1", "roc_auc", "log_loss")  # percentile bootstrap: fewer reps
REGRESSION = ("mae", "rmse", "mape")  # normal intervals from moments
# ECE: bias-corrected value, interval from its noise's upper bound (tests below)


@pytest.mark.parametrize("sliced", [False, True], ids=["whole", "4-slices"])
def test_wilson_metrics_degrade_at_most_at_the_nominal_rate(sliced: bool) -> None:
    assert failures(outcome_rows(400 if sliced else 100, 200, PROPORTIONS, sliced)) == []


def test_bootstrapped_metrics_degrade_at_most_at_the_nominal_rate() -> None:
    assert failures(outcome_rows(200, 30, BOOTSTRAPPED, sliced=False)) == []


@pytest.mark.parametrize("sliced", [False, True], ids=["whole", "4-slices"])
def test_regression_metrics_degrade_at_most_at_the_nominal_rate(sliced: bool) -> None:
    assert failures(outcome_rows(400 if sliced else 200, 60, REGRESSION, sliced)) == []


@pytest.mark.parametrize(("size", "reps", "sliced"), [(100, 300, False), (1_000, 150, False),
                                                     (400, 100, True)])  # fmt: skip
def test_ece_degrades_at_most_at_the_nominal_rate(size: int, reps: int, sliced: bool) -> None:
    """The bias-corrected ECE's interval (`monitor.outcomes._ece`) keeps the rate at a
    calibrated model, whose plug-in ECE is biased up by ~1/sqrt(n)."""
    assert failures(outcome_rows(size, reps, ("ece",), sliced)) == []
