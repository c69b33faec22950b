"""Per-rate results and the knee: where latency departs from the service time.

The service time `S` is the median corrected latency at the lowest rate tested, and `T` that
rate's p99 (run the lowest rate well below capacity: there nothing queues, so they describe the
time the server itself takes, tail included). A rate *departs* when any of these holds:

- its corrected median is above `MEDIAN_FACTOR × S`, or its corrected p99 above
  `TAIL_FACTOR × T` (requests queue: below capacity a fixed-rate arrival stream waits little,
  past it the queue and the latency grow for as long as the test runs). Against the low-rate
  p99 rather than `S`: a shared machine's tail alone can be 3 × the median with nothing queued;
- its achieved rate is below `ACHIEVED_SHARE` of the offered rate (the target cannot keep up);
- more than `ERROR_SHARE` of its requests failed.

The *knee* is the lowest departing rate. The capacity estimate is bracketed by the rates: the
*sustained rate* is the highest tested rate below the knee (it held), and the *saturated
throughput* is the highest achieved rate among the departing ones (what the target delivered
when overloaded — for a single worker, 1 / S). No knee means capacity is above every rate tried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from monitor.loadtest._engine import RateRun

MEDIAN_FACTOR = 2.0
TAIL_FACTOR = 3.0
ACHIEVED_SHARE = 0.9
ERROR_SHARE = 0.01


@dataclass(frozen=True)
class Latency:
    """Percentiles of one histogram, in milliseconds (None when nothing succeeded)."""

    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None

    def to_dict(self) -> dict[str, float | None]:
        return {"p50_ms": self.p50, "p95_ms": self.p95, "p99_ms": self.p99, "max_ms": self.max}


@dataclass(frozen=True)
class RateResult:
    """One offered rate: what was sent, achieved, measured and what failed."""

    rate: float
    sent: int
    ok: int
    achieved_rate: float
    latency: Latency
    uncorrected: Latency
    errors: dict[str, int]
    connections: int
    departs: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "sent": self.sent,
            "ok": self.ok,
            "achieved_rate": self.achieved_rate,
            "latency": self.latency.to_dict(),
            "uncorrected_latency": self.uncorrected.to_dict(),
            "errors": dict(sorted(self.errors.items())),
            "connections": self.connections,
            "departs": self.departs,
        }


@dataclass(frozen=True)
class LoadtestReport:
    """Every rate in order, the service time and the knee (None when none departed)."""

    url: str
    duration_s: float
    timeout_s: float
    rates: tuple[RateResult, ...]
    service_time_ms: float | None
    knee_rate: float | None
    sustained_rate: float | None
    saturated_throughput: float | None

    @property
    def rule(self) -> str:
        """When a rate departs, in words."""
        return (
            f"p50 > {MEDIAN_FACTOR:g} x service time or p99 > {TAIL_FACTOR:g} x the lowest "
            f"rate's p99, achieved < {ACHIEVED_SHARE:.0%} of offered, or errors > {ERROR_SHARE:.0%}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "duration_s": self.duration_s,
            "timeout_s": self.timeout_s,
            "service_time_ms": self.service_time_ms,
            "knee": {
                "rate": self.knee_rate,
                "sustained_rate": self.sustained_rate,
                "saturated_throughput": self.saturated_throughput,
                "rule": self.rule,
            },
            "rates": [r.to_dict() for r in self.rates],
        }


def percentiles(histogram: Any) -> Latency:
    """p50/p95/p99/max of an HdrHistogram of microseconds, in ms."""
    if histogram.get_total_count() == 0:
        return Latency(None, None, None, None)
    at = histogram.get_value_at_percentile
    return Latency(at(50) / 1e3, at(95) / 1e3, at(99) / 1e3, histogram.get_max_value() / 1e3)


def summarise(url: str, duration: float, timeout: float, runs: list[RateRun]) -> LoadtestReport:
    """Percentiles per rate, then the service time, which rates depart, and the knee."""
    ordered = sorted(runs, key=lambda r: r.rate)
    base = percentiles(ordered[0].corrected) if ordered else Latency(None, None, None, None)
    results = tuple(_result(run, base) for run in ordered)
    knee = next((r for r in results if r.departs), None)
    held = [r.rate for r in results if knee is None or r.rate < knee.rate]
    over = [r.achieved_rate for r in results if knee is not None and r.rate >= knee.rate]
    return LoadtestReport(
        url=url,
        duration_s=duration,
        timeout_s=timeout,
        rates=results,
        service_time_ms=base.p50,
        knee_rate=None if knee is None else knee.rate,
        sustained_rate=max(held, default=None),
        saturated_throughput=max(over, default=None),
    )


def _result(run: RateRun, base: Latency) -> RateResult:
    ok = run.corrected.get_total_count()
    achieved = ok / run.elapsed_s if run.elapsed_s > 0 else 0.0
    lat = percentiles(run.corrected)
    failed = sum(run.errors.values())
    departs = (
        base.p50 is None
        or base.p99 is None
        or lat.p50 is None
        or lat.p99 is None
        or lat.p50 > MEDIAN_FACTOR * base.p50
        or lat.p99 > TAIL_FACTOR * base.p99
        or achieved < ACHIEVED_SHARE * run.rate
        or failed > ERROR_SHARE * run.sent
    )
    return RateResult(
        rate=run.rate,
        sent=run.sent,
        ok=ok,
        achieved_rate=achieved,
        latency=lat,
        uncorrected=percentiles(run.uncorrected),
        errors=run.errors,
        connections=run.connections,
        departs=departs,
    )
