"""Open-loop load tests of an HTTP model endpoint, corrected for coordinated omission.

`run_loadtest` drives a `Target` at fixed arrival rates (`_engine`: the schedule, the pool,
the deadlines) and summarises each rate and the knee (`_results`: the definition of the knee
and of the capacity estimate). Presentation lives in `monitor.reports`, the command in
`monitor.app.cli._loadtest`.
"""

from __future__ import annotations

from monitor.loadtest._engine import RateRun, Target, default_connections, error_kind
from monitor.loadtest._results import (
    ACHIEVED_SHARE,
    ERROR_SHARE,
    MEDIAN_FACTOR,
    TAIL_FACTOR,
    Latency,
    LoadtestReport,
    RateResult,
    percentiles,
)
from monitor.loadtest._run import run_loadtest

__all__ = [
    "ACHIEVED_SHARE",
    "ERROR_SHARE",
    "MEDIAN_FACTOR",
    "TAIL_FACTOR",
    "Latency",
    "LoadtestReport",
    "RateResult",
    "RateRun",
    "Target",
    "default_connections",
    "error_kind",
    "percentiles",
    "run_loadtest",
]
