"""Typed, frozen results of a layer localisation and their JSON form.

Non-finite numbers (an infinite SQNR for identical tensors, the error of an overflowed fp16
tensor) are written as `null`, like the rest of the verdict document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guards._json import finite_or_none


@dataclass(frozen=True)
class TensorError:
    """Candidate vs reference on one matched intermediate tensor, over the replayed rows.

    rel_err is max_abs over the reference tensor's largest magnitude (error relative to the
    tensor's dynamic range, comparable across layers); growth is rel_err over the largest
    rel_err this tensor's inputs arrive with (floored at the tolerance): where error is born.
    """

    name: str
    op_type: str
    node: str
    max_abs: float
    rel_err: float
    sqnr_db: float
    cosine: float
    slice_max_abs: float | None
    nan_or_inf: int
    growth: float

    def to_dict(self) -> dict[str, Any]:
        slice_max = self.slice_max_abs
        return {
            "name": self.name,
            "op_type": self.op_type,
            "max_abs": finite_or_none(self.max_abs),
            "rel_err": finite_or_none(self.rel_err),
            "sqnr_db": finite_or_none(self.sqnr_db),
            "cosine": finite_or_none(self.cosine),
            "slice_max_abs": None if slice_max is None else finite_or_none(slice_max),
            "nan_or_inf": self.nan_or_inf,
            "growth": finite_or_none(self.growth),
        }


@dataclass(frozen=True)
class ActivationRange:
    """An int8 build's calibrated range of one quantized activation vs what the rows reach.

    `reached_*` are the reference model's values on the failing slice (all replayed rows when
    no slice failed); `clipped` is the share of those values outside the calibrated range.
    """

    name: str
    calibrated_min: float
    calibrated_max: float
    reached_min: float
    reached_max: float
    clipped: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "calibrated_min": finite_or_none(self.calibrated_min),
            "calibrated_max": finite_or_none(self.calibrated_max),
            "reached_min": finite_or_none(self.reached_min),
            "reached_max": finite_or_none(self.reached_max),
            "clipped": finite_or_none(self.clipped),
        }


@dataclass(frozen=True)
class Remedy:
    """A fix suggested by clear evidence, with the tool option that applies it."""

    tensor: str
    option: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"tensor": self.tensor, "option": self.option, "text": self.text}


@dataclass(frozen=True)
class Localization:
    """Where in the graph the candidate departs from the reference, in topological order."""

    first_divergent: str | None
    largest_growth: str | None
    tensors: tuple[TensorError, ...]
    rows: int
    seconds: float
    tolerance: float
    slice: dict[str, str] | None = None
    ranges: tuple[ActivationRange, ...] = ()
    remedies: tuple[Remedy, ...] = ()
    truncated: bool = False
    error: str | None = None

    @classmethod
    def failed(cls, error: str, seconds: float, tolerance: float) -> Localization:
        """A localisation that could not run: the gate's verdict stands, the reason is shown."""
        return cls(None, None, (), 0, seconds, tolerance, error=error)

    def to_dict(self) -> dict[str, Any]:
        return {
            "first_divergent": self.first_divergent,
            "largest_growth": self.largest_growth,
            "tensors": [t.to_dict() for t in self.tensors],
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
            "tolerance": self.tolerance,
            "slice": self.slice,
            "ranges": [r.to_dict() for r in self.ranges],
            "remedies": [r.to_dict() for r in self.remedies],
            "truncated": self.truncated,
            "error": self.error,
        }
