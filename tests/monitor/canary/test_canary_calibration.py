"""The canary criteria on two versions that do not differ, and on a canary exactly at the
outcome tolerance: the fast version of bench/calibration_decisions.py's `canary` rows (the
criteria imported, not changed).

Both tests are one-sided at `canary.alpha` (0.01): the error-rate criterion a two-proportion
test, the outcome criterion a bound on the canary's shortfall (worse by more than
`metric_tolerance` at confidence 1 - alpha; docs/concepts/calibration.md, "Canary criteria").
Each fails at most at alpha; the outcome criterion still catches a canary well beyond the
tolerance.
"""

from __future__ import annotations

import pytest

from bench.calibration_decisions import canary_rows, failures
from monitor.canary._criteria import outcomes
from monitor.canary._evidence import Evidence
from monitor.config import ModelConfig
from monitor.config.serving import CanaryConfig
from monitor.outcomes import OutcomeResult

CFG = ModelConfig(name="m", canary=CanaryConfig(min_labels=100))


def accuracy(value: float, n: int) -> Evidence:
    return Evidence("v", outcomes=(OutcomeResult("accuracy", None, value, None, None, None,
                                                 None, n, "ok"),))  # fmt: skip


def test_the_outcome_criterion_fails_clean_canaries_at_most_at_alpha() -> None:
    # Measured (bench, 2,000 pairs a case): at most ~1% at 100 … 10,000 labels, equal or 0.02
    # worse; the test: 300 pairs at 1,000 labels, both cases (~0.2 s).
    assert failures(canary_rows(1_000, reps=300)) == []


@pytest.mark.slow
def test_the_error_rate_criterion_fails_at_most_at_alpha() -> None:
    assert failures(canary_rows(1_000, reps=600)) == []


def test_the_outcome_criterion_catches_a_canary_beyond_the_tolerance() -> None:
    # Measured power: 0.10 worse found in ~97% at 1,000 labels, 0.05 worse ~100% at 10,000.
    (far,) = canary_rows(1_000, reps=200, worse=(0.10,))
    (near,) = canary_rows(10_000, reps=100, worse=(0.05,))
    assert far.power and far.events / far.trials > 0.9
    assert near.events / near.trials > 0.95


def test_the_outcome_criterion_at_its_edges() -> None:
    # too few labels (none at all) is no verdict, as before
    (none,) = outcomes(accuracy(0.8, 1_000), accuracy(0.0, 0), CFG)
    assert none.status == "insufficient_data" and none.p_value is None
    # all correct on both sides: nothing worse, whatever the size
    (perfect,) = outcomes(accuracy(1.0, 100), accuracy(1.0, 100), CFG)
    assert perfect.status == "ok" and perfect.p_value == 1.0
    # a shortfall of exactly the tolerance never fails, even with a million labels
    (edge,) = outcomes(accuracy(0.8, 10**6), accuracy(0.78, 10**6), CFG)
    assert edge.status == "ok" and edge.threshold == pytest.approx(0.78)
    # just beyond it with that many labels does; at 100 labels the same drop does not
    (beyond,) = outcomes(accuracy(0.8, 10**6), accuracy(0.77, 10**6), CFG)
    assert beyond.status == "fail" and beyond.p_value is not None and beyond.p_value < 0.01
    (small,) = outcomes(accuracy(0.8, 100), accuracy(0.77, 100), CFG)
    assert small.status == "ok" and small.p_value is not None and small.p_value > 0.1
    # the p-value agrees with the verdict at alpha: a drop just past the 99% bound fails
    (big,) = outcomes(accuracy(0.8, 1_000), accuracy(0.72, 1_000), CFG)
    assert big.status == "fail" and big.p_value is not None and big.p_value < 0.01
    (mid,) = outcomes(accuracy(0.8, 1_000), accuracy(0.75, 1_000), CFG)
    assert mid.status == "ok" and mid.p_value is not None and 0.01 < mid.p_value < 0.5
