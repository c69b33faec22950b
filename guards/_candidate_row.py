"""One build's line of the candidate comparison (`guards.candidates`), shared by the comparison
and by storing its settings in the registry (`guards._candidate_settings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guards._memory import MemoryUse
from guards.results import LatencyStats


@dataclass(frozen=True)
class SloThroughput:
    """The largest measured batch size whose p95 meets a latency SLO, and its rows/s there."""

    batch_size: int
    rows_per_s: float
    p95_ms: float
    latency_slo_ms: float

    def to_dict(self) -> dict[str, float]:
        return {"batch_size": self.batch_size, "rows_per_s": self.rows_per_s,
                "p95_ms": self.p95_ms, "latency_slo_ms": self.latency_slo_ms}  # fmt: skip


@dataclass(frozen=True)
class CandidateRow:
    """One build's line of the comparison table (the reference's first, `role` "reference")."""

    candidate: str
    preset: str | None
    verdict: str
    metric: str | None
    reference_metric: float | None
    candidate_metric: float | None
    metric_drop: float | None
    latency: tuple[LatencyStats, ...]
    cost_per_1k: float | None
    missed: tuple[str, ...]  # SLO keys not met
    role: str = "candidate"
    hourly_price: float | None = None
    file_bytes: int | None = None
    memory: MemoryUse | None = None
    at_slo: SloThroughput | None = None

    @property
    def meets_slo(self) -> bool:
        return not self.missed

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "role": self.role,
            "preset": self.preset,
            "verdict": self.verdict,
            "metric": self.metric,
            "reference_metric": self.reference_metric,
            "candidate_metric": self.candidate_metric,
            "metric_drop": self.metric_drop,
            "latency": [{"batch_size": s.batch_size, **s.to_dict()} for s in self.latency],
            "hourly_price": self.hourly_price,
            "cost_per_1k": self.cost_per_1k,
            "file_bytes": self.file_bytes,
            "peak_rss_bytes": None if self.memory is None else self.memory.rss_bytes,
            "device_memory_bytes": None if self.memory is None else self.memory.device_bytes,
            "throughput_at_slo": None if self.at_slo is None else self.at_slo.to_dict(),
            "meets_slo": self.meets_slo,
            "missed": list(self.missed),
        }
