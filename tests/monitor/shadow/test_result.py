"""The shadow verdict: which criterion decides, when evidence is enough, what rows with an
unpaired side say; and the signals the evaluate job makes of it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from monitor.app.daemon._shadow_signals import signals_of
from monitor.config import ModelConfig
from monitor.config.shadow import ShadowConfig
from monitor.shadow import LabelledPair, PairOutcome, ShadowSummary, judge

T = datetime(2026, 1, 1, tzinfo=UTC)
CFG = ShadowConfig(min_pairs=50, max_flip_rate=0.05, alpha=0.01)
MODEL = ModelConfig(name="fraud", shadow=CFG)
KEY = ("fraud", "1", "2", "")


def summary(pairs: int, flips: int, b: int = 0, c: int = 0, agree: int = 0) -> ShadowSummary:
    outcomes = [PairOutcome(i < flips, 0.1, 1.0) for i in range(pairs)]
    cells = [LabelledPair(True, False)] * b + [LabelledPair(False, True)] * c
    cells += [LabelledPair(True, True)] * agree
    return ShadowSummary.of(outcomes, cells)


@pytest.mark.parametrize(
    ("s", "status", "failed"),
    [
        (summary(49, 40), "insufficient_data", ()),  # too few pairs, whatever their flips
        (summary(200, 5), "ok", ()),  # 2.5%: the lower bound is under 5%
        (summary(200, 30), "diverged", ("flip_rate",)),
        (summary(200, 0, b=30, c=5, agree=100), "diverged", ("mcnemar",)),
        (summary(200, 0, b=10, c=8, agree=100), "ok", ()),
    ],
)
def test_the_failing_criterion_decides(s: ShadowSummary, status: str, failed: tuple[str]) -> None:
    got = judge(KEY, T, T, s, CFG, "classification")
    assert (got.status, got.failed) == (status, failed)


def test_accuracy_difference_and_unpaired_rows() -> None:
    got = judge(KEY, T, T, summary(200, 0, b=30, c=5, agree=165), CFG, "classification")
    assert got.metric == "accuracy_diff" and got.metric_diff == pytest.approx(-25 / 200)
    assert got.metric_diff_high is not None and got.metric_diff_high < 0
    alone = judge(
        ("fraud", "1", "", ""), T, T, ShadowSummary(unpaired_primary=7), CFG, "classification"
    )
    assert (alone.status, alone.unpaired_primary, alone.flip_rate) == ("insufficient_data", 7, None)


def test_signals_name_the_criterion_and_only_speak_with_evidence() -> None:
    got = judge(KEY, T, T, summary(200, 30, b=30, c=5, agree=100), CFG, "classification")
    signals = signals_of(got, MODEL, T)
    assert [(s.labels["criterion"], s.firing) for s in signals] == [
        ("flip_rate", True),
        ("mcnemar", True),
    ]
    assert signals[0].labels["primary_version"] == "1" and signals[0].labels["version"] == "2"
    assert signals_of(judge(KEY, T, T, summary(10, 10), CFG, "classification"), MODEL, T) == []
