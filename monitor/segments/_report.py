"""The typed results of a segment search: `Segment` and `SegmentReport`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

MODES = ("labels", "estimated", "drift")


@dataclass(frozen=True)
class Segment:
    """A reported segment: its predicates, support, metric inside and outside, and its test.

    In drift mode `value` is the segment's share of the current rows, `rest_value` its share of
    the reference rows and `effect` the change (current − reference).
    """

    predicates: list[tuple[str, str]]
    support: int
    share: float
    value: float  # the metric inside the segment
    rest_value: float  # the metric on every other row
    effect: float  # loss inside minus loss outside (> 0: worse inside)
    ci_low: float
    ci_high: float
    p_value: float
    q_value: float
    score: float

    def describe(self) -> str:
        return " AND ".join(f"{f} = {v}" for f, v in self.predicates)

    def key(self) -> str:
        """The segment's identity: its predicates, sorted by feature (persisting vs new)."""
        return " AND ".join(f"{f} = {v}" for f, v in sorted(self.predicates))


@dataclass(frozen=True)
class SegmentReport:
    """What the search found, and how much it looked at (the family the q-values control).

    `status`: `segments` (some reported), `ok` (searched, none reported) or `insufficient_data`
    (no search: `reason` says why). `estimated` is true in the label-free modes.
    """

    metric: str
    n_rows: int
    overall: float | None
    features: list[str]
    min_support: int
    max_predicates: int
    alpha: float
    candidates_tested: int
    combinations_counted: int
    combinations_pruned: int
    segments: list[Segment] = field(default_factory=list)
    reason: str | None = None  # why nothing is reported, when nothing is
    mode: str = "labels"
    estimated: bool = False
    insufficient: bool = False
    skipped: list[str] = field(default_factory=list)  # features not searched, with why

    @property
    def status(self) -> str:
        if self.insufficient:
            return "insufficient_data"
        return "segments" if self.segments else "ok"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["insufficient"]
        out["status"] = self.status
        for seg, raw in zip(self.segments, out["segments"], strict=True):
            raw["predicates"] = [{"feature": f, "value": v} for f, v in seg.predicates]
            raw["description"] = seg.describe()
        return out
