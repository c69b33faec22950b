"""Outcome metrics from mergeable summaries agree with the raw-row computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.errors import InputError
from monitor.outcomes import evaluate_outcomes
from monitor.outcomes.from_summary import evaluate_summaries, roc_auc_error
from monitor.outcomes.summary import (
    ClassificationSummary,
    RegressionSummary,
    merge_summaries,
    summary_from_bytes,
    summary_to_bytes,
)
from tests.properties import examples

COUNTS = ("accuracy", "precision", "recall", "f1")
CLS = ("accuracy", "precision", "recall", "f1", "roc_auc", "log_loss", "ece")

scores = st.floats(0, 1, allow_nan=False)
pairs = st.lists(st.tuples(st.sampled_from([0.0, 1.0]), scores), min_size=0, max_size=300)
thresholds = st.sampled_from([0.5, 0.3, 0.7, 0.0, 1.0])


def _cls(rows: list[tuple[float, float]], threshold: float) -> ClassificationSummary:
    s = ClassificationSummary(threshold)
    y = np.array([r[0] for r in rows], dtype=np.float64)
    p = np.array([r[1] for r in rows], dtype=np.float64)
    s.add(y, p)
    return s


def _by_metric(results: list) -> dict[str, object]:
    return {r.metric: r for r in results}


@settings(max_examples=examples(150), deadline=None)
@given(pairs, pairs, thresholds)
def test_classification_summary_equals_raw(a: list, b: list, threshold: float) -> None:
    rows = a + b
    # Merged across two "windows" and round-tripped through storage, like a day's merge.
    merged = merge_summaries([_cls(a, threshold), _cls(b, threshold)])
    assert merged is not None
    summary = summary_from_bytes(summary_to_bytes(merged))
    assert isinstance(summary, ClassificationSummary)
    got = _by_metric(evaluate_summaries([(None, summary)], metrics=CLS, min_support=1))
    if not rows:
        assert all(r.status == "insufficient_data" for r in got.values())
        return
    y = [r[0] for r in rows]
    s = [r[1] for r in rows]
    raw = _by_metric(evaluate_outcomes(y, s, metrics=CLS, threshold=threshold, min_support=1))
    for name in CLS:
        mine, want = got[name], raw[name]
        assert mine.n == want.n, name
        assert mine.status == want.status or want.baseline_value is None, name
        if want.value is None:
            assert mine.value is None, name
            continue
        assert mine.value is not None, name
        if name in COUNTS:
            assert mine.value == want.value, name
            if name != "f1":
                assert (mine.ci_low, mine.ci_high) == (want.ci_low, want.ci_high)
        elif name == "roc_auc":
            assert abs(mine.value - want.value) <= roc_auc_error(summary) + 1e-12
        else:
            assert mine.value == pytest.approx(want.value, rel=1e-9, abs=1e-12), name


def test_roc_auc_error_is_small_for_spread_scores() -> None:
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 5000).astype(np.float64)
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0, 1)
    summary = ClassificationSummary(0.5)
    summary.add(y, s)
    assert roc_auc_error(summary) < 0.002
    got = _by_metric(evaluate_summaries([(None, summary)], metrics=["roc_auc"]))["roc_auc"]
    raw = _by_metric(evaluate_outcomes(y, s, metrics=["roc_auc"]))["roc_auc"]
    assert abs(got.value - raw.value) <= roc_auc_error(summary)
    assert got.ci_low < got.value < got.ci_high


def test_exact_threshold_counts_as_positive_and_bad_pairs_are_counted_not_scored() -> None:
    summary = ClassificationSummary(0.5)
    y = np.array([1.0, 0.0, 2.0, 1.0, np.nan, 0.0])
    s = np.array([0.5, 0.5, 0.9, 1.5, 0.2, np.inf])
    summary.add(y, s)
    assert summary.confusion.tolist() == [1, 1, 0, 0]  # tp, fp, tn, fn
    assert summary.invalid == 4


def test_removing_pairs_undoes_adding_them() -> None:
    summary = ClassificationSummary(0.5)
    y, s = np.array([1.0, 0.0, 1.0]), np.array([0.9, 0.2, 0.4])
    summary.add(y, s)
    summary.add(y[:1], s[:1], sign=-1)
    expected = ClassificationSummary(0.5)
    expected.add(y[1:], s[1:])
    assert summary_to_bytes(summary) == summary_to_bytes(expected)


def test_summaries_at_different_thresholds_do_not_merge() -> None:
    with pytest.raises(InputError, match="thresholds 0.5 and 0.3"):
        ClassificationSummary(0.5).merge(ClassificationSummary(0.3))


finite = st.floats(-1e6, 1e6, allow_nan=False).filter(lambda v: v == 0 or abs(v) > 1e-3)
reg_pairs = st.lists(st.tuples(finite, finite), min_size=0, max_size=200)


def _reg(rows: list[tuple[float, float]]) -> RegressionSummary:
    s = RegressionSummary()
    s.add(np.array([r[0] for r in rows], dtype=float), np.array([r[1] for r in rows], dtype=float))
    return s


@settings(max_examples=examples(150), deadline=None)
@given(reg_pairs, reg_pairs)
def test_regression_summary_equals_raw(a: list, b: list) -> None:
    rows = a + b
    merged = merge_summaries([_reg(a), _reg(b)])
    assert merged is not None
    summary = summary_from_bytes(summary_to_bytes(merged))
    got = _by_metric(evaluate_summaries([(None, summary)], task="regression", min_support=1))
    if not rows:
        assert all(r.value is None for r in got.values())
        return
    y = [r[0] for r in rows]
    p = [r[1] for r in rows]
    raw = _by_metric(evaluate_outcomes(y, p, task="regression", min_support=1))
    for name in ("mae", "rmse", "mape"):
        assert got[name].n == raw[name].n
        assert got[name].value == pytest.approx(raw[name].value, rel=1e-7, abs=1e-6), name
        assert got[name].ci_low <= got[name].value <= got[name].ci_high


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(finite, min_size=1, max_size=200), st.sampled_from([0.0, 0.5, 0.9, 1.0]))
def test_error_quantile_within_stated_accuracy(errors: list[float], q: float) -> None:
    summary = RegressionSummary()
    summary.add(np.array(errors), np.zeros(len(errors)))
    exact = sorted(abs(e) for e in errors)[math.floor(q * (len(errors) - 1))]
    got = summary.error_quantile(q)
    assert got is not None
    assert got == pytest.approx(exact, rel=0.0101, abs=1e-300)


def test_regression_skips_non_finite_pairs() -> None:
    summary = RegressionSummary()
    summary.add(np.array([1.0, np.nan, 3.0]), np.array([2.0, 1.0, np.inf]))
    assert (summary.n, summary.invalid, summary.sums["abs"]) == (1, 2, 1.0)


def test_threshold_sweep_matches_the_confusion_counts_on_the_bin_grid() -> None:
    rng = np.random.default_rng(5)
    # Scores at bin centres, so no score sits on a bin edge.
    s = (rng.integers(0, 1000, 2000) + 0.5) / 1000
    y = (rng.random(2000) < s).astype(np.float64)
    summary = ClassificationSummary(0.5)
    summary.add(y, s)
    grid = [0.0, 0.1, 0.25, 0.5, 0.731, 1.0]
    for t, (tp, fp, tn, fn) in zip(grid, summary.sweep(grid).tolist(), strict=True):
        pred = s >= t
        expected = [(pred & (y == 1)).sum(), (pred & (y == 0)).sum()]
        expected += [(~pred & (y == 0)).sum(), (~pred & (y == 1)).sum()]
        assert [tp, fp, tn, fn] == expected, t
    assert summary.sweep([0.5]).tolist() == [summary.confusion.tolist()]


def test_slices_evaluated_together_equal_each_evaluated_alone() -> None:
    # A window's slices are evaluated in one pass over their cells laid end to end; each
    # summary's metrics and intervals equal its evaluation alone (up to float rounding), also
    # for slices with one pair, one class only, every score in one bin, or disjoint bins.
    rng = np.random.default_rng(5)
    shapes = [
        [(float(rng.random() < 0.4), float(rng.random())) for _ in range(300)],
        [(1.0, 0.2)],
        [(0.0, float(rng.random())) for _ in range(40)],  # negatives only: no ROC-AUC
        [(1.0, float(rng.random())) for _ in range(40)],  # positives only
        [(float(i % 2), 0.73) for i in range(50)],  # one bin, both classes: tied
        [(float(i % 3 == 0), 0.9 + i / 1000) for i in range(60)],  # bins the others lack
    ]
    summaries = [(None, _cls(rows, 0.5)) for rows in shapes]
    together = evaluate_summaries(summaries, metrics=CLS, min_support=1)
    alone = [r for one in summaries for r in evaluate_summaries([one], metrics=CLS, min_support=1)]
    assert [(r.metric, r.n, r.status) for r in together] == [
        (r.metric, r.n, r.status) for r in alone
    ]
    for mine, want in zip(together, alone, strict=True):
        for got, expected in ((mine.value, want.value), (mine.ci_low, want.ci_low),
                              (mine.ci_high, want.ci_high)):  # fmt: skip
            assert (got is None) == (expected is None), mine.metric
            assert got is None or got == pytest.approx(expected, rel=1e-12, abs=1e-15)
    roc = [r for r in together if r.metric == "roc_auc"]
    assert roc[2].value is None and roc[4].value == 0.5  # no positives; all pairs tied


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_a_slice_under_min_support_is_insufficient_and_leaves_the_others_unchanged(
    task: str,
) -> None:
    # Its intervals are not drawn (every metric's support is at most its n); the other slices'
    # results are those they get without it. At exactly min_support it is evaluated.
    rng = np.random.default_rng(9)

    def summary(n: int) -> ClassificationSummary | RegressionSummary:
        y, p = (rng.random(n) < 0.5).astype(np.float64), rng.random(n)
        s = ClassificationSummary(0.5) if task == "classification" else RegressionSummary()
        s.add(y, p)
        return s

    big, small, edge = summary(200), summary(29), summary(30)
    both = evaluate_summaries([(None, big), ({"r": "a"}, small), ({"r": "b"}, edge)], task=task)  # type: ignore[arg-type]
    alone = evaluate_summaries([(None, big), ({"r": "b"}, edge)], task=task)  # type: ignore[arg-type]
    per = len(alone) // 2
    assert all(r.status == "insufficient_data" and r.value is None for r in both[per : 2 * per])
    assert all(r.n == 29 for r in both[per : 2 * per] if r.metric in ("accuracy", "mae"))
    assert both[:per] + both[2 * per :] == alone
    assert any(r.value is not None for r in both[2 * per :])
