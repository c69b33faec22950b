"""Live canary analysis: a canary version's traffic judged against the stable version's.

`analyze_canary` answers one request on the whole traffic; `evaluate_pair` judges a declared
pair overall and per slice with one multiple-testing correction, as the daemon does on schedule.
"""

from __future__ import annotations

from monitor.canary._analysis import CanaryReport, CanaryVerdict, analyze_canary, since_of
from monitor.canary._criteria import CanaryCriterion, CriterionStatus
from monitor.canary._evidence import Evidence, load_sliced_evidence
from monitor.canary._schedule import (
    CanaryJudgement,
    JudgedCriterion,
    canary_history,
    evaluate_pair,
    judge_pair,
    store_judgement,
)

__all__ = [
    "CanaryCriterion",
    "CanaryJudgement",
    "CanaryReport",
    "CanaryVerdict",
    "CriterionStatus",
    "Evidence",
    "JudgedCriterion",
    "analyze_canary",
    "canary_history",
    "evaluate_pair",
    "judge_pair",
    "load_sliced_evidence",
    "since_of",
    "store_judgement",
]
