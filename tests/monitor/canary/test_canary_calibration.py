"""The canary criteria on two versions that do not differ: the fast version of
bench/calibration_decisions.py's `canary` rows (the criteria imported, not changed).

The error-rate criterion is a one-sided two-proportion test at `canary.alpha` (0.01): it fails
at most at that rate. The outcome criterion is a point comparison with `metric_tolerance`
(0.02), not a test: no rate is promised, and it fails clean canaries often at small label
counts (docs/concepts/calibration.md, "Canary criteria").
"""

from __future__ import annotations

import pytest

from bench.calibration_decisions import canary_rows, failures

# Null simulations (seconds of CPU each): the full lane's; the fast lane stays under 90 s.
pytestmark = pytest.mark.slow


def test_the_error_rate_criterion_fails_at_most_at_alpha() -> None:
    assert failures(canary_rows(1_000, reps=600)) == []


def test_the_outcome_criterion_promises_no_rate_and_fails_clean_canaries_at_100_labels() -> None:
    # Measured: ~31% of clean canaries fail at 100 labels per version (accuracy 0.8).
    outcome = canary_rows(100, reps=300)[1]
    assert outcome.nominal is None and outcome.events / outcome.trials > 0.15
