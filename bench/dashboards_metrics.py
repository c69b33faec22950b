"""Metrics recording: modelwatch's bounded-label helpers vs raw prometheus-client calls.

Peer: `Gauge.labels(...).set()` on prometheus-client directly (no slice bounding). Also times
building and validating every dashboard (what `dashboards export` does before writing).

    PYTHONPATH=. /work/venv/bin/python bench/dashboards_metrics.py
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Gauge

from dashboards import ModelwatchMetrics, build_dashboards
from monitor.config import ModelConfig

CALLS = 200_000
REGIONS = [f"r{i}" for i in range(80)]  # more than the cap of 50: exercises "other"


def per_call_us(fn: object, calls: int) -> float:
    start = time.perf_counter()
    fn(calls)  # type: ignore[operator]
    return (time.perf_counter() - start) / calls * 1e6


def ours(calls: int) -> None:
    metrics = ModelwatchMetrics(CollectorRegistry(), [ModelConfig(name="m", slices=["region"])])
    for i in range(calls):
        region = REGIONS[i % len(REGIONS)]
        metrics.set_drift("m", "1", f"region={region}", "amount", "psi", 0.1, 0.2)


def peer(calls: int) -> None:
    registry = CollectorRegistry()
    labels = ["model", "version", "slice", "column", "method"]
    score = Gauge("score", "s", labels, registry=registry)
    threshold = Gauge("threshold", "t", labels, registry=registry)
    for i in range(calls):
        region = REGIONS[i % len(REGIONS)]
        score.labels("m", "1", f"region={region}", "amount", "psi").set(0.1)
        threshold.labels("m", "1", f"region={region}", "amount", "psi").set(0.2)


def main() -> None:
    ours_us = min(per_call_us(ours, CALLS) for _ in range(3))
    peer_us = min(per_call_us(peer, CALLS) for _ in range(3))
    print(f"set_drift (score + threshold, bounded slice): {ours_us:.2f} us/call")
    print(f"prometheus-client peer (two .labels().set()):  {peer_us:.2f} us/call")
    print(f"ratio ours/peer: {ours_us / peer_us:.2f}")
    start = time.perf_counter()
    boards = build_dashboards()
    elapsed_ms = (time.perf_counter() - start) * 1e3
    print(f"build + validate {len(boards)} dashboards: {elapsed_ms:.0f} ms")


if __name__ == "__main__":
    main()
