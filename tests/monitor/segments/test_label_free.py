"""Label-free segments: a planted uncertain segment and a planted share shift are found with
small q-values and intervals that cover the planted effect; null data reports nothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from monitor.errors import InputError
from monitor.estimation import Calibration, fit_calibration
from monitor.segments import (
    Options,
    expected_errors,
    find_drift_segments,
    find_estimated_segments,
)
from tests.monitor.segments.conftest import scored_frame, shifted_frame

FEATURES = ["a", "b", "c", "d", "e", "f"]
PLANTED = {"a", "b", "c"}


def _calibration(seed: int, n: int = 5000, uncertain: bool = True) -> Calibration:
    ref = scored_frame(n, seed, uncertain)
    return fit_calibration(ref.score.to_numpy(), ref.label.to_numpy().astype(float))


@pytest.fixture(scope="module")
def calibration() -> Calibration:
    return _calibration(1)


def test_expected_error_is_the_calibrated_chance_of_the_other_class() -> None:
    cal = Calibration((0.5,), (0.2, 0.9), (10, 10), 0.5, 0.0)
    assert expected_errors(np.array([0.1, 0.7]), cal).tolist() == pytest.approx([0.2, 0.1])
    with pytest.raises(InputError, match="column 'score'"):
        expected_errors(np.array([0.1, np.nan]), cal)


def test_the_uncertain_segment_is_found_with_its_expected_error(calibration: Calibration) -> None:
    current = scored_frame(10_000, 2)
    report = find_estimated_segments(current, "score", calibration, FEATURES, Options(bins=5))
    best = report.segments[0]
    assert report.mode == "estimated" and report.estimated and report.status == "segments"
    assert {f for f, _ in best.predicates} == PLANTED
    planted = current.score.between(0.35, 0.65) & (current.a == 3) & (current.b == "x")
    realized = (current.label != (current.score >= 0.5))[planted].mean()
    assert best.q_value < 1e-6 and best.ci_low < realized - best.rest_value < best.ci_high
    assert best.value == pytest.approx(0.42, abs=0.05)  # E[min(p, 1 - p)], p ~ U(0.35, 0.65)


def test_drift_finds_the_segment_whose_share_doubled() -> None:
    reference, current = shifted_frame(8000, 1), shifted_frame(8000, 2, extra=1.0)
    report = find_drift_segments(reference, current, options=Options(bins=5))
    best = report.segments[0]
    assert report.mode == "drift" and report.estimated and report.metric == "share"
    assert {f for f, _ in best.predicates} == PLANTED
    share = 0.25 * 0.25 * 0.2  # a = 3, b = x, c in the top fifth
    assert best.ci_low < 2 * share / (1 + share) - share < best.ci_high
    assert best.q_value < 0.01 and best.effect > 0


def test_drift_finds_a_segment_that_shrank_with_a_negative_effect() -> None:
    reference, current = shifted_frame(8000, 1, extra=1.0), shifted_frame(8000, 2)
    best = find_drift_segments(reference, current, options=Options(bins=5)).segments[0]
    assert {f for f, _ in best.predicates} == PLANTED
    assert best.effect < 0 and best.ci_high < 0 and best.value < best.rest_value


@pytest.mark.parametrize("mode", ["estimated", pytest.param("drift", marks=pytest.mark.slow)])
def test_no_planted_segment_rarely_reports_one(mode: str) -> None:
    # A quick check over 10 seeds; bench/segments_fdr.py runs 200 per mode.
    found = sum(bool(_null(mode, seed).segments) for seed in range(10))
    assert found <= 3  # nominal 0.1: P(more than 3 of 10) < 1.3% if the FDR holds


def _null(mode: str, seed: int) -> Any:
    opts = Options(bins=4, alpha=0.1)
    if mode == "drift":
        return find_drift_segments(shifted_frame(2000, 100 + seed), shifted_frame(2000, seed),
                                   FEATURES, opts)  # fmt: skip
    current = scored_frame(2000, seed, uncertain=False)
    return find_estimated_segments(current, "score", _calibration(100 + seed, 2000, False),
                                   FEATURES, opts)  # fmt: skip


def test_bad_input_is_insufficient_data_or_a_named_error(calibration: Calibration) -> None:
    current = scored_frame(2000, 3)
    few = find_estimated_segments(current.iloc[:40], "score", calibration, FEATURES)
    assert few.status == "insufficient_data" and "fewer than twice" in (few.reason or "")
    nulls = current.assign(d=np.nan)
    report = find_estimated_segments(nulls, "score", calibration, FEATURES, Options(bins=4))
    assert report.skipped == ["d: every value missing"] and "d" not in report.features
    empty = find_drift_segments(shifted_frame(2000), shifted_frame(2000).iloc[:0], FEATURES)
    assert empty.status == "insufficient_data" and (empty.reason or "").startswith("current")
    with pytest.raises(InputError, match="reference: column 'f' not found"):
        find_drift_segments(shifted_frame(500).drop(columns="f"), shifted_frame(500), FEATURES)


def test_a_single_label_class_is_insufficient_data() -> None:
    from monitor.segments import find_segments

    frame = scored_frame(2000).assign(label=1, pred=lambda f: (f.score > 0.5).astype(int))
    report = find_segments(frame, "label", "pred", FEATURES)
    assert report.status == "insufficient_data" and "single class" in (report.reason or "")
    assert report.to_dict()["status"] == "insufficient_data"
