"""find_segments: the planted segment at the top, no discoveries on null data, the edges."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from monitor.errors import InputError
from monitor.segments import find_segments
from tests.monitor.segments.conftest import planted_frame


def test_the_planted_segment_is_found_at_the_top() -> None:
    report = find_segments(planted_frame(), "label", "pred", bins=5)
    best = report.segments[0]
    assert dict(best.predicates).keys() == {"a", "b", "c"}
    assert dict(best.predicates)["a"] == "3" and dict(best.predicates)["b"] == "x"
    assert best.value > 0.7 and best.rest_value < 0.1
    assert best.q_value < 0.05 and best.ci_low > 0.5
    assert report.candidates_tested >= len(report.segments)


def test_no_weak_segment_no_discovery_as_a_rate_over_seeds() -> None:
    # Under the global null BH's family-wise error is at most alpha; 40 seeds at alpha 0.1.
    found = sum(
        bool(find_segments(planted_frame(3000, seed, weak=False), "label", "pred",
                           bins=4, alpha=0.1).segments)
        for seed in range(40)
    )  # fmt: skip
    assert found / 40 <= 0.1 + 0.1  # nominal 0.1, plus sampling slack (binomial sd ~0.05)


@pytest.mark.parametrize("metric", ["absolute_error", "log_loss"])
def test_mean_metrics_find_the_planted_segment(metric: str) -> None:
    frame = planted_frame(10_000)
    rng = np.random.default_rng(1)
    wrong = frame.label != frame.pred
    frame["pred"] = np.where(wrong, np.abs(frame.label - 0.9), np.abs(frame.label - 0.1))
    frame["pred"] = np.clip(frame.pred + rng.normal(0, 0.02, len(frame)), 0, 1)
    report = find_segments(frame, "label", "pred", metric=metric, bins=5, score_alpha=0.99)
    best = report.segments[0]
    assert {f for f, _ in best.predicates} == {"a", "b", "c"}


def test_accuracy_reports_accuracy_values() -> None:
    best = find_segments(planted_frame(), "label", "pred", metric="accuracy", bins=5).segments[0]
    assert best.value < 0.3 and best.rest_value > 0.9 and best.effect > 0


def test_zero_rows_and_one_row_are_empty_with_a_reason() -> None:
    frame = planted_frame(100)
    for part in (frame.iloc[:0], frame.iloc[:1]):
        report = find_segments(part, "label", "pred")
        assert report.segments == [] and report.reason


def test_all_correct_labels_report_nothing() -> None:
    frame = planted_frame(2000)
    frame["pred"] = frame.label
    report = find_segments(frame, "label", "pred")
    assert report.segments == [] and report.reason and "no errors" in report.reason


def test_a_constant_feature_is_never_a_segment() -> None:
    frame = planted_frame()
    frame["k"] = 7.0
    report = find_segments(frame, "label", "pred", bins=5)
    assert all("k" not in dict(s.predicates) for s in report.segments)
    assert report.segments


def test_non_finite_label_or_prediction_is_a_one_line_error() -> None:
    frame = planted_frame(200).astype({"pred": float})
    frame.loc[3, "pred"] = np.inf
    with pytest.raises(InputError, match="column 'pred'"):
        find_segments(frame, "label", "pred")
    frame.loc[3, "pred"] = 1.0
    frame.loc[5, "label"] = None
    with pytest.raises(InputError, match="column 'label'"):
        find_segments(frame, "label", "pred")


def test_non_finite_feature_values_get_their_own_bin() -> None:
    frame = planted_frame()
    frame.loc[:99, "d"] = np.nan
    frame.loc[100:199, "d"] = np.inf
    report = find_segments(frame, "label", "pred", bins=5)
    assert dict(report.segments[0].predicates).keys() == {"a", "b", "c"}


def test_bad_arguments_name_what_is_wrong() -> None:
    frame = planted_frame(100)
    with pytest.raises(InputError, match="column 'nope'"):
        find_segments(frame, "label", "pred", ["nope"])
    with pytest.raises(InputError, match="metric"):
        find_segments(frame, "label", "pred", metric="f1")
    with pytest.raises(InputError, match="log_loss"):
        find_segments(frame.assign(pred=frame.pred * 3), "label", "pred", metric="log_loss")


def test_baseline_edges_bin_the_numeric_features() -> None:
    frame = planted_frame()
    report = find_segments(frame, "label", "pred", edges={"c": [0.0, 0.8416]})
    best = dict(report.segments[0].predicates)
    assert best["c"] == "[0.8416, inf)"


def test_the_report_is_json_ready() -> None:
    doc = find_segments(planted_frame(), "label", "pred", bins=5).to_dict()
    assert doc["segments"][0]["predicates"][0].keys() == {"feature", "value"}
    assert " AND " in doc["segments"][0]["description"]
    assert isinstance(pd.Series(doc["features"]).tolist(), list)
