"""Candidate comparison: several optimized builds against one reference, side by side.

Each candidate is gated against the reference on the golden set (its preset's tolerances) and
measured on this machine: the task metric and its drop, p95/p99 latency per batch size,
throughput, cost per 1,000 predictions at that throughput, and whether it meets the given SLOs.
SLO keys: `latency_p95_ms`, `latency_p99_ms` (at the largest batch size), `metric_drop` (task
metric drop, in the gate's unit), `min_rps` (rows per second) and `cost_per_1k`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from guards.gate import GateRequest, run_gate
from guards.policy import preset as preset_policy
from guards.results import GuardVerdict, LatencyStats
from monitor.errors import InputError
from monitor.slo.evaluate import cost_per_1k

SLO_KEYS = ("latency_p95_ms", "latency_p99_ms", "metric_drop", "min_rps", "cost_per_1k")


@dataclass(frozen=True)
class CandidateRow:
    """One candidate's line of the comparison table."""

    candidate: str
    preset: str
    verdict: str
    metric: str | None
    reference_metric: float | None
    candidate_metric: float | None
    metric_drop: float | None
    latency: tuple[LatencyStats, ...]
    cost_per_1k: float | None
    missed: tuple[str, ...]  # SLO keys not met

    @property
    def meets_slo(self) -> bool:
        return not self.missed

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "preset": self.preset,
            "verdict": self.verdict,
            "metric": self.metric,
            "reference_metric": self.reference_metric,
            "candidate_metric": self.candidate_metric,
            "metric_drop": self.metric_drop,
            "latency": [{"batch_size": s.batch_size, **s.to_dict()} for s in self.latency],
            "cost_per_1k": self.cost_per_1k,
            "meets_slo": self.meets_slo,
            "missed": list(self.missed),
        }


def parse_slo(items: Sequence[str]) -> dict[str, float]:
    """`--slo key=value` items; InputError naming an unknown key or a bad number."""
    out: dict[str, float] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or key not in SLO_KEYS:
            raise InputError(f"--slo {item!r}: expected KEY=NUMBER with KEY one of "
                             f"{', '.join(SLO_KEYS)}")  # fmt: skip
        try:
            out[key] = float(text)
        except ValueError:
            raise InputError(f"--slo {item!r}: {text!r} is not a number") from None
    return out


def compare_candidates(
    base: GateRequest,
    candidates: Sequence[tuple[Path, str]],
    slo: Mapping[str, float],
    hourly_price: float | None = None,
    replicas: int = 1,
) -> list[CandidateRow]:
    """Gate and measure each (candidate path, preset) against `base.reference`."""
    if not base.latency_batch_sizes:
        raise InputError("compare needs at least one latency batch size")
    rows = []
    for path, name in candidates:
        policy = preset_policy(name)
        if policy.max_metric_drop is None:
            # Every candidate reports its task metric; 100 points is a drop no metric exceeds.
            policy = policy.with_overrides({"max_metric_drop": slo.get("metric_drop", 100.0)})
        request = replace(base, candidate=path, policy=policy)
        verdict = run_gate(request)
        rows.append(_row(path, name, verdict, slo, hourly_price, replicas))
    return rows


def _row(path: Path, name: str, verdict: GuardVerdict, slo: Mapping[str, float],
         hourly_price: float | None, replicas: int) -> CandidateRow:  # fmt: skip
    stats = verdict.latency.get("candidate", ())
    top = stats[-1]
    cost = cost_per_1k(hourly_price, replicas, top.rows_per_s) if hourly_price else None
    metric = next((c for c in verdict.criteria
                   if c.name.startswith("metric_drop:") and c.slice is None), None)  # fmt: skip
    drop = metric.value if metric is not None else None
    observed: dict[str, float | None] = {
        "latency_p95_ms": top.p95_ms, "latency_p99_ms": top.p99_ms, "metric_drop": drop,
        "cost_per_1k": cost,
    }  # fmt: skip
    missed = [key for key, bound in slo.items() if _misses(key, bound, observed, top.rows_per_s)]
    return CandidateRow(
        candidate=path.name,
        preset=name,
        verdict=verdict.verdict,
        metric=metric.name.split(":", 1)[1] if metric is not None else None,
        reference_metric=metric.reference if metric is not None else None,
        candidate_metric=metric.candidate if metric is not None else None,
        metric_drop=drop,
        latency=tuple(stats),
        cost_per_1k=cost,
        missed=tuple(missed),
    )


def _misses(key: str, bound: float, observed: Mapping[str, float | None], rps: float) -> bool:
    """Whether one SLO is missed: a floor for `min_rps`, a ceiling otherwise (unknown misses)."""
    if key == "min_rps":
        return rps < bound
    value = observed[key]
    return value is None or value > bound
