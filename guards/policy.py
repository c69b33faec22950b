"""Gate policies: the thresholds a candidate must meet, and the built-in presets.

A policy is a frozen set of thresholds; `None` switches a criterion off. Presets are the
starting point; config (`guards.presets.<name>`) and CLI flags override single fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from monitor.errors import ConfigError


@dataclass(frozen=True)
class GatePolicy:
    """Thresholds of one gate run.

    atol/rtol: elementwise `|c - r| <= atol + rtol * |r|` on every output (off when atol is None);
    max_mismatch_fraction: share of elements allowed outside that tolerance.
    max_abs: largest allowed absolute difference per output.
    max_flip_rate / max_slice_flip_rate: top-1 (or decision) flips, overall / per slice.
    max_metric_drop / max_slice_metric_drop: task metric drop in points (see `guards._tasks`).
    min_topk_overlap: mean top-k overlap for multi-class scores (off by default).
    latency_budget_ms: candidate p95 at the largest latency batch size.
    max_latency_ratio: candidate p95 / reference p95 (1.2 = at most 20% slower).
    min_slice_rows: below this many rows a criterion is inconclusive unless the evidence alone
    shows a breach at `confidence`.
    localize_tolerance: layer localisation's limit on an intermediate tensor's error relative
    to its range (max |c - r| / max |r|); the first tensor past it is `first_divergent`.
    """

    name: str
    atol: float | None = None
    rtol: float = 0.0
    max_mismatch_fraction: float = 0.0
    max_abs: float | None = None
    max_flip_rate: float | None = None
    max_slice_flip_rate: float | None = None
    max_metric_drop: float | None = None
    max_slice_metric_drop: float | None = None
    min_topk_overlap: float | None = None
    top_k: int = 5
    decision_threshold: float = 0.5
    latency_budget_ms: float | None = None
    max_latency_ratio: float | None = None
    min_slice_rows: int = 200
    confidence: float = 0.95
    localize_tolerance: float = 1e-4

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
                raise ConfigError(f"gate policy {self.name!r}: {f.name} must be >= 0, got {value}")
        if not 0.5 < self.confidence < 1.0:
            raise ConfigError(f"gate policy {self.name!r}: confidence must be in (0.5, 1)")
        if self.top_k < 1 or self.min_slice_rows < 1:
            raise ConfigError(f"gate policy {self.name!r}: top_k and min_slice_rows must be >= 1")

    def with_overrides(self, overrides: Mapping[str, Any]) -> GatePolicy:
        """A copy with the given fields replaced; `None` values are ignored."""
        known = {f.name for f in fields(self)} - {"name"}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ConfigError(f"unknown gate policy key(s): {', '.join(unknown)}")
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


PRESETS: Mapping[str, GatePolicy] = {
    "fp32": GatePolicy("fp32", atol=1e-5, rtol=1e-5, max_flip_rate=0.0, max_slice_flip_rate=0.0),
    "fp16": GatePolicy(
        "fp16",
        max_abs=1e-2,
        max_flip_rate=0.001,
        max_slice_flip_rate=0.005,
        localize_tolerance=1e-2,
    ),
    "int8": GatePolicy(
        "int8",
        max_flip_rate=0.01,
        max_slice_flip_rate=0.03,
        max_metric_drop=1.0,
        max_slice_metric_drop=3.0,
        localize_tolerance=0.1,
    ),
}


def preset(name: str) -> GatePolicy:
    """A built-in preset by name; ConfigError lists the valid names."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(
            f"unknown gate preset {name!r}; valid presets: {', '.join(PRESETS)}"
        ) from None
