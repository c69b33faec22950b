"""Live canary analysis: a canary version's traffic judged against the stable version's."""

from __future__ import annotations

from monitor.canary._analysis import CanaryReport, CanaryVerdict, analyze_canary, since_of
from monitor.canary._criteria import CanaryCriterion, CriterionStatus

__all__ = [
    "CanaryCriterion",
    "CanaryReport",
    "CanaryVerdict",
    "CriterionStatus",
    "analyze_canary",
    "since_of",
]
