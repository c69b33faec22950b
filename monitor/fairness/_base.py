"""Mergeable per-group counts and the frozen fairness result."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from monitor.outcomes.summary import ClassificationSummary

FairnessStatus = Literal["ok", "violation", "insufficient_data"]

# Metrics comparing an attribute's groups (one row per attribute, slice None).
COMPARISONS = (
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equal_opportunity_difference",
    "equalized_odds_difference",
)
# Metrics of each group (one row per group, slice {attribute: group}).
PER_GROUP = ("selection_rate", "true_positive_rate", "false_positive_rate", "calibration_error")
METRICS = COMPARISONS + PER_GROUP
# The metrics over every prediction of a window, labelled or not (the others need labels).
PARITY = ("demographic_parity_difference", "demographic_parity_ratio", "selection_rate")
# The reason of a label-based metric of a window none of whose predictions is labelled yet.
NO_LABELS = "no labels yet"


@dataclass(frozen=True)
class GroupCounts:
    """What fairness metrics need of one group: of its labelled rows, the confusion counts at
    the model's threshold and the sum of scores (the label-based metrics); of all its
    predictions, labelled or not, those scored and those predicting the positive class (the
    selection rate). Counts add, so windows and replicas merge."""

    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    score_sum: float = 0.0
    scored: int = 0
    selected: int = 0

    @property
    def n(self) -> int:
        """Labelled rows."""
        return self.tp + self.fp + self.tn + self.fn

    @property
    def size(self) -> int:
        """Rows of either kind: a group is seen when it has predictions or labelled rows."""
        return max(self.n, self.scored)

    @classmethod
    def of(cls, summary: ClassificationSummary, scored: int = 0, selected: int = 0) -> GroupCounts:
        """The counts of an outcome summary (invalid pairs are in neither) and of the group's
        predictions."""
        tp, fp, tn, fn = (int(v) for v in summary.confusion.tolist())
        return cls(tp, fp, tn, fn, float(summary.score_sum.sum()), scored, selected)

    def merge(self, other: GroupCounts) -> GroupCounts:
        """The counts of both sets of rows."""
        return GroupCounts(
            self.tp + other.tp,
            self.fp + other.fp,
            self.tn + other.tn,
            self.fn + other.fn,
            self.score_sum + other.score_sum,
            self.scored + other.scored,
            self.selected + other.selected,
        )


@dataclass(frozen=True)
class FairnessResult:
    """One fairness metric of one protected attribute (slice None: the comparison of its
    groups) or of one group (slice {attribute: group}) in one window.

    value/ci_low/ci_high: the metric and its simultaneous (1 - alpha) interval; threshold:
    the bound a status is judged against (None for per-group rates, which have no verdict);
    n: the supporting rows compared; reason: why the status is `insufficient_data`.
    """

    attribute: str
    metric: str
    slice: dict[str, str] | None
    value: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float | None
    n: int
    status: FairnessStatus
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of the result: every field, by name."""
        doc = {f.name: getattr(self, f.name) for f in fields(self)}
        doc["slice"] = None if self.slice is None else dict(self.slice)
        return doc
