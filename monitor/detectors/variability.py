"""Drift bounds derived from reference-period variability (the second threshold strategy).

Why: one constant bound per detector treats a column whose distribution wanders week to week
in the training period like one that never moves, so the first alarms on its ordinary
wandering and the second is let drift a long way. Following NannyML's standard-deviation
thresholds, the reference itself says how much each statistic varies naturally.

How: when a baseline is created the reference is also profiled in ``K`` contiguous chunks
(file order, on the baseline's own edges). For each column and each detector accepting its
kind, the statistic between every chunk and the whole reference is computed; its mean,
population standard deviation and maximum over the chunks (a `Spread`) are stored with the
baseline. Raw data is never needed again: `ReferenceThresholds` reads the stored spreads.

Bound of (column, detector) = ``max(mean + k·std, floor_fraction × constant bound)``:

* ``k`` (default 3) — NannyML's multiplier; only the upper side matters (distances are >= 0).
* The floor keeps a perfectly stable reference (std ≈ 0) from turning tiny, practically
  irrelevant shifts into alarms; its source is reported as "floor".
* No spread for the pair (older baselines, chunks under ``MIN_N`` values, fewer than
  ``MIN_CHUNKS`` usable chunks): the constant bound, reported as "constant".

The statistic of a chunk is measured at the chunk's size (reference rows / K); sampling noise
shrinks as windows grow, so the band is sized for windows about as large as a chunk. The
p-value (at the window's real size) still has to pass as well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from monitor.detectors._base import (
    MIN_N,
    Bound,
    ConstantThresholds,
    Detector,
    Pair,
    ThresholdStrategy,
    detectors,
)
from monitor.errors import InputError, RegistryError
from monitor.profiles import ColumnSpec, ProfileSet, profile_frame

DEFAULT_CHUNKS = 10
DEFAULT_K = 3.0
DEFAULT_FLOOR_FRACTION = 0.5
# The std of one or two chunk statistics says nothing about a column's natural variability.
MIN_CHUNKS = 3
THRESHOLD_STRATEGIES = ("constant", "reference")


@dataclass(frozen=True)
class Spread:
    """How one statistic varied between the reference's chunks and the whole reference."""

    mean: float
    std: float
    max: float
    chunks: int


@dataclass(frozen=True)
class Variability:
    """Per-(column, method) spreads of a reference, as stored with its baseline."""

    chunks: int
    chunk_rows: int
    spreads: Mapping[tuple[str, str], Spread] = field(default_factory=dict)

    def get(self, column: str, method: str) -> Spread | None:
        return self.spreads.get((column, method))

    def to_dict(self) -> dict[str, Any]:
        """The JSON document stored in the baseline's settings."""
        out: dict[str, dict[str, dict[str, float | int]]] = {}
        for (column, method), s in self.spreads.items():
            out.setdefault(column, {})[method] = {
                "mean": s.mean, "std": s.std, "max": s.max, "chunks": s.chunks,
            }  # fmt: skip
        return {"chunks": self.chunks, "chunk_rows": self.chunk_rows, "spreads": out}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Variability:
        """Inverse of `to_dict`; InputError naming the bad entry otherwise."""
        try:
            spreads = {
                (str(col), str(method)): Spread(
                    float(s["mean"]), float(s["std"]), float(s["max"]), int(s["chunks"])
                )
                for col, methods in data["spreads"].items()
                for method, s in methods.items()
            }
            return cls(int(data["chunks"]), int(data["chunk_rows"]), spreads)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"stored reference variability is malformed: {exc!r}") from None


def chunk_profiles(frame: Any, specs: Mapping[str, ColumnSpec], chunks: int) -> list[ProfileSet]:
    """Overall profiles of `chunks` contiguous, near-equal row ranges of `frame`."""
    if chunks < 1:
        raise InputError(f"reference chunks must be at least 1, got {chunks}")
    bounds = np.linspace(0, len(frame), chunks + 1).round().astype(int)
    return [
        profile_frame(frame.iloc[a:b], specs) for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]


def reference_variability(
    whole: ProfileSet, chunks: Sequence[ProfileSet], min_n: int = MIN_N
) -> Variability:
    """Spread of every applicable detector's statistic, chunk vs whole, per column."""
    spreads: dict[tuple[str, str], Spread] = {}
    for column in whole.columns:
        ref = whole.get(column)
        for detector in detectors().values():
            if ref.kind not in detector.kinds:
                continue
            spread = _spread(detector, ref, [c.get(column) for c in chunks], min_n)
            if spread is not None:
                spreads[(column, detector.name)] = spread
    rows = min((c.n_rows for c in chunks), default=0)
    return Variability(len(chunks), rows, spreads)


def profile_variability(
    frame: Any, specs: Mapping[str, ColumnSpec], whole: ProfileSet, chunks: int = DEFAULT_CHUNKS
) -> Variability:
    """Chunk `frame` (the data `whole` profiles) and summarise the spreads."""
    return reference_variability(whole, chunk_profiles(frame, specs, chunks))


def _spread(detector: Detector, ref: Any, parts: Sequence[Any], min_n: int) -> Spread | None:
    if detector.size(ref) < min_n:
        return None
    values = [detector.score(Pair(ref, p)) for p in parts if detector.size(p) >= min_n]
    finite = np.array([v for v in values if np.isfinite(v)], dtype=np.float64)
    if finite.size < MIN_CHUNKS:
        return None
    return Spread(float(finite.mean()), float(finite.std()), float(finite.max()), finite.size)


@dataclass(frozen=True)
class ReferenceThresholds:
    """Bounds from the reference's own variability: ``max(mean + k·std, floor)``.

    ``floor`` is ``floor_fraction`` × the fallback's constant bound; pairs without a stored
    spread (or no `variability` at all: a baseline made before spreads were stored) use the
    fallback's constant bound.
    """

    variability: Variability | None
    k: float = DEFAULT_K
    floor_fraction: float = DEFAULT_FLOOR_FRACTION
    fallback: ConstantThresholds = field(default_factory=ConstantThresholds)

    def __post_init__(self) -> None:
        if not (np.isfinite(self.k) and self.k >= 0):
            raise InputError(f"threshold k must be a finite number >= 0, got {self.k}")
        if not (np.isfinite(self.floor_fraction) and self.floor_fraction >= 0):
            raise InputError(f"threshold floor must be >= 0, got {self.floor_fraction}")

    def bound(self, detector: Detector, column: str) -> Bound:
        constant = self.fallback.threshold(detector, column)
        spread = None if self.variability is None else self.variability.get(column, detector.name)
        if spread is None:
            return Bound(constant, "constant")
        derived = spread.mean + self.k * spread.std
        floor = self.floor_fraction * constant
        return Bound(derived, "reference") if derived >= floor else Bound(floor, "floor")


def threshold_strategy(
    name: str,
    variability: Variability | None = None,
    k: float = DEFAULT_K,
    floor_fraction: float = DEFAULT_FLOOR_FRACTION,
) -> ThresholdStrategy:
    """The strategy called `name`; RegistryError listing the valid names otherwise."""
    if name == "constant":
        return ConstantThresholds()
    if name == "reference":
        return ReferenceThresholds(variability, k, floor_fraction)
    raise RegistryError(
        f"unknown threshold strategy '{name}'; valid: {', '.join(THRESHOLD_STRATEGIES)}"
    )
