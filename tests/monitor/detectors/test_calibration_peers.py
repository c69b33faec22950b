"""The matched false-alarm machinery of bench/calibration_peers.py, on tiny cases.

Power compared at an equal false-alarm rate is only fair if every tool's null rate is exactly
that rate (ties randomised) and if two tests of the same statistic come out level. Our binned
KS against scipy's exact `ks_2samp` on the same simulated windows is that pair.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.stats import ks_2samp

from bench.calibration_peers import (
    MODELWATCH,
    Arm,
    Cell,
    Scores,
    Tool,
    gaps,
    matched_power,
    run_cell,
)


def test_matched_power_randomises_ties_to_the_exact_rate() -> None:
    null = [0.0] * 90 + [1.0] * 10  # 10% of the null at the top value: half of it rejected
    assert matched_power(null, null, 0.05) == pytest.approx(0.05)
    assert matched_power(null, [1.0] * 4 + [2.0] * 6, 0.05) == pytest.approx(0.6 + 0.4 * 0.5)
    assert matched_power(list(range(100)), [50.0, 99.5], 0.05) == pytest.approx(0.5)


class _ScipyKS:
    def __init__(self, reference: Any) -> None:
        self.reference = np.asarray(reference)

    def score(self, current: Any) -> Scores:
        p = float(ks_2samp(self.reference, np.asarray(current)).pvalue)
        return {"ks": (-np.log10(max(p, 1e-300)), p < 0.05)}


SCIPY = Tool("scipy", lambda reference, kind, methods, window: _ScipyKS(reference))


@pytest.mark.slow  # ~1-2 s: 200 windows through both tests
def test_our_ks_has_scipys_power_at_the_same_false_alarm_rate() -> None:
    shared = {"ks": {"modelwatch": "ks", "scipy": "ks"}}
    cell = run_cell("continuous", 100, [MODELWATCH, SCIPY], refs=4, per_ref=25, shared=shared)
    ours, theirs = cell.arms["ks", "modelwatch"], cell.arms["ks", "scipy"]
    assert len(ours.null) == len(theirs.shift) == 100
    power = [matched_power(a.null, a.shift, 0.05) for a in (ours, theirs)]
    # The shift (mean + 0.3 sd at 100 rows) is found about half the time by both.
    assert 0.2 < power[1] < 0.9
    assert power[0] == pytest.approx(power[1], abs=0.12)


class _SturgesHellinger:
    """Evidently 0.7's numeric Hellinger (`hellinger_distance.py`), without its ~4 s import:
    the histogram over Sturges bins of the two samples' distinct values."""

    def __init__(self, reference: Any) -> None:
        self.reference = np.asarray(reference)

    def score(self, current: Any) -> Scores:
        cur = np.asarray(current)
        edges = np.histogram_bin_edges(np.union1d(self.reference, cur), bins="sturges")
        p = np.histogram(self.reference, edges)[0] / self.reference.size
        q = np.histogram(cur, edges)[0] / cur.size
        value = float(np.sqrt(1 - min(np.sqrt(p * q).sum(), 1.0)))
        return {"hellinger": (value, value >= 0.1)}


STURGES = Tool("sturges", lambda reference, kind, methods, window: _SturgesHellinger(reference))


@pytest.mark.slow  # ~1.5 s: 200 windows of 10,000 rows through both
def test_our_discrete_hellinger_has_evidentlys_power_at_the_same_false_alarm_rate() -> None:
    # One bucket per value found the mean shift of binomial(9, 0.4) 0.40 of the time here
    # against Sturges bins' 0.69; runs of equal mass find it as often or more (0.74).
    shared = {"hellinger": {"modelwatch": "hellinger", "sturges": "hellinger"}}
    cell = run_cell("discrete", 10_000, [MODELWATCH, STURGES], refs=5, per_ref=20, shared=shared)
    ours, theirs = (matched_power(a.null, a.shift, 0.05) for a in cell.arms.values())
    assert 0.3 < theirs < 0.9
    assert ours >= theirs - 0.03


def test_gaps_report_the_smallest_difference_to_the_best_peer_with_its_interval() -> None:
    null = [float(i) for i in range(100)]  # a 5% threshold at 95: above it, drift
    strong, weak = [200.0] * 80 + [0.0] * 20, [200.0] * 50 + [0.0] * 50
    arms = {
        ("chi2", "modelwatch"): Arm(null, strong, 1, 80),
        ("chi2", "NannyML"): Arm(null, weak, 10, 50),
        ("l_infinity", "modelwatch"): Arm(null, weak, 0, 50),
        ("l_infinity", "NannyML"): Arm(null, strong, 10, 80),
    }
    header, table = gaps([Cell("cat10u", 100, arms)], 0.05)
    assert header == ["column", "100 rows", "worst FAR at default"]
    [(column, cell, far)] = table
    assert column == "cat10u"
    assert cell.startswith("-0.30 [") and cell.endswith("] l_infinity; max +0.30 chi2")
    lo, hi = (float(x) for x in cell.split("[")[1].split("]")[0].split(", "))
    assert lo <= -0.30 <= hi < 0  # the same windows: a gap this size is resolved
    assert far == "0.01 / nan / 0.10"  # Evidently ran no method here
