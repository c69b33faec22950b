"""Outcome metrics: values against scikit-learn, intervals, per-slice verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.errors import InputError, RegistryError
from monitor.outcomes import METRICS, difference, evaluate_outcomes, get_metric, rescale, wilson


@pytest.fixture
def binary(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, 2, 2000).astype(float)
    score = np.clip(0.35 * y + rng.uniform(0, 0.65, 2000), 0, 1)
    return y, score


def test_classification_metrics_match_sklearn(binary: tuple[np.ndarray, np.ndarray]) -> None:
    sk = pytest.importorskip("sklearn.metrics")
    y, s = binary
    pred = (s >= 0.5).astype(float)
    expected = {
        "accuracy": sk.accuracy_score(y, pred),
        "precision": sk.precision_score(y, pred),
        "recall": sk.recall_score(y, pred),
        "f1": sk.f1_score(y, pred),
        "roc_auc": sk.roc_auc_score(y, s),
        "log_loss": sk.log_loss(y, s),
    }
    for name, value in expected.items():
        assert METRICS[name].fn(y, s, 0.5) == pytest.approx(value, rel=1e-9), name


def test_regression_metrics_match_sklearn(rng: np.random.Generator) -> None:
    sk = pytest.importorskip("sklearn.metrics")
    y = rng.normal(10, 2, 500)
    p = y + rng.normal(0, 1, 500)
    assert METRICS["mae"].fn(y, p, 0.5) == pytest.approx(sk.mean_absolute_error(y, p))
    assert METRICS["rmse"].fn(y, p, 0.5) == pytest.approx(np.sqrt(sk.mean_squared_error(y, p)))
    assert METRICS["mape"].fn(y, p, 0.5) == pytest.approx(sk.mean_absolute_percentage_error(y, p))


def test_ece_of_perfectly_calibrated_scores_is_small(rng: np.random.Generator) -> None:
    s = rng.uniform(0, 1, 200_000)
    y = (rng.uniform(0, 1, s.size) < s).astype(float)
    assert METRICS["ece"].fn(y, s, 0.5) < 0.01
    assert METRICS["ece"].fn(y, np.clip(s + 0.2, 0, 1), 0.5) > 0.1


def test_wilson_known_values() -> None:
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)


def test_difference_and_rescale() -> None:
    # two normal 95% intervals: the difference's is the Wald interval, sqrt(se1² + se2²)
    assert difference(0.5, (0.4, 0.6), 0.3, (0.2, 0.4)) == pytest.approx((0.0586, 0.3414), 1e-3)
    # asymmetric ends: each side of the difference takes the matching ends
    assert difference(1.0, (0.9, 1.3), 0.0, (-0.4, 0.1)) == pytest.approx(
        (1.0 - 0.1 * 2**0.5, 1.0 + 0.5), 1e-9
    )
    assert rescale(1.0, 0.8, 1.4, 1.959963984540054) == pytest.approx((0.8, 1.4))
    assert rescale(1.0, 0.8, 1.4, 0.0) == (1.0, 1.0)
    assert rescale(1.0, 0.8, 1.4, 2 * 1.959963984540054) == pytest.approx((0.6, 1.8))


def test_degradation_in_one_slice_only(rng: np.random.Generator) -> None:
    n = 6000
    region = rng.choice(["eu", "us", "apac"], n)
    y = rng.integers(0, 2, n).astype(float)
    correct = rng.uniform(0, 1, n) < np.where(region == "eu", 0.70, 0.90)
    score = np.where(correct, y, 1 - y) * 0.8 + 0.1
    results = evaluate_outcomes(
        y, score, slices={"region": region}, metrics=["accuracy", "roc_auc"],
        baseline={"accuracy": 0.9, "roc_auc": 0.9}, tolerance=0.05,
    )  # fmt: skip
    degraded = {(r.metric, str(r.slice)) for r in results if r.status == "degraded"}
    assert ("accuracy", "{'region': 'eu'}") in degraded
    assert all("eu" in key[1] or key[1] == "None" for key in degraded)
    acc_us = next(r for r in results if r.metric == "accuracy" and r.slice == {"region": "us"})
    assert acc_us.status == "ok" and acc_us.ci_low is not None
    assert acc_us.ci_low < acc_us.value < acc_us.ci_high  # type: ignore[operator]


def test_small_slice_is_insufficient_and_noisy_slice_not_degraded(
    rng: np.random.Generator,
) -> None:
    n = 1000
    y = rng.integers(0, 2, n).astype(float)
    score = np.where(rng.uniform(0, 1, n) < 0.9, y, 1 - y)
    shop = np.where(np.arange(n) < 20, "tiny", np.where(np.arange(n) < 60, "small", "big"))
    results = evaluate_outcomes(
        y, score, slices={"shop": shop}, metrics=["accuracy", "f1"],
        baseline={"accuracy": 0.92, "f1": 0.92}, tolerance=0.01,
    )  # fmt: skip
    tiny = [r for r in results if r.slice == {"shop": "tiny"}]
    assert {r.status for r in tiny} == {"insufficient_data"} and tiny[0].value is None
    small = next(r for r in results if r.slice == {"shop": "small"} and r.metric == "accuracy")
    assert small.n == 40 and small.status == "ok"  # interval of 40 rows covers the baseline


def test_perfect_slices_meet_a_perfect_baseline_at_every_size() -> None:
    # Zero tolerance is exact: 100% accuracy against a baseline of 1.0 with tolerance 0 is
    # never "degraded" by rounding (the closed-form Wilson bound of n/n is 1 - 1e-16 for some n).
    for n in range(1, 1001):
        assert wilson(0, n)[0] == 0.0 and wilson(n, n)[1] == 1.0
    sizes = np.arange(1, 301)
    size = np.repeat(sizes, sizes).astype(str)  # one slice of every size 1..300
    y = np.tile([0.0, 1.0], size.size // 2 + 1)[: size.size]
    results = evaluate_outcomes(
        y, y, slices={"size": size}, metrics=["accuracy"], baseline={"accuracy": 1.0},
        tolerance=0.0, min_support=1,
    )  # fmt: skip
    assert len(results) == 301 and {r.status for r in results} == {"ok"}


def test_bad_inputs() -> None:
    with pytest.raises(RegistryError, match="valid: accuracy"):
        get_metric("auc")
    with pytest.raises(InputError, match="0 or 1"):
        evaluate_outcomes([0, 2], [0.1, 0.2])
    with pytest.raises(InputError, match="3 rows but predictions have 2"):
        evaluate_outcomes([0, 1, 1], [0.1, 0.2])
    with pytest.raises(InputError, match="is for regression"):
        evaluate_outcomes([0, 1], [0.1, 0.2], metrics=["mae"])
