"""The window path of estimation: a `__cbpe_score` profile gives exactly the counts the raw rows
give, profiles merge into the counts of the concatenation, and a window's rows keep the edge
policy (empty, one row, non-finite scores, an estimate exactly at its threshold)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from monitor.errors import CorruptProfileError
from monitor.estimation import (
    ERROR_COLUMN,
    SCORE_COLUMN,
    Calibration,
    count_scores,
    fit_calibration,
    fit_reconstruction,
    score_spec,
)
from monitor.estimation._columns import score_counts
from monitor.estimation._metrics import Estimate
from monitor.estimation._run import judge
from monitor.estimation._stored import StoredEstimation
from monitor.estimation._stored_multivariate import StoredMultivariate
from monitor.estimation._window import StoredModels, window_rows
from monitor.profiles import ColumnSpec


def _calibration(seed: int = 0, bins: int = 20) -> Calibration:
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 0.5, 2000)
    return fit_calibration(p, (rng.random(2000) < p).astype(float), 0.5, bins)


def _awkward(cal: Calibration, seed: int) -> np.ndarray:
    """Scores on every edge, past the last one, below 0, above 1 and non-finite."""
    rng = np.random.default_rng(seed)
    edges = np.asarray(cal.edges)
    extra = [edges[-1] + 1.0, edges[-1] + 5.0, -0.5, 1.5, np.nan, np.inf, -np.inf, 0.0, 1.0]
    return np.concatenate([rng.random(500), edges, edges, extra])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_profile_counts_equal_raw_counts(seed: int) -> None:
    cal = _calibration(seed)
    scores = _awkward(cal, seed)
    profile = score_spec(cal).profile(scores)
    assert score_counts(cal, profile) == count_scores(cal, scores)
    assert score_counts(cal, profile).missing == 3


def test_profiles_merge_into_the_counts_of_the_concatenation() -> None:
    cal = _calibration(3)
    a, b = _awkward(cal, 4), _awkward(cal, 5)[:7]
    spec = score_spec(cal)
    merged = spec.profile(a).merge(spec.profile(b))
    assert score_counts(cal, merged) == count_scores(cal, np.concatenate([a, b]))


def test_a_profile_on_other_bins_is_refused() -> None:
    other = ColumnSpec(SCORE_COLUMN, "numeric", edges=(0.1, 0.5, 0.9))
    with pytest.raises(CorruptProfileError, match="other bins"):
        score_counts(_calibration(), other.profile(np.array([0.2, 0.7])))


def _models(cal: Calibration) -> StoredModels:
    import pandas as pd

    rng = np.random.default_rng(6)
    frame = pd.DataFrame({"a": rng.normal(0, 1, 300), "b": rng.normal(0, 1, 300)})
    thresholds = {"accuracy": 0.7, "roc_auc": 0.6}
    model = fit_reconstruction(frame, ["a", "b"])
    return StoredModels(StoredEstimation("s", "y", cal, thresholds),
                        StoredMultivariate(model, (0.5, 2.0)))  # fmt: skip


@pytest.mark.parametrize("n", [0, 1])
def test_empty_and_one_row_windows_are_insufficient_data(n: int) -> None:
    cal = _calibration()
    scores = np.full(n, 0.7)
    profiles = {
        ("", SCORE_COLUMN): score_spec(cal).profile(scores),
        ("", ERROR_COLUMN): ColumnSpec(ERROR_COLUMN, "numeric", edges=(0.0, 1.0)).profile(scores),
    }
    rows = window_rows(profiles, {}, _models(cal), min_n=30)
    assert len(rows) == 7 and {r.status for r in rows} == {"insufficient_data"}
    assert all(r.value is None and r.n == n for r in rows)
    threshold = {r.metric: r.threshold_low for r in rows}
    assert threshold["accuracy"] == 0.7 and threshold["reconstruction_error"] == 0.5


def test_only_non_finite_scores_estimate_nothing() -> None:
    cal = _calibration()
    profile = score_spec(cal).profile(np.array([np.nan] * 40 + [np.inf] * 5))
    rows = window_rows({("", SCORE_COLUMN): profile}, {}, _models(cal), min_n=30)
    assert {r.status for r in rows} == {"insufficient_data"} and {r.n for r in rows} == {0}


def test_an_estimate_exactly_at_its_threshold_is_not_degraded() -> None:
    at = Estimate("accuracy", 0.8, 0.01, 0.77, 0.83, 100)
    below = Estimate("accuracy", 0.8 - 1e-12, 0.01, 0.77, 0.83, 100)
    bounds = {"accuracy": 0.8}
    assert judge([at], lambda m: None, None, None, bounds, 30)[0].status == "ok"
    assert judge([below], lambda m: 0.81, None, None, bounds, 30)[0].status == "degraded"
    assert judge([at], lambda m: 0.81, None, None, bounds, 101)[0].status == "insufficient_data"


def test_a_slice_takes_its_own_threshold_else_the_overall_one() -> None:
    cal = _calibration()
    scores = np.random.default_rng(7).random(200)
    eu, us = '{"region":"eu"}', '{"region":"us"}'
    profiles = {(k, SCORE_COLUMN): score_spec(cal).profile(scores) for k in ("", eu, us)}
    models = _models(cal)
    assert models.estimation is not None
    own = {eu: {"accuracy": 0.99, "roc_auc": None}}  # us: too few reference rows of its own
    models = StoredModels(replace(models.estimation, slice_thresholds=own), None)
    rows = window_rows(profiles, {("", "accuracy"): 0.9}, models, min_n=30)
    got = {(r.slice_key, r.metric): r for r in rows}
    assert (got[(eu, "accuracy")].threshold_low, got[(eu, "accuracy")].status) == (
        0.99, "degraded")  # fmt: skip
    assert got[(eu, "roc_auc")].threshold_low == 0.6  # none of its own: the overall one
    assert got[(us, "accuracy")].threshold_low == 0.7 == got[("", "accuracy")].threshold_low
    assert got[(us, "accuracy")].status == got[("", "accuracy")].status
    assert got[("", "accuracy")].realized == 0.9 and got[(eu, "accuracy")].realized is None
    assert [r.slice_key for r in rows][:6] == [""] * 6  # overall first


def test_realized_specificity_from_summaries_and_rows_agree_with_edges() -> None:
    from monitor.estimation._realized import realized
    from monitor.estimation._window import _specificity
    from monitor.outcomes.summary import ClassificationSummary

    rng = np.random.default_rng(12)
    y, score = (rng.random(500) < 0.3).astype(float), rng.random(500)
    summary = ClassificationSummary(0.5)
    summary.add(y, score)
    tn = float(((y == 0) & (score < 0.5)).sum())
    want = tn / float((y == 0).sum())
    assert _specificity(summary) == pytest.approx(want, abs=1e-15)
    assert realized("specificity", y, score, (score >= 0.5).astype(float)) == pytest.approx(want)
    positives = ClassificationSummary(0.5)
    positives.add(np.ones(3), np.array([0.2, 0.6, 0.9]))
    assert _specificity(positives) == 0.0  # no actual negatives: 0, as the raw-row path
    assert _specificity(ClassificationSummary(0.5)) is None  # no joined labels: no value
