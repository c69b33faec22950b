"""ECE: the bias-corrected value and its interval (`monitor.outcomes._ece`), their power against
miscalibrated models and their edge cases. The false-alarm rate at a calibrated model is
test_outcome_calibration.py's (slow)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from monitor.errors import InputError
from monitor.outcomes import evaluate_outcomes
from monitor.outcomes._ece import plugin_ece
from monitor.outcomes.from_summary import evaluate_summaries
from monitor.outcomes.summary import ClassificationSummary

WINDOWS, ROWS = 20, 1_000


def _sharpened(s: np.ndarray) -> np.ndarray:
    """Overconfident: the calibrated score's logit doubled (population ECE ~0.10)."""
    return 1 / (1 + ((1 - s) / s) ** 2)


MODELS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "calibrated": lambda s: s,
    "shifted by +0.1": lambda s: np.clip(s + 0.1, 0.0, 1.0),  # population ECE ~0.10
    "overconfident": _sharpened,
}


@pytest.fixture(scope="module")
def windows() -> dict[str, list[tuple[float, float, float, float, str]]]:
    """Per model: (value, ci_low, ci_high, plug-in, status) of 20 windows of 1,000 rows whose
    labels are Bernoulli(calibrated score), against a baseline of 0."""
    rng = np.random.default_rng(36)
    out: dict[str, list[tuple[float, float, float, float, str]]] = {m: [] for m in MODELS}
    for _ in range(WINDOWS):
        s = rng.beta(2.0, 2.0, ROWS)
        y = (rng.random(ROWS) < s).astype(np.float64)
        for name, model in MODELS.items():
            r = evaluate_outcomes(y, model(s), metrics=["ece"], baseline={"ece": 0.0})[0]
            assert r.value is not None and r.ci_low is not None and r.ci_high is not None
            out[name].append((r.value, r.ci_low, r.ci_high, plugin_ece(y, model(s)), r.status))
    return out


@pytest.mark.slow  # the fixture: 60 evaluations of 1,000 rows, ~1.4 s
def test_miscalibrated_models_are_degraded(windows: dict) -> None:
    """Power: at 1,000 rows a model 0.1 off (shifted or overconfident) is `degraded` against a
    calibrated baseline in (nearly) every window, and its value is near its ECE, 0.10."""
    for name in ("shifted by +0.1", "overconfident"):
        found = windows[name]
        assert sum(w[4] == "degraded" for w in found) >= WINDOWS - 1, name
        assert np.mean([w[0] for w in found]) == pytest.approx(0.10, abs=0.015), name


@pytest.mark.slow
def test_calibrated_value_is_bias_corrected_and_inside_its_interval(windows: dict) -> None:
    """A calibrated model reads well under the plug-in (biased up by ~1/sqrt(n)); every value
    lies in its interval, which is centred on the plug-in and starts at 0 or above."""
    found = windows["calibrated"]
    assert np.mean([w[0] for w in found]) < 0.5 * np.mean([w[3] for w in found])
    for found in windows.values():
        for value, low, high, plugin, _ in found:
            assert 0.0 <= low <= value <= high <= 1.0
            assert low == 0.0 or high - plugin == pytest.approx(plugin - low)


@pytest.mark.parametrize(
    ("y", "s"),
    [
        ([1.0], [0.7]),  # one row
        ([0.0] * 40, list(np.linspace(0, 1, 40))),  # one class
        ([1.0, 0.0] * 20, [1.0, 0.0] * 20),  # scores exactly 0 and 1: no noise at all
        ([1.0, 0.0] * 20, [0.0, 1.0] * 20),  # as wrong as can be
    ],
    ids=["one-row", "one-class", "certain-right", "certain-wrong"],
)
def test_edge_cases_give_finite_values_in_both_paths(y: list, s: list) -> None:
    raw = evaluate_outcomes(y, s, metrics=["ece"], baseline={"ece": 0.0}, min_support=1)[0]
    summary = ClassificationSummary(0.5)
    summary.add(np.array(y), np.array(s))
    merged = evaluate_summaries([(None, summary)], metrics=["ece"], baseline={"ece": 0.0},
                                min_support=1)[0]  # fmt: skip
    for r in (raw, merged):
        assert r.value is not None and r.ci_low is not None and r.ci_high is not None
        assert all(math.isfinite(v) for v in (r.value, r.ci_low, r.ci_high))
        assert 0.0 <= r.ci_low <= r.value <= r.ci_high <= 1.0
    assert merged.value == pytest.approx(raw.value, abs=1e-12)
    if len(y) == 40 and s == y:  # perfectly right and certain: 0, and no interval around it
        assert (raw.value, raw.ci_low, raw.ci_high, raw.status) == (0.0, 0.0, 0.0, "ok")
    if len(y) == 40 and s == [1 - v for v in y]:  # always wrong and certain: 1
        assert (raw.value, raw.ci_high, raw.status) == (1.0, 1.0, "degraded")


def test_too_few_rows_and_bad_scores_give_no_value() -> None:
    """Under `min_support` rows (0 or 1 with the default 30) is `insufficient_data` without a
    value; a non-finite score is refused by name in the row path and counted, not scored, by a
    summary."""
    for y, s in (([], []), ([1.0], [0.7])):
        r = evaluate_outcomes(y, s, metrics=["ece"], baseline={"ece": 0.0})[0]
        assert (r.status, r.value, r.ci_low, r.ci_high) == ("insufficient_data", None, None, None)
    with pytest.raises(InputError, match="must be finite"):
        evaluate_outcomes([1.0, 0.0], [np.nan, 0.2], metrics=["ece"])
    summary = ClassificationSummary(0.5)
    summary.add(np.array([1.0, 0.0]), np.array([np.nan, np.inf]))
    assert summary.invalid == 2 and summary.n == 0
    r = evaluate_summaries([(None, summary)], metrics=["ece"], baseline={"ece": 0.0})[0]
    assert (r.status, r.value) == ("insufficient_data", None)
