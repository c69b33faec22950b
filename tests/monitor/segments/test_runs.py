"""Segment checks' searches: a window that cannot be searched is insufficient_data with the
reason (never an error), persistence is by predicates, and a check needs its mode's inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from monitor.config import SegmentCheckConfig, parse_config
from monitor.errors import ConfigError
from monitor.segments import Segment, SegmentReport, mark_persistence, search_check
from monitor.storage import SegmentRun
from tests.monitor.segments.conftest import planted_frame, scored_frame

SOURCE = {"path": "x.parquet"}


def _check(**kw: Any) -> SegmentCheckConfig:
    return SegmentCheckConfig.model_validate({"name": "c", "model": "m", "current": SOURCE,
                                              "bins": 4, **kw})  # fmt: skip


@pytest.mark.parametrize(
    ("check", "current", "reference", "reason"),
    [
        (dict(label="label", prediction="pred", features=["a", "zz"]), planted_frame(300), None,
         "column 'zz' missing from the current window"),
        (dict(mode="drift", reference=SOURCE, features=["a", "f"]), planted_frame(300),
         planted_frame(300).drop(columns="f"), "column 'f' missing from the reference window"),
        (dict(label="label", prediction="pred"), planted_frame(300).assign(label=1), None,
         "a single class in 'label'"),
        (dict(mode="estimated", reference=SOURCE, label="label", prediction="score"),
         scored_frame(300), scored_frame(300).assign(label=0), "a single class in the reference"),
        (dict(mode="estimated", reference=SOURCE, label="label", prediction="score"),
         scored_frame(300), scored_frame(50), "at least 100 labelled reference rows"),
        (dict(label="label", prediction="pred"),
         planted_frame(300).astype({"label": float}).assign(label=np.nan), None,
         "column 'label': missing or non-finite"),
    ],
)  # fmt: skip
def test_a_window_that_cannot_be_searched_is_insufficient_data(
    check: dict[str, Any], current: Any, reference: Any, reason: str
) -> None:
    report = search_check(_check(**check), current, reference)
    assert report.status == "insufficient_data" and reason in (report.reason or "")


def test_persistence_is_by_predicates_in_any_order() -> None:
    def seg(*preds: tuple[str, str]) -> Segment:
        return Segment(list(preds), 50, 0.1, 0.5, 0.1, 0.4, 0.3, 0.5, 1e-6, 1e-5, 1.0)

    def report(*segments: Segment) -> SegmentReport:
        return SegmentReport("error_rate", 500, 0.1, ["a", "b"], 30, 3, 0.05, 10, 3, 0,
                             list(segments))  # fmt: skip

    first = mark_persistence(report(seg(("a", "3"), ("b", "x"))), None)
    previous = SegmentRun(report=first)
    again = mark_persistence(
        report(
            seg(("b", "x"), ("a", "3")),
            seg(
                ("a", "1"),
            ),
        ),
        previous,
    )
    assert [s["persistence"] for s in first["segments"]] == ["new"]
    assert [s["persistence"] for s in again["segments"]] == ["persisting", "new"]


def test_a_check_needs_its_modes_inputs() -> None:
    with pytest.raises(ConfigError, match="mode drift needs reference"):
        parse_config({"models": [{"name": "m"}],
                      "segments": [{"name": "c", "model": "m", "mode": "drift",
                                    "current": SOURCE}]}, env={})  # fmt: skip
    with pytest.raises(ConfigError, match="segments\\[0\\]: no model 'other'"):
        parse_config({"models": [{"name": "m"}],
                      "segments": [{"name": "c", "model": "other", "label": "y",
                                    "prediction": "p", "current": SOURCE}]}, env={})  # fmt: skip
