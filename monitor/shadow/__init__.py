"""Paired shadow mode: a shadow version's predictions compared request by request with the
primary's (flip rate, score differences, latency ratios, McNemar on labelled pairs)."""

from __future__ import annotations

from monitor.shadow.result import CRITERIA, ShadowResult, ShadowStatus, judge
from monitor.shadow.statistics import flip_interval, mcnemar_exact, paired_difference
from monitor.shadow.store import latest_results, shadow_results, window_results
from monitor.shadow.summary import (
    LabelledPair,
    PairOutcome,
    ShadowSummary,
    label_outcome,
    pair_outcome,
)

__all__ = [
    "CRITERIA",
    "ShadowResult",
    "ShadowStatus",
    "judge",
    "latest_results",
    "shadow_results",
    "window_results",
    "LabelledPair",
    "PairOutcome",
    "ShadowSummary",
    "flip_interval",
    "label_outcome",
    "mcnemar_exact",
    "pair_outcome",
    "paired_difference",
]
