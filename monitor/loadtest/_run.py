"""Run a load test: each rate in turn on its own connection pool, then the summary."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from monitor.loadtest._engine import RateRun, Target, run_rate
from monitor.loadtest._results import LoadtestReport, summarise


def run_loadtest(
    target: Target,
    rates: Sequence[float],
    duration: float,
    timeout: float,
    connections: int | None = None,
    on_rate: Callable[[RateRun], None] | None = None,
) -> LoadtestReport:
    """Drive `target` at each of `rates` for `duration` seconds; `on_rate` hears each rate end."""
    if not rates or any(r <= 0 for r in rates):
        raise ValueError("rates must be positive and at least one")
    if duration <= 0 or timeout <= 0:
        raise ValueError("duration and timeout must be positive")

    async def all_rates() -> list[RateRun]:
        runs = []
        for rate in rates:
            run = await run_rate(target, rate, duration, timeout, connections)
            if on_rate is not None:
                on_rate(run)
            runs.append(run)
        return runs

    return summarise(target.url, duration, timeout, asyncio.run(all_rates()))
