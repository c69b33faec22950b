"""The calibration map CBPE rests on: histogram binning on the score's reference quantile edges,
made monotone by pooling adjacent violators, with the decision threshold forced to be an edge.

Binning (rather than a free-form isotonic fit) keeps estimation a function of per-bin counts, so a
window's estimate is exact from its score histogram and merges across windows, slices and
replicas. With the threshold on an edge every bin lies wholly on one side of it, so the
predicted class of a bin is known without the raw scores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.errors import CorruptProfileError, InputError

Array = NDArray[np.float64]
DEFAULT_BINS = 100
MIN_REFERENCE = 100  # fewer labelled reference rows than this: no calibration to stand on


@dataclass(frozen=True)
class Calibration:
    """Edges (interior, increasing; bin i is [edges[i-1], edges[i])), the calibrated positive
    probability per bin, the reference rows per bin and the expected calibration error of the
    raw scores against the labels on the reference (what calibration corrected)."""

    edges: tuple[float, ...]
    probability: tuple[float, ...]
    counts: tuple[int, ...]
    threshold: float
    raw_ece: float

    def __post_init__(self) -> None:
        if len(self.probability) != len(self.edges) + 1 or len(self.counts) != len(self.edges) + 1:
            raise InputError("calibration: need one probability and count per bin")
        if any(b <= a for a, b in zip(self.edges, self.edges[1:], strict=False)):
            raise InputError("calibration: edges must increase")

    @property
    def n_bins(self) -> int:
        return len(self.probability)

    def bin_of(self, scores: Array) -> NDArray[np.intp]:
        """The bin of each score (scores at an edge go to the bin above it)."""
        return np.searchsorted(np.asarray(self.edges), scores, side="right").astype(np.intp)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (stored with a baseline)."""
        return {"edges": list(self.edges), "probability": list(self.probability),
                "counts": list(self.counts), "threshold": self.threshold,
                "raw_ece": self.raw_ece}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "calibration") -> Calibration:
        """Inverse of `to_dict`; CorruptProfileError naming `where` on a malformed payload."""
        try:
            out = cls(
                tuple(float(x) for x in data["edges"]),
                tuple(float(x) for x in data["probability"]),
                tuple(int(x) for x in data["counts"]),
                float(data["threshold"]),
                float(data["raw_ece"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptProfileError(f"{where}: malformed calibration: {exc}") from None
        values = (*out.edges, *out.probability, out.threshold)
        if not all(math.isfinite(v) for v in values) or not all(
            0.0 <= p <= 1.0 for p in out.probability
        ):
            raise CorruptProfileError(f"{where}: calibration has non-finite or out-of-range values")
        return out

    def predicted_positive(self) -> NDArray[np.bool_]:
        """Per bin: whether its scores are at or above the threshold."""
        lower = np.concatenate([[-np.inf], np.asarray(self.edges)])
        return np.asarray(lower >= self.threshold)

    def calibrate(self, scores: Array) -> Array:
        """The calibrated positive probability of each score."""
        return np.asarray(self.probability)[self.bin_of(scores)]


def fit_calibration(
    scores: Array, labels: Array, threshold: float = 0.5, bins: int = DEFAULT_BINS
) -> Calibration:
    """Fit the binned, monotone calibration map on reference `scores` and 0/1 `labels`."""
    keep = np.isfinite(scores) & np.isfinite(labels)
    s, y = scores[keep], labels[keep]
    if s.size < MIN_REFERENCE:
        raise InputError(f"calibration needs at least {MIN_REFERENCE} labelled reference rows")
    if not np.isin(y, (0.0, 1.0)).all():
        raise InputError("calibration: the label must be 0/1 (or the positive class)")
    return _fit_on_edges(s, y, _edges(s, threshold, bins), threshold)


def refit(calibration: Calibration, scores: Array, labels: Array) -> Calibration:
    """`calibration`'s bins (edges and threshold) with their probabilities fitted on other
    labelled rows (`scores`, 0/1 `labels`; non-finite ones left out, none required: empty bins
    take their neighbours' values as in `fit_calibration`)."""
    keep = np.isfinite(scores) & np.isfinite(labels)
    edges = np.asarray(calibration.edges, dtype=np.float64)
    return _fit_on_edges(scores[keep], labels[keep], edges, calibration.threshold)


def _fit_on_edges(s: Array, y: Array, edges: Array, threshold: float) -> Calibration:
    idx = np.searchsorted(edges, s, side="right")
    counts = np.bincount(idx, minlength=edges.size + 1)
    positives = np.bincount(idx, weights=y, minlength=edges.size + 1).astype(np.float64)
    probability = _pool_adjacent_violators(positives, counts.astype(np.float64))
    return Calibration(
        tuple(float(e) for e in edges),
        tuple(float(p) for p in probability),
        tuple(int(c) for c in counts),
        float(threshold),
        _ece(s, y),
    )


def _edges(scores: Array, threshold: float, bins: int) -> Array:
    quantiles = np.quantile(scores, np.linspace(0.0, 1.0, bins + 1)[1:-1])
    return np.unique(np.concatenate([quantiles, [threshold]]))


def _pool_adjacent_violators(positives: Array, counts: Array) -> Array:
    """Weighted isotonic (non-decreasing) fit of positives/counts; empty bins take the value
    of their pooled neighbours (or the overall rate when every bin is empty)."""
    overall = positives.sum() / max(counts.sum(), 1.0)
    blocks: list[list[float]] = []  # [positives, count, bins]
    for pos, cnt in zip(positives, counts, strict=True):
        blocks.append([float(pos), float(cnt), 1.0])
        while len(blocks) > 1 and _rate(blocks[-2], overall) > _rate(blocks[-1], overall):
            last = blocks.pop()
            blocks[-1] = [a + b for a, b in zip(blocks[-1], last, strict=True)]
    out = [_rate(b, overall) for b in blocks for _ in range(int(b[2]))]
    return _fill_empty(np.asarray(out), counts)


def _rate(block: list[float], overall: float) -> float:
    return block[0] / block[1] if block[1] > 0 else overall


def _fill_empty(probability: Array, counts: Array) -> Array:
    # an empty bin between two fitted ones keeps monotonicity by taking the one below it
    seen = counts > 0
    if not seen.any():
        return probability
    first = int(np.argmax(seen))
    out = probability.copy()
    out[:first] = out[first]
    for i in range(first + 1, out.size):
        if not seen[i]:
            out[i] = out[i - 1]
    return out


def _ece(scores: Array, labels: Array, bins: int = 10) -> float:
    idx = np.minimum((np.clip(scores, 0.0, 1.0) * bins).astype(np.intp), bins - 1)
    n = np.bincount(idx, minlength=bins).astype(np.float64)
    conf = np.bincount(idx, weights=scores, minlength=bins)
    acc = np.bincount(idx, weights=labels, minlength=bins)
    return float(np.abs(conf - acc).sum() / max(n.sum(), 1.0))
