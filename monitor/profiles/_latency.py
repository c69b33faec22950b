"""A mergeable log-scale latency sketch (DDSketch-style) for p50/p95/p99 per window.

Values fall into buckets whose bounds grow by `gamma = (1 + a) / (1 - a)`; a bucket's value is
reported as `2 * gamma**i / (gamma + 1)`, so every quantile it returns is within relative error
`a` (RELATIVE_ERROR, 1 %) of an actual value of the data at that rank. Sketches of partitions,
replicas and windows merge exactly (bucket counts add). Values at or below MIN_VALUE (1 µs in
milliseconds) are counted in one zero bucket and reported as 0. An empty sketch's quantile is
None: there is no latency to report, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from monitor.errors import CorruptProfileError

__all__ = ["MIN_VALUE", "RELATIVE_ERROR", "LatencySketch"]

RELATIVE_ERROR = 0.01
MIN_VALUE = 1e-3
_GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
_LOG_GAMMA = math.log(_GAMMA)


@dataclass(frozen=True)
class LatencySketch:
    """Bucket counts of non-negative finite values; `n` counts all of them."""

    bins: Mapping[int, int] = field(default_factory=dict)
    zero: int = 0

    @property
    def n(self) -> int:
        return self.zero + sum(self.bins.values())

    @classmethod
    def of(cls, values: Iterable[float]) -> LatencySketch:
        """The sketch of `values` (non-negative, finite: validation guarantees it)."""
        arr = np.fromiter(values, dtype=np.float64)
        small = arr <= MIN_VALUE
        index = np.ceil(np.log(arr[~small]) / _LOG_GAMMA).astype(np.int64)
        keys, counts = np.unique(index, return_counts=True)
        bins = {int(k): int(c) for k, c in zip(keys, counts, strict=True)}
        return cls(bins, int(small.sum()))

    def merge(self, other: LatencySketch) -> LatencySketch:
        """The sketch of both sketches' values."""
        bins = dict(self.bins)
        for key, count in other.bins.items():
            bins[key] = bins.get(key, 0) + count
        return LatencySketch(bins, self.zero + other.zero)

    def quantile(self, q: float) -> float | None:
        """The value at quantile `q` (0..1) within RELATIVE_ERROR; None when empty."""
        n = self.n
        if n == 0:
            return None
        rank = q * (n - 1)
        seen = self.zero
        if seen > rank:
            return 0.0
        for key in sorted(self.bins):
            seen += self.bins[key]
            if seen > rank:
                return 2 * _GAMMA**key / (_GAMMA + 1)
        return 2 * _GAMMA ** max(self.bins) / (_GAMMA + 1)

    def total(self) -> float:
        """The sum of the values within RELATIVE_ERROR (each bucket at its reported value)."""
        return sum(c * 2 * _GAMMA**k / (_GAMMA + 1) for k, c in self.bins.items())

    def to_json(self) -> dict[str, Any]:
        """A JSON document (bucket keys as strings) that :meth:`from_json` reads back."""
        bins = {str(k): v for k, v in self.bins.items()}
        return {"a": RELATIVE_ERROR, "zero": self.zero, "bins": bins}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any] | None) -> LatencySketch:
        """A stored sketch; an empty one for None/{}; CorruptProfileError for another scale."""
        if not doc:
            return cls()
        if doc.get("a") != RELATIVE_ERROR:
            raise CorruptProfileError(f"latency sketch: relative error {doc.get('a')!r} unknown")
        try:
            return cls({int(k): int(v) for k, v in doc["bins"].items()}, int(doc["zero"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptProfileError(f"latency sketch: {exc}") from None
