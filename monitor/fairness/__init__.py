"""Fairness for declared groups: rate differences and ratios between the groups of protected
attributes, and each group's calibration, with simultaneous intervals and calibrated statuses.

Computed from mergeable per-group counts (`GroupCounts`): demographic parity from the
selection counts of all predictions kept per window and slice at ingest, the label-based
metrics from the outcome summaries the label join keeps per slice; so a window, a day or a
week is a merge, never a rescan.
"""

from __future__ import annotations

from monitor.fairness._base import (
    COMPARISONS,
    METRICS,
    NO_LABELS,
    PARITY,
    PER_GROUP,
    FairnessResult,
    FairnessStatus,
    GroupCounts,
)
from monitor.fairness._evaluate import evaluate_fairness, groups_of
from monitor.fairness._intervals import katz, newcombe, simultaneous_z

__all__ = [
    "COMPARISONS",
    "METRICS",
    "NO_LABELS",
    "PARITY",
    "PER_GROUP",
    "FairnessResult",
    "FairnessStatus",
    "GroupCounts",
    "evaluate_fairness",
    "groups_of",
    "katz",
    "newcombe",
    "simultaneous_z",
]
