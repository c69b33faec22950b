"""`find_segments`: the weak segments of a frame with labels and predictions."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.errors import InputError
from monitor.segments._encode import encode
from monitor.segments._search import Scorer, search
from monitor.segments._stats import bh_qvalues, mean_tests, rate_tests

METRICS = ("error_rate", "accuracy", "absolute_error", "log_loss")
RATES = ("error_rate", "accuracy")
EPS = 1e-15


@dataclass(frozen=True)
class Segment:
    """A reported segment: its predicates, support, metric inside and outside, and its test."""

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


@dataclass(frozen=True)
class SegmentReport:
    """What the search found, and how much it looked at (the family the q-values control)."""

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

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for seg, raw in zip(self.segments, out["segments"], strict=True):
            raw["predicates"] = [{"feature": f, "value": v} for f, v in seg.predicates]
            raw["description"] = seg.describe()
        return out


def row_losses(labels: Any, predictions: Any, metric: str, names: tuple[str, str]) -> NDArray[Any]:
    """Each row's loss (0/1 error, absolute error, log loss); non-finite input is an InputError."""
    if metric not in METRICS:
        raise InputError(f"metric '{metric}': use one of {', '.join(METRICS)}")
    y = np.asarray(labels)
    p = np.asarray(predictions)
    for values, name in ((y, names[0]), (p, names[1])):
        if values.dtype.kind in "iufb":
            if not np.isfinite(values.astype(np.float64)).all():
                raise InputError(f"column '{name}': missing or non-finite values")
        elif any(v is None or (isinstance(v, float) and not math.isfinite(v)) for v in values):
            raise InputError(f"column '{name}': missing or non-finite values")
    if metric in RATES:
        if y.dtype.kind in "iufb" and p.dtype.kind in "iufb":
            unequal: NDArray[np.bool_] = y.astype(np.float64) != p.astype(np.float64)
            return unequal.astype(np.float64)
        different: NDArray[np.bool_] = y.astype(str) != p.astype(str)
        return different.astype(np.float64)
    for values, name in ((y, names[0]), (p, names[1])):
        if values.dtype.kind not in "iufb":
            raise InputError(f"column '{name}': {metric} needs numeric values")
    yf, pf = y.astype(np.float64), p.astype(np.float64)
    if metric == "absolute_error":
        return np.abs(yf - pf)
    if not np.isin(yf, (0.0, 1.0)).all():
        raise InputError(f"column '{names[0]}': log_loss needs 0/1 labels")
    if ((pf < 0) | (pf > 1)).any():
        raise InputError(f"column '{names[1]}': log_loss needs probabilities in [0, 1]")
    pc = np.clip(pf, EPS, 1 - EPS)
    return -(yf * np.log(pc) + (1 - yf) * np.log(1 - pc))


def find_segments(
    frame: Any,
    label: str,
    prediction: str,
    features: Sequence[str] | None = None,
    metric: str = "error_rate",
    max_predicates: int = 3,
    min_support: int = 30,
    min_share: float = 0.01,
    top: int = 10,
    alpha: float = 0.05,
    score_alpha: float = 0.95,
    bins: int = 10,
    edges: Mapping[str, Sequence[float]] | None = None,
) -> SegmentReport:
    """Search conjunctions of up to `max_predicates` predicates for segments worse than the rest.

    Reported: the `top` segments by SliceLine score whose Benjamini–Hochberg q-value (over every
    slice evaluated) is below `alpha`. `edges` bins numeric features on a baseline's edges.
    """
    for col in (label, prediction, *(features or ())):
        if col not in frame.columns:
            raise InputError(f"column '{col}' not found")
    if not 1 <= max_predicates <= 5:
        raise InputError(f"max_predicates {max_predicates}: use 1 to 5")
    if min_support < 1 or not 0 <= min_share < 1 or top < 1 or not 0 < alpha < 1:
        raise InputError("min_support and top must be positive, min_share and alpha in (0, 1)")
    feats = (
        list(features) if features else [c for c in frame.columns if c not in (label, prediction)]
    )
    n = len(frame)
    sigma = max(min_support, math.ceil(min_share * n))
    err = row_losses(
        frame[label].to_numpy(), frame[prediction].to_numpy(), metric, (label, prediction)
    )
    overall = _metric_value(float(err.mean()), metric) if n else None

    def empty(reason: str, tested: int = 0, counted: int = 0, pruned: int = 0) -> SegmentReport:
        return SegmentReport(metric, n, overall, feats, sigma, max_predicates, alpha, tested,
                             counted, pruned, [], reason)  # fmt: skip

    if n == 0:
        return empty("no rows")
    if not feats:
        return empty("no features to search")
    if n < 2 * sigma:
        return empty(f"{n} rows: fewer than twice the minimum support ({sigma})")
    if not err.any():
        return empty("no errors: every row's loss is 0")
    enc = encode(frame, feats, bins=bins, edges=edges)
    codes = [np.ascontiguousarray(enc.codes[:, j]) for j in range(len(feats))]
    scorer = Scorer(n, float(err.mean()), float(err.max()), score_alpha, sigma)
    result = search(codes, enc.cardinalities, err, scorer, max_predicates, top, metric not in RATES)
    ev = result.evaluated
    count = np.concatenate(ev.count) if ev.count else np.empty(0)
    errsum = np.concatenate(ev.errsum) if ev.errsum else np.empty(0)
    sqsum = np.concatenate(ev.sqsum) if ev.sqsum else np.empty(0)
    if metric in RATES:
        p, effect, half = rate_tests(count, errsum, n, float(err.sum()))
    else:
        p, effect, half = mean_tests(
            count, errsum, sqsum, n, float(err.sum()), float((err * err).sum())
        )
    q = bh_qvalues(p)
    scores = scorer.score(count, errsum)
    keep = np.flatnonzero((q < alpha) & (scores > 0) & (effect > 0))
    keep = keep[np.lexsort((q[keep], -scores[keep]))][:top]
    wanted = set(keep.tolist())
    where = {pos: (combo, cell) for combo, cell, pos in ev.rows() if pos in wanted}
    segments = []
    for i in keep.tolist():
        combo, cell = where[i]
        idx = np.unravel_index(cell, tuple(enc.cardinalities[f] for f in combo))
        preds = [(feats[f], enc.labels[f][int(c)]) for f, c in zip(combo, idx, strict=True)]
        inside = float(errsum[i] / count[i])
        outside = float((err.sum() - errsum[i]) / (n - count[i]))
        segments.append(Segment(
            preds, int(count[i]), float(count[i] / n), _metric_value(inside, metric),
            _metric_value(outside, metric), float(effect[i]), float(effect[i] - half[i]),
            float(effect[i] + half[i]), float(p[i]), float(q[i]), float(scores[i]),
        ))  # fmt: skip
    reason = None if segments else f"no segment worse than the rest with q < {alpha}"
    return SegmentReport(metric, n, overall, feats, sigma, max_predicates, alpha, int(p.size),
                         result.combos_counted, result.combos_pruned, segments, reason)  # fmt: skip


def _metric_value(mean_loss: float, metric: str) -> float:
    return 1.0 - mean_loss if metric == "accuracy" else mean_loss
