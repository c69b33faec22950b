"""Drift verdicts keep their promised false-alarm rate: the fast version of bench/calibration.py.

Under no drift (reference and current drawn from one distribution) a column's ``drift`` status
is promised at a rate of at most ``DEFAULT_ALPHA`` (0.01), and a p-value below 0.05 at most 5%
of the time. Each case simulates seeded null pairs through the real detectors and fails when a
rate's one-sided 99.9% Clopper-Pearson bound lies above its nominal rate
(`bench.calibration.exceeds`), so a test fails on a miscalibrated method, not on an unlucky
draw. The full table (every method x column kind x size 30..1M, power at documented shifts) is
`bench/calibration.py`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.calibration import P_CHECK, Case, exceeds, run_case, wilson
from monitor.detectors import DEFAULT_ALPHA, evaluate
from monitor.profiles import profile_frame, specs_for

# Null simulations (seconds of CPU each): the full lane's; the fast lane stays under 90 s.
pytestmark = pytest.mark.slow

# (case, null pairs): every registered method of the column's kind is run on each pair.
CASES = [
    # The winner's curse: top-50 buckets of 1,000 equally likely values chosen by the reference
    # alarmed by `evidence` on ~every clean pair at 100k rows (p ~ 1e-9; the full table: 0.3).
    (Case("cat1000u", 100_000), 60),
    # ... and by the threshold rule in small windows (JS > 0.1 with p < 0.01: 85% of pairs).
    (Case("cat1000u", 1_000), 120),
    (Case("cat1000u", 10_000, sliced=True), 60),
    (Case("cat100z", 1_000), 120),
    (Case("cat10u", 1_000), 120),
    (Case("continuous", 1_000), 120),
    (Case("discrete", 10_000), 80),
    (Case("binary", 100), 120),
    # Bounds from the reference's own chunk-to-whole variability: chosen on the reference and
    # tested against it, they sit lower than constant ones; the p-value still has to pass.
    (Case("continuous", 1_000, thresholds="reference"), 60),
    (Case("cat100z", 1_000, thresholds="reference"), 60),
]


def _failures(case: Case, reps: int) -> list[str]:
    out = []
    for method, t in run_case(case, reps, power=False).tallies.items():
        if exceeds(t.null_drift, t.reps, DEFAULT_ALPHA):
            out.append(f"{method}: false alarms {t.null_drift}/{t.reps}")
        if exceeds(t.null_p_small, t.null_p_reps, P_CHECK):
            out.append(f"{method}: p < {P_CHECK} in {t.null_p_small}/{t.null_p_reps}")
    return out


IDS = [f"{c.label}-{c.size}".replace(" ", "") for c, _ in CASES]


@pytest.mark.parametrize(("case", "reps"), CASES, ids=IDS)
def test_no_method_alarms_on_clean_data_beyond_its_nominal_rate(case: Case, reps: int) -> None:
    assert _failures(case, reps) == []


def _same_distribution(rng: np.random.Generator, n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two samples of the discrete columns of test_discrete.py's old property."""
    weights = [rng.integers(1, 31, k).astype(float) for k in (2, rng.integers(3, 11), 40)]
    labels = np.array([f"class{v}" for v in range(40)], dtype=object)
    frames = []
    for _ in range(2):
        named = zip(("flag", "rating", "label"), weights, strict=True)
        cols = {name: rng.choice(w.size, n, p=w / w.sum()) for name, w in named}
        cols["label"] = labels[cols["label"]]
        cols["rare"] = rng.choice(["a", "b", "c", "d"], n, p=[0.9, 0.0995, 0.0004, 0.0001])
        frames.append(pd.DataFrame(cols))
    return frames[0], frames[1]


@pytest.mark.parametrize("n", [1_000, 10_000])
def test_a_same_distribution_frame_alarms_at_most_at_the_nominal_rate(n: int) -> None:
    # Not "never": a 40-category column at n=1000 does alarm on clean data now and then, as a
    # test at level alpha must. The promise is the rate: one evaluation (4 columns, BH across
    # them) reports any drift at most alpha of the time.
    rng = np.random.default_rng(36 + n)
    reps, alarms = 150, 0
    for _ in range(reps):
        ref, cur = _same_distribution(rng, n)
        specs = specs_for(list(ref.columns), ref)
        results = evaluate(profile_frame(ref, specs), profile_frame(cur, specs))
        alarms += any(r.status == "drift" for r in results)
    assert not exceeds(alarms, reps, DEFAULT_ALPHA), (alarms, reps, wilson(alarms, reps))


def test_the_flag_needs_the_interval_wholly_above_the_nominal_rate() -> None:
    # 7 of 40 at a true rate of 5% happens 1.4% of the time: not a finding.
    assert not exceeds(0, 100, 0.01) and not exceeds(3, 100, 0.01) and not exceeds(7, 40, 0.05)
    assert exceeds(12, 100, 0.01) and exceeds(60, 60, 0.05)
    lo, hi = wilson(5, 100)
    assert lo < 0.05 < hi
