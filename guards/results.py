"""Typed, frozen results of a gate run and their JSON document.

Non-finite floats (an infinite SQNR for identical outputs, a metric undefined on a one-class
slice) are written as `null` so the document stays strict JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from guards._json import finite_or_none
from guards.localize import Localization

Status = Literal["pass", "fail", "inconclusive"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "inconclusive")


@dataclass(frozen=True)
class Criterion:
    """One checked rule: its value against its threshold, overall or on one slice."""

    name: str
    value: float
    threshold: float
    status: Status
    slice: Mapping[str, str] | None = None
    rows: int = 0
    # What the value was computed from (task metric or p95 of each model) and the value's unit,
    # so a report can say "accuracy 0.912 -> 0.794, drop 11.8 points".
    reference: float | None = None
    candidate: float | None = None
    unit: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"criterion {self.name!r}: unknown status {self.status!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "slice": dict(self.slice) if self.slice is not None else None,
            "value": finite_or_none(self.value),
            "threshold": finite_or_none(self.threshold),
            "status": self.status,
            "unit": self.unit,
            "reference": None if self.reference is None else finite_or_none(self.reference),
            "candidate": None if self.candidate is None else finite_or_none(self.candidate),
        }

    def describe(self) -> str:
        """One line: name, slice, value and threshold."""
        where = ", ".join(f"{k}={v}" for k, v in (self.slice or {}).items()) or "overall"
        unit = f" {self.unit}" if self.unit else ""
        line = (
            f"{self.name} [{where}] = {self.value:.6g}{unit} (threshold {self.threshold:.6g}{unit})"
        )
        if self.reference is not None and self.candidate is not None:
            line += f"; reference {self.reference:.6g}, candidate {self.candidate:.6g}"
        return line


@dataclass(frozen=True)
class OutputStats:
    """Elementwise comparison of one output of candidate vs reference."""

    max_abs: float
    mean_abs: float
    p99_abs: float
    max_rel: float
    cosine: float
    sqnr_db: float
    min_passing_atol: float
    nan_or_inf: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_abs": finite_or_none(self.max_abs),
            "mean_abs": finite_or_none(self.mean_abs),
            "p99_abs": finite_or_none(self.p99_abs),
            "max_rel": finite_or_none(self.max_rel),
            "cosine": finite_or_none(self.cosine),
            "sqnr_db": finite_or_none(self.sqnr_db),
            "min_passing_atol": finite_or_none(self.min_passing_atol),
            "nan_or_inf": self.nan_or_inf,
        }


@dataclass(frozen=True)
class LatencyStats:
    """Latency of one model at one batch size, after warm-up."""

    batch_size: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    rows_per_s: float

    def to_dict(self) -> dict[str, float]:
        return {
            "p50_ms": self.p50_ms,
            "p95_ms": self.p95_ms,
            "p99_ms": self.p99_ms,
            "rows_per_s": self.rows_per_s,
        }


@dataclass(frozen=True)
class WorstRow:
    """A golden row where candidate and reference disagree most."""

    id: Any
    slice: Mapping[str, str]
    max_abs: float
    flip: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "slice": dict(self.slice),
            "max_abs": finite_or_none(self.max_abs),
            "flip": self.flip,
        }


@dataclass(frozen=True)
class GuardVerdict:
    """The outcome of a gate: verdict, every criterion, output stats, latency, worst rows."""

    verdict: Status
    preset: str
    rows: int
    providers: Mapping[str, tuple[str, ...]]
    criteria: tuple[Criterion, ...]
    outputs: Mapping[str, OutputStats]
    latency: Mapping[str, tuple[LatencyStats, ...]] = field(default_factory=dict)
    worst_rows: tuple[WorstRow, ...] = ()
    timing: Mapping[str, float] = field(default_factory=dict)
    localization: Localization | None = None
    # Who and what was gated: model, version, time, artifact names and sha256 (see gate.run_info).
    run: Mapping[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail, 3 inconclusive (2 is reserved for errors)."""
        return {"pass": 0, "fail": 1, "inconclusive": 3}[self.verdict]

    @property
    def failing(self) -> tuple[Criterion, ...]:
        return tuple(c for c in self.criteria if c.status == "fail")

    def to_dict(self) -> dict[str, Any]:
        """The verdict document served by the CLI (`--json`) and the gate endpoint.

        `localization` is present only when layer localisation ran.
        """
        doc = {
            "verdict": self.verdict,
            "run": dict(self.run),
            "preset": self.preset,
            "rows": self.rows,
            "providers": {k: list(v) for k, v in self.providers.items()},
            "criteria": [c.to_dict() for c in self.criteria],
            "outputs": {k: v.to_dict() for k, v in self.outputs.items()},
            "latency": {
                model: {str(s.batch_size): s.to_dict() for s in stats}
                for model, stats in self.latency.items()
            },
            "worst_rows": [r.to_dict() for r in self.worst_rows],
        }
        if self.localization is not None:
            doc["localization"] = self.localization.to_dict()
        return doc


def overall_status(criteria: tuple[Criterion, ...]) -> Status:
    """fail if any criterion fails, else inconclusive if any is, else pass."""
    statuses = {c.status for c in criteria}
    if "fail" in statuses:
        return "fail"
    return "inconclusive" if "inconclusive" in statuses else "pass"
