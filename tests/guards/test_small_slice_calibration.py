"""The gate's small-slice rules keep their promise: the fast version of
bench/calibration_decisions.py's `gate` rows.

Under `min_slice_rows` a flip-rate criterion fails only when the lower end of its exact 95%
interval lies above the limit, so a candidate whose true flip rate is the limit fails at most
2.5% of such slices (Wilson's lower end failed up to 15%: one flip in 30 rows breached a 0.5%
limit). Exact agreement passes at any size; what that does and does not promise is pinned
below (docs/concepts/calibration.md, "The gate's small slices").
"""

from __future__ import annotations

import pytest

from bench.calibration_decisions import failures, gate_rows
from guards._stats import exact_interval

# Null simulations (seconds of CPU each): the full lane's; the fast lane stays under 90 s.
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("n", "limit"), [(30, 0.005), (100, 0.005), (199, 0.03)])
def test_a_candidate_at_its_limit_fails_small_slices_at_most_at_the_nominal_rate(
    n: int, limit: float
) -> None:
    assert failures(gate_rows(n, limit, reps=600)) == []


def test_exact_agreement_on_fewer_than_3_over_limit_rows_does_not_bound_the_rate() -> None:
    # 0 flips in n rows: the exact 95% upper bound is ~3/n (the rule of three), above a 0.5%
    # limit below 600 rows. A candidate flipping 1.5% of rows passes 65% of 30-row slices.
    assert exact_interval(0, 30)[1] > 0.005 * 3 * 2
    assert exact_interval(0, 800)[1] < 0.005
    passes = gate_rows(30, 0.005, reps=600)[1]
    assert passes.events / passes.trials > 0.5


def test_exact_interval_is_exact_at_the_ends_and_contains_wilson_at_few_events() -> None:
    assert exact_interval(0, 90) == (0.0, pytest.approx(0.0401, abs=1e-4))
    assert exact_interval(90, 90)[1] == 1.0 and exact_interval(5, 0) == (0.0, 1.0)
    assert exact_interval(1, 30)[0] == pytest.approx(0.000844, abs=1e-5)
    with pytest.raises(ValueError):
        exact_interval(5, 4)
