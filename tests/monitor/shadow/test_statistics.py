"""Paired statistics against scipy/statsmodels oracles, and the summary's merge property:
merge(a, b) is the summary of the concatenated pairs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from monitor.shadow import (
    LabelledPair,
    PairOutcome,
    ShadowSummary,
    flip_interval,
    label_outcome,
    mcnemar_exact,
    pair_outcome,
    paired_difference,
)
from tests.properties import examples


@pytest.mark.parametrize("b,c", [(0, 0), (0, 1), (1, 0), (3, 12), (12, 3), (7, 7), (40, 61)])
def test_mcnemar_exact_is_the_binomial_test_of_discordant_pairs(b: int, c: int) -> None:
    table = np.array([[50, b], [c, 30]])
    assert mcnemar_exact(b, c) == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-12)
    if b + c:
        assert mcnemar_exact(b, c) == pytest.approx(binomtest(b, b + c, 0.5).pvalue, abs=1e-12)


@pytest.mark.parametrize("flips,n", [(0, 10), (10, 10), (3, 200), (57, 1000), (1, 1)])
def test_flip_interval_is_wilson(flips: int, n: int) -> None:
    got = flip_interval(flips, n)
    assert got is not None
    low, high = proportion_confint(flips, n, alpha=0.05, method="wilson")
    assert got == pytest.approx((flips / n, low, high), abs=1e-12)
    assert flip_interval(0, 0) is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_paired_difference_matches_a_z_interval_of_the_differences(seed: int) -> None:
    d = np.random.default_rng(seed).choice([-1.0, 0.0, 1.0], size=300, p=[0.1, 0.75, 0.15])
    mean, low, high = paired_difference(len(d), float(d.sum()), float((d * d).sum())) or ()
    stats = DescrStatsW(d)
    want = stats.zconfint_mean(alpha=0.05)
    # DescrStatsW's std_mean uses the n-1 variance: the same interval
    assert (mean, low, high) == pytest.approx((d.mean(), *want), abs=1e-12)
    assert paired_difference(1, 2.0, 4.0) == (2.0, None, None)
    assert paired_difference(0, 0.0, 0.0) is None


def test_pair_and_label_outcomes_per_task() -> None:
    got = pair_outcome(0.2, 0.7, (10.0, 15.0), "classification")
    assert got.flip is True and got.abs_diff == pytest.approx(0.5)
    assert got.latency_ratio == pytest.approx(1.5)
    assert pair_outcome({"output": 0.6}, 0.55, (None, 3.0), "classification").flip is False
    multi = pair_outcome({"cat": 0.7, "dog": 0.3}, "dog", (0.0, 1.0), "multiclass")
    assert (multi.flip, multi.abs_diff, multi.latency_ratio) == (True, None, None)
    reg = pair_outcome(3.0, 5.0, (1.0, 1.0), "regression")
    assert (reg.flip, reg.abs_diff) == (None, 2.0)
    assert label_outcome(0.2, 0.8, 1, "classification") == LabelledPair(False, True)
    assert label_outcome(0.2, 0.8, True, "classification", threshold=0.9) == LabelledPair(
        False, False
    )
    assert label_outcome(3.0, 5.0, 4.5, "regression") == LabelledPair(error_diff=-1.0)
    assert label_outcome("cat", "dog", "dog", "multiclass") == LabelledPair(False, True)
    assert label_outcome("not a score", 0.3, 1, "classification") is None


_floats = st.floats(0, 1000, allow_nan=False)
_pairs = st.lists(
    st.builds(
        PairOutcome,
        st.one_of(st.none(), st.booleans()),
        st.one_of(st.none(), _floats),
        st.one_of(st.none(), _floats),
    ),
    max_size=30,
)
_labelled = st.lists(
    st.one_of(
        st.builds(LabelledPair, st.booleans(), st.booleans()),
        st.builds(LabelledPair, error_diff=st.floats(-100, 100, allow_nan=False)),
    ),
    max_size=30,
)


def _close(a: ShadowSummary, b: ShadowSummary) -> None:
    for name, value in a.to_row().items():
        other = b.to_row()[name]
        if isinstance(value, float):
            assert value == pytest.approx(other, rel=1e-9, abs=1e-9), name
        else:
            assert value == other, name


@settings(max_examples=examples(60), deadline=None)
@given(_pairs, _pairs, _labelled, _labelled, st.integers(0, 5), st.integers(0, 5))
def test_merge_is_the_summary_of_the_concatenation(
    p1: list[PairOutcome],
    p2: list[PairOutcome],
    l1: list[LabelledPair],
    l2: list[LabelledPair],
    u1: int,
    u2: int,
) -> None:
    a = ShadowSummary.of(p1, l1, u1, u2)
    b = ShadowSummary.of(p2, l2, u2, u1)
    whole = ShadowSummary.of(p1 + p2, l1 + l2, u1 + u2, u2 + u1)
    _close(a.merge(b), whole)
    _close(a.merge(b), b.merge(a))
    _close(ShadowSummary().merge(a), a)
    _close(ShadowSummary.from_row(a.to_row()), a)
