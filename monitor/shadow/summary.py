"""The mergeable summary of shadow pairs of one (model, primary version, shadow version,
window, slice), and what one pair (and its label) contributes to it.

A pair is the primary's and the shadow's prediction for one request id. What a pair adds:

- `decided`/`flips`: for classification (score at `outcomes.threshold`) and multiclass (the
  predicted class), whether the two predicted classes differ; regression has no flips;
- `scored`/`abs_diff_sum`/`abs_diff`: |shadow score - primary score| when both predictions
  have a score (classification and regression), summed and in a log-scale sketch
  (`monitor.profiles.LatencySketch`, 1 % relative error; a difference at or below 0.001 counts
  as 0) for its p99;
- `timed`/`ratio_sum`/`latency_ratio`: shadow latency / primary latency (`latency_ms`) of the
  request, when both sides carry a latency and the primary's is positive;
- once the request's label joins, a correctness pair: `both_correct`, `primary_only` (b),
  `shadow_only` (c), `both_wrong` for classification and multiclass, or for regression the
  difference d = |shadow error| - |primary error| (`error_diff_sum`, `error_diff_squares`).

`unpaired_primary`/`unpaired_shadow` count sides whose other side did not come within
`shadow.pair_horizon`. Every field adds, and sketches merge exactly, so summaries of windows,
slices' days, partitions and replicas merge: merge(a, b) is the summary of both sets of pairs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from monitor.outcomes import class_of
from monitor.outcomes.summary import score_of
from monitor.profiles.serving import LatencySketch

__all__ = ["LabelledPair", "PairOutcome", "ShadowSummary", "label_outcome", "pair_outcome"]

_SKETCHES = ("abs_diff", "latency_ratio")


@dataclass(frozen=True, slots=True)
class PairOutcome:
    """What one pair adds: a flip (None: no class), |score diff|, latency ratio (None: none)."""

    flip: bool | None
    abs_diff: float | None
    latency_ratio: float | None


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """One labelled pair: each side's correctness (classes), or the absolute-error difference
    shadow minus primary (regression)."""

    primary_ok: bool | None = None
    shadow_ok: bool | None = None
    error_diff: float | None = None


def _decision(prediction: Any, task: str, threshold: float, output: str | None) -> str | None:
    """The predicted class of a prediction: the score's side of `threshold`, or its class."""
    if task == "classification":
        score = score_of(prediction, output)
        return None if score is None or not math.isfinite(score) else str(int(score >= threshold))
    if task == "multiclass":
        return class_of(prediction, output)
    return None


def _score(prediction: Any, task: str, output: str | None) -> float | None:
    if task == "multiclass":
        return None
    score = score_of(prediction, output)
    return score if score is not None and math.isfinite(score) else None


def pair_outcome(
    primary: Any,
    shadow: Any,
    latency: tuple[float | None, float | None],
    task: str,
    threshold: float = 0.5,
    output: str | None = None,
) -> PairOutcome:
    """What the pair of predictions `primary`, `shadow` (and their latencies) adds."""
    one, two = (_decision(p, task, threshold, output) for p in (primary, shadow))
    flip = None if one is None or two is None else one != two
    a, b = _score(primary, task, output), _score(shadow, task, output)
    diff = None if a is None or b is None else abs(b - a)
    base, other = latency
    ratio = other / base if base is not None and other is not None and base > 0 else None
    return PairOutcome(flip, diff, ratio)


def label_outcome(
    primary: Any,
    shadow: Any,
    label: Any,
    task: str,
    threshold: float = 0.5,
    output: str | None = None,
) -> LabelledPair | None:
    """The correctness pair of a labelled pair; None when a side or the label has no value."""
    if task == "regression":
        y, a, b = score_of(label, None), _score(primary, task, output), _score(shadow, task, output)
        if y is None or a is None or b is None or not math.isfinite(y):
            return None
        return LabelledPair(error_diff=abs(b - y) - abs(a - y))
    truth = _decision(label, task, 0.5, None)  # a binary label is 0/1, whatever the threshold
    one, two = (_decision(p, task, threshold, output) for p in (primary, shadow))
    if truth is None or one is None or two is None:
        return None
    return LabelledPair(one == truth, two == truth)


@dataclass(frozen=True)
class ShadowSummary:
    """Additive counts and mergeable sketches of some shadow pairs (see the module docstring)."""

    pairs: int = 0
    decided: int = 0
    flips: int = 0
    scored: int = 0
    abs_diff_sum: float = 0.0
    abs_diff: LatencySketch = field(default_factory=LatencySketch)
    timed: int = 0
    ratio_sum: float = 0.0
    latency_ratio: LatencySketch = field(default_factory=LatencySketch)
    unpaired_primary: int = 0
    unpaired_shadow: int = 0
    labelled: int = 0
    both_correct: int = 0
    primary_only: int = 0
    shadow_only: int = 0
    both_wrong: int = 0
    error_diff_sum: float = 0.0
    error_diff_squares: float = 0.0

    @classmethod
    def of(
        cls,
        pairs: Iterable[PairOutcome] = (),
        labelled: Iterable[LabelledPair] = (),
        unpaired_primary: int = 0,
        unpaired_shadow: int = 0,
    ) -> ShadowSummary:
        """The summary of `pairs`, `labelled` pairs and unpaired sides."""
        pairs, labelled = list(pairs), list(labelled)
        decided = [p.flip for p in pairs if p.flip is not None]
        diffs = [p.abs_diff for p in pairs if p.abs_diff is not None]
        ratios = [p.latency_ratio for p in pairs if p.latency_ratio is not None]
        cells = [(p.primary_ok, p.shadow_ok) for p in labelled if p.error_diff is None]
        errors = [p.error_diff for p in labelled if p.error_diff is not None]
        return cls(
            pairs=len(pairs),
            decided=len(decided),
            flips=sum(decided),
            scored=len(diffs),
            abs_diff_sum=math.fsum(diffs),
            abs_diff=LatencySketch.of(diffs),
            timed=len(ratios),
            ratio_sum=math.fsum(ratios),
            latency_ratio=LatencySketch.of(ratios),
            unpaired_primary=unpaired_primary,
            unpaired_shadow=unpaired_shadow,
            labelled=len(labelled),
            both_correct=cells.count((True, True)),
            primary_only=cells.count((True, False)),
            shadow_only=cells.count((False, True)),
            both_wrong=cells.count((False, False)),
            error_diff_sum=math.fsum(errors),
            error_diff_squares=math.fsum(e * e for e in errors),
        )

    def merge(self, other: ShadowSummary) -> ShadowSummary:
        """The summary of both summaries' pairs."""
        values: dict[str, Any] = {}
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            values[f.name] = mine.merge(theirs) if f.name in _SKETCHES else mine + theirs
        return replace(self, **values)

    def to_row(self) -> dict[str, Any]:
        """Column values of a `shadow_windows` row (sketches as JSON documents)."""
        row = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in _SKETCHES:
            row[name] = row[name].to_json()
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any] | Any) -> ShadowSummary:
        """A stored `shadow_windows` row (a mapping or an ORM/result row)."""
        get = row.get if isinstance(row, Mapping) else lambda name: getattr(row, name)
        values: dict[str, Any] = {}
        for f in fields(cls):
            value = get(f.name)
            if f.name in _SKETCHES:
                values[f.name] = LatencySketch.from_json(value)
            else:
                values[f.name] = (
                    float(value or 0) if "sum" in f.name or "squares" in f.name else int(value or 0)
                )
        return cls(**values)
