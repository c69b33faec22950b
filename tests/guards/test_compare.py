"""Elementwise statistics, small-sample bounds, policies and the guards config section."""

from __future__ import annotations

import math

import numpy as np
import pytest

from guards._compare import compare_output
from guards._stats import wilson_interval
from guards._tasks import detect_task
from guards.policy import preset
from monitor.config import parse_config
from monitor.errors import ConfigError


def test_identical_outputs_have_zero_error_and_infinite_sqnr() -> None:
    r = np.random.default_rng(0).normal(size=(50, 3)).astype(np.float32)
    cmp = compare_output(r, r.copy(), atol=0.0, rtol=0.0)
    assert cmp.mismatch_fraction == 0.0 and cmp.stats.max_abs == 0.0
    assert cmp.stats.sqnr_db == math.inf and cmp.stats.to_dict()["sqnr_db"] is None


def test_min_passing_atol_is_exactly_the_tolerance_that_passes() -> None:
    rng = np.random.default_rng(1)
    r = rng.normal(size=(200, 4))
    c = r + rng.normal(scale=1e-3, size=r.shape)
    rtol = 1e-3
    need = compare_output(r, c, atol=0.0, rtol=rtol).stats.min_passing_atol
    assert need > 0
    assert compare_output(r, c, atol=need, rtol=rtol).mismatch_fraction == 0.0
    assert compare_output(r, c, atol=need * 0.99, rtol=rtol).mismatch_fraction > 0.0


def test_nan_and_inf_count_as_mismatches_not_as_statistics() -> None:
    r = np.ones((4, 2))
    c = r.copy()
    c[0, 0], c[1, 1] = np.nan, np.inf
    cmp = compare_output(r, c, atol=1.0, rtol=1.0)
    assert cmp.stats.nan_or_inf == 2 and cmp.mismatch_fraction == pytest.approx(2 / 8)
    assert cmp.stats.max_abs == 0.0
    assert cmp.row_max_abs[0] == math.inf and cmp.row_max_abs[3] == 0.0


def test_sqnr_and_cosine_follow_their_definitions() -> None:
    r = np.array([[3.0, 4.0]])
    c = np.array([[3.0, 4.5]])
    stats = compare_output(r, c, 0.0, 0.0).stats
    assert stats.sqnr_db == pytest.approx(10 * math.log10(25 / 0.25))
    assert stats.cosine == pytest.approx((9 + 18) / (5 * math.hypot(3, 4.5)))
    assert stats.max_rel == pytest.approx(0.125)


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [(0, 100, 0.0, 0.037), (10, 100, 0.0552, 0.1744), (50, 50, 0.9287, 1.0)],
)
def test_wilson_interval_matches_published_values(k: int, n: int, lo: float, hi: float) -> None:
    low, high = wilson_interval(k, n, 0.95)
    assert low == pytest.approx(lo, abs=1e-3) and high == pytest.approx(hi, abs=1e-3)


def test_task_kind_is_detected_from_shape_and_values() -> None:
    probs = np.array([[0.2, 0.8], [0.9, 0.1]], dtype=np.float32)
    assert detect_task("p", probs, probs, 0.5).kind == "scores"
    assert detect_task("p", probs[:, 1:], probs[:, 1:], 0.5).kind == "binary"
    assert detect_task("y", np.array([3.5, -2.0]), np.array([3.5, -2.0]), 0.5).kind == "regression"
    assert detect_task("l", np.array([1, 0]), np.array([1, 1]), 0.5).flips().tolist() == [
        False, True
    ]  # fmt: skip


def test_binary_decision_flips_use_the_threshold() -> None:
    ref = np.array([[0.49], [0.51], [0.9]], dtype=np.float32)
    cand = np.array([[0.51], [0.52], [0.2]], dtype=np.float32)
    assert detect_task("p", ref, cand, 0.5).flips().tolist() == [True, False, True]
    assert detect_task("p", ref, cand, 0.3).flips().tolist() == [False, False, True]


def test_unknown_preset_and_policy_key_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="valid presets: fp32, fp16, int8"):
        preset("bf16")
    with pytest.raises(ConfigError, match="max_flip"):
        preset("int8").with_overrides({"max_flip": 0.1})


def test_guards_config_rejects_unknown_keys() -> None:
    cfg = parse_config({"guards": {"presets": {"int8": {"max_flip_rate": 0.02}}}}, env={})
    assert cfg.guards.presets["int8"].max_flip_rate == 0.02
    with pytest.raises(ConfigError, match="guards.presets.int8.max_flip_rat"):
        parse_config({"guards": {"presets": {"int8": {"max_flip_rat": 0.02}}}}, env={})
