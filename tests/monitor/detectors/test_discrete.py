"""Discrete numeric columns (0/1 flags, hard labels, small integers): exact per-value buckets.

Oracles are scipy's: chi-square on the raw value counts, and the JS distance of the raw value
proportions. The binned statistics must equal the exact ones, so every detector, and every
null drawn from the buckets, sees the real distribution.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon
from scipy.stats import chi2_contingency

from monitor.detectors import evaluate, get_detector
from monitor.detectors._base import Pair
from monitor.detectors.compare import compare
from monitor.profiles import (
    ProfileSet,
    profile_frame,
    profile_from_bytes,
    spec_from_dict,
    spec_from_reference,
    specs_for,
)
from monitor.reports._explain import explain
from tests.properties import examples

ALL_NUMERIC = ["wasserstein", "jensen_shannon", "chi2", "psi", "ks", "l_infinity", "hellinger"]


def _column(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    # Rows in a shuffled order: the profile must not depend on it.
    out = np.repeat(values, counts).astype(np.float64)
    np.random.default_rng(0).shuffle(out)
    return out


def _drift(ref: np.ndarray, cur: np.ndarray, **kw: object) -> list:
    specs = specs_for(["x"], pd.DataFrame({"x": ref}))
    sets = [profile_frame(pd.DataFrame({"x": v}), specs) for v in (ref, cur)]
    return evaluate(sets[0], sets[1], **kw)  # type: ignore[arg-type]


@st.composite
def shifted(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Distinct values, reference counts, current counts after moving mass between two values."""
    k = draw(st.integers(2, 10))
    values = np.array(sorted(draw(st.sets(st.integers(-50, 1000), min_size=k, max_size=k))))
    weights = np.array(draw(st.lists(st.integers(1, 30), min_size=k, max_size=k)), float)
    n = draw(st.sampled_from([1_000, 10_000, 100_000]))
    i, j = draw(st.lists(st.integers(0, k - 1), min_size=2, max_size=2, unique=True))
    share = draw(st.floats(0.05, 1.0))
    p = weights / weights.sum()
    q = p.copy()
    q[i] -= share * p[i]
    q[j] += share * p[i]
    ref = np.maximum(np.round(p * n).astype(int), 1)
    cur = np.round(q * n).astype(int)
    return values, ref, cur, n


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shifted())
def test_a_mass_shift_chi_square_finds_is_flagged(case: tuple) -> None:
    values, ref_counts, cur_counts, _ = case
    p_raw = chi2_contingency(np.stack([ref_counts, cur_counts]))[1]
    exact = float(jensenshannon(ref_counts / ref_counts.sum(), cur_counts / cur_counts.sum()))
    (result,) = _drift(_column(values, ref_counts), _column(values, cur_counts))
    # Exact counts: the statistic is the JS distance of the raw value proportions.
    assert result.method == "jensen_shannon"
    assert result.value == pytest.approx(exact, abs=1e-9)
    if p_raw < 1e-6:  # whatever the effect size, at 1k, 10k and 100k rows
        assert result.status == "drift", (exact, p_raw, result)
    if result.status == "drift" and exact <= result.threshold:
        # The user sees which rule decided: p below the evidence alpha, value within bound.
        assert result.decided_by == "evidence" and result.to_dict()["decided_by"] == "evidence"
        assert result.p_value is not None and result.p_value < 1e-6
    if exact < result.threshold and p_raw > 1e-4:
        assert result.status == "ok"


def test_a_value_the_reference_never_saw_is_not_overwhelming_evidence() -> None:
    # 1 row in 1,000 of a value absent from 100,000 reference rows: Pearson's chi² on the raw
    # cells is ~100 (p ~ 1e-23), but its expected count is 0.01; pooled, it is noise.
    ref = pd.DataFrame({"c": np.repeat(["a", "b"], [60_000, 40_000]).astype(object)})
    cur = pd.DataFrame({"c": np.repeat(["a", "b", "zzz"], [600, 399, 1]).astype(object)})
    assert chi2_contingency(np.array([[60_000, 40_000, 0], [600, 399, 1]]))[1] < 1e-6
    specs = specs_for(["c"], ref)
    (result,) = evaluate(profile_frame(ref, specs), profile_frame(cur, specs))
    assert result.status == "ok" and result.evidence_alpha == 1e-6


def test_a_small_overwhelming_shift_is_drift_by_evidence_and_the_alpha_is_configurable() -> None:
    # Positive rate 0.50 -> 0.52 at 100k rows: JS 0.014 (far under 0.1), chi² p ~ 1e-19.
    ref = _column(np.array([0, 1]), np.array([50_000, 50_000]))
    cur = _column(np.array([0, 1]), np.array([48_000, 52_000]))
    (result,) = _drift(ref, cur)
    assert result.status == "drift" and result.decided_by == "evidence"
    assert result.value is not None and result.value < result.threshold
    assert result.p_value is not None and result.p_value < 1e-15
    why = explain(result, alpha=0.01, min_n=30)
    assert "within the threshold, but overwhelming evidence (p < evidence alpha 1e-06)" in why
    (strict,) = _drift(ref, cur, evidence_alpha=1e-30)
    assert strict.status == "ok" and strict.decided_by is None


def test_the_evidence_rule_does_not_apply_to_binned_numeric_columns() -> None:
    rng = np.random.default_rng(3)
    ref, cur = rng.normal(0, 1, 100_000), rng.normal(0.03, 1, 100_000)
    (result,) = _drift(ref, cur)
    assert result.method == "wasserstein" and result.evidence_alpha is None
    assert result.status == "ok"


def test_census_prediction_share_drop_is_flagged_by_every_method() -> None:
    # The census employment case: share of positive predictions 0.538 -> 0.311.
    ref = _column(np.array([0, 1]), np.array([4620, 5380]))
    cur = _column(np.array([0, 1]), np.array([6890, 3110]))
    (default,) = _drift(ref, cur)
    assert default.status == "drift" and default.method == "jensen_shannon"
    assert default.value == pytest.approx(jensenshannon([0.462, 0.538], [0.689, 0.311]))
    for result in _drift(ref, cur, methods=ALL_NUMERIC):
        assert result.status == "drift", result
        assert result.p_value is not None and result.p_value < 1e-6


def test_flag_going_from_49_to_80_percent_positive_and_top_values_shift() -> None:
    flag = _drift(
        _column(np.array([0, 1]), np.array([510, 490])),
        _column(np.array([0, 1]), np.array([200, 800])),
    )
    assert flag[0].status == "drift"
    # 10% of the rows move between the two largest of five values: JS is exact (0.26, not 0.02).
    values = np.array([1, 2, 3, 4, 5])
    ref_counts = np.array([100, 100, 100, 100, 600]) * 10
    cur_counts = np.array([100, 100, 100, 200, 500]) * 10
    (r,) = _drift(_column(values, ref_counts), _column(values, cur_counts))
    exact = jensenshannon(ref_counts / 10_000, cur_counts / 10_000)
    assert r.value == pytest.approx(exact, abs=1e-12)


def test_discrete_spec_has_one_bucket_per_value_and_survives_the_codec() -> None:
    spec = spec_from_reference("flag", [0, 1, 1, 0, 1])
    assert spec.discrete and spec.edges == (0.0, 1.0, 1.0)
    profile = spec.profile([0, 1, 1, 2, -1])
    assert profile.counts.tolist() == [1, 1, 2, 1]  # under, 0, 1, over
    again = profile_from_bytes(profile.to_bytes())
    assert again.spec == spec and again.spec.fingerprint == spec.fingerprint
    many = spec_from_reference("c", np.arange(65.0), bins=64)
    assert not many.discrete  # more distinct values than bins: quantile edges


def test_heavy_repeated_values_get_their_own_bucket() -> None:
    rng = np.random.default_rng(1)
    # Zero-inflated and capped: 40% zeros, 20% at the cap 100, the rest continuous.
    x = np.concatenate([np.zeros(4000), np.full(2000, 100.0), rng.uniform(0, 100, 4000)])
    spec = spec_from_reference("amount", x)
    counts = spec.profile(x).counts
    assert 4000 in counts.tolist() and 2000 in counts.tolist()
    moved = np.concatenate([np.zeros(3000), np.full(2000, 100.0), rng.uniform(0, 1, 5000)])
    pair = (spec.profile(x), spec.profile(moved))
    js = compare(get_detector("jensen_shannon"), *pair, 0.1)
    assert js.status == "drift"


def test_a_baseline_stored_with_an_old_spec_still_loads_and_compares() -> None:
    # Before discrete specs a 0/1 column was one closed [0, 1] bin; its stored dict has no
    # "discrete" key. It must load, keep its fingerprint and compare (as it did).
    old = {
        "column": "flag",
        "kind": "numeric",
        "edges": [0.0, 1.0],
        "categories": [],
        "tail": [],
        "tail_complete": True,
    }
    spec = spec_from_dict(old)
    assert spec.to_dict() == old and not spec.discrete
    ref = spec.profile(np.repeat([0.0, 1.0], [462, 538]))
    cur = profile_from_bytes(spec.profile(np.repeat([0.0, 1.0], [689, 311])).to_bytes())
    results = evaluate(
        ProfileSet({("", "flag"): ref}, {"": 1000}, (), {"flag": spec}),
        ProfileSet({("", "flag"): cur}, {"": 1000}, (), {"flag": spec}),
    )
    # Compared on its own (coarse) buckets; `baseline create` again gives exact ones.
    assert [r.method for r in results] == ["wasserstein"] and results[0].value is not None


def test_hellinger_joins_values_into_equal_runs_and_rare_ones_for_the_smaller_sample() -> None:
    # Values 0..3 with shares 0.50 / 0.47 / 0.02 / 0.01: Sturges' 3 runs for 4 values, so 0
    # and 1 (over a third each) stand alone and 2 and 3 share a run; at 100 rows that run
    # expects 3 rows, under 5, and joins the value before it.
    spec = spec_from_reference("x", np.repeat([0.0, 1.0, 2.0, 3.0], [500, 470, 20, 10]))
    ref = spec.profile(np.repeat([0.0, 1.0, 2.0, 3.0], [5000, 4700, 200, 100]))
    hellinger = get_detector("hellinger")

    def expected(p: list[float], q: list[float]) -> float:
        a, b = np.asarray(p) / sum(p), np.asarray(q) / sum(q)
        return float(np.sqrt(0.5 * np.square(np.sqrt(a) - np.sqrt(b)).sum()))

    small = spec.profile(np.repeat([0.0, 1.0, 2.0, 3.0], [50, 40, 0, 10]))
    score = hellinger.score(Pair(ref, small))
    assert score == pytest.approx(expected([5000, 5000], [50, 50]))
    large = spec.profile(np.repeat([0.0, 1.0, 2.0, 3.0], [5000, 4000, 0, 1000]))
    score = hellinger.score(Pair(ref, large))
    assert score == pytest.approx(expected([5000, 4700, 300], [5000, 4000, 1000]))
