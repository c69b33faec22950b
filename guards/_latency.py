"""Latency of a session on the serving hardware: warm-up, then timed batched runs."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from guards.results import LatencyStats

WARMUP_RUNS = 5
MIN_RUNS = 20
MAX_RUNS = 200
TIME_BUDGET_S = 1.0


def measure(
    session: Any, feeds: Mapping[str, np.ndarray], batch_sizes: Sequence[int]
) -> tuple[LatencyStats, ...]:
    """p50/p95/p99 per call and rows/s, per batch size (rows taken from the golden feeds)."""
    return tuple(_one(session, feeds, b) for b in batch_sizes)


def batch(feeds: Mapping[str, np.ndarray], size: int) -> dict[str, np.ndarray]:
    """`size` rows of the feeds (a golden set smaller than the batch is cycled)."""
    n = len(next(iter(feeds.values())))
    idx = np.arange(size) % n  # golden sets smaller than the batch are cycled
    return {k: v[idx] for k, v in feeds.items()}


def _one(session: Any, feeds: Mapping[str, np.ndarray], size: int) -> LatencyStats:
    rows = batch(feeds, size)
    names = [o.name for o in session.get_outputs()]
    for _ in range(WARMUP_RUNS):
        session.run(names, rows)
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < MAX_RUNS and (
        len(times) < MIN_RUNS or time.perf_counter() - started < TIME_BUDGET_S
    ):
        t0 = time.perf_counter()
        session.run(names, rows)
        times.append(time.perf_counter() - t0)
    ms = np.asarray(times) * 1000.0
    p50, p95, p99 = (float(v) for v in np.percentile(ms, [50, 95, 99]))
    return LatencyStats(size, p50, p95, p99, float(size * len(ms) / (ms.sum() / 1000.0)))
