"""The `skew` job: each configured skew check run on its own schedule against its sources.

Each check is claimed per (check, its interval window) like canary pairs. Reading each source
is its own `job_failures` item (`skew <check> source <source>`), so a missing file or a failing
query is named in its `evaluation_failed` signal, and the comparison another
(`skew <check>`); one failing check never stops the others.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine

from alerts import Signal
from dashboards.metrics import ModelwatchMetrics
from monitor.app.daemon._canary_job import failed_signals
from monitor.app.daemon._leases import finish
from monitor.app.daemon._paced import claim_due
from monitor.app.daemon._scheduler import JobSpec
from monitor.config import Config, SkewCheckConfig
from monitor.failures import Backoff, Isolation
from monitor.skew_runs import compare_frames, read_source, skew_history, store_skew
from monitor.storage import utcnow

SKEW_JOB = "skew"
CHECK_CLAIMS = "skew check"
# Features of a check exported as gauges and signals, worst first (bounded labels).
MAX_SKEW_COLUMNS = 50


class SkewWatch:
    """The job's body: run every due check, store it."""

    def __init__(self, engine: Engine, config: Config, holder: str,
                 on_failure: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.engine = engine
        self.config = config
        self.holder = holder
        sched = config.scheduler
        self.isolation = Isolation(
            engine, SKEW_JOB, Backoff(sched.retry_initial_s, sched.retry_max_s), on_failure
        )

    def spec(self) -> JobSpec | None:
        """The job, ticking at the shortest check interval; None without checks."""
        if not self.config.skew:
            return None
        interval = min(c.interval.total_seconds() for c in self.config.skew)
        return JobSpec(SKEW_JOB, self, interval)

    def __call__(self, _window: datetime | None = None, now: datetime | None = None) -> int:
        """Run the due checks this replica claims; how many stored a result."""
        now = now or utcnow()
        self.isolation.begin(now)
        done = 0
        for check in self.config.skew:
            run = claim_due(self.engine, CHECK_CLAIMS, check.name, check.interval.total_seconds(),
                            self.holder, self.config.scheduler.lease_s, now)  # fmt: skip
            if run is None:
                continue
            ok = self.run_check(check, now)
            finish(self.engine, run, None if ok else "failed; see job_failures")
            done += ok
        return done

    def run_check(self, check: SkewCheckConfig, now: datetime) -> bool:
        """Read both sources, compare, store; False when an item failed (it is recorded)."""
        frames = []
        for src in (check.serving, check.offline):
            item = f"skew {check.name} source {src.name}"
            read = functools.partial(read_source, src, check.key)
            frame = self.isolation.attempt(item, read, check.model)
            if frame is None:
                return False
            frames.append(frame)

        def compare() -> int:
            return store_skew(self.engine, check, compare_frames(check, *frames), now)

        return self.isolation.attempt(f"skew {check.name}", compare, check.model) is not None


def skew_signals(
    engine: Engine, config: Config, metrics: ModelwatchMetrics | None, now: datetime
) -> list[Signal]:
    """A `skew` signal per compared feature of each check's newest run (firing above the
    check's threshold), `evaluation_failed` per failing source or check; sets the gauges."""
    out: list[Signal] = []
    for check in config.skew:
        runs = skew_history(engine, check.name, limit=1)
        if not runs:
            continue
        rates = _rates(runs[0].report)
        if metrics is not None:
            metrics.set_skew(check.name, check.model, rates)
        out += [
            Signal(
                "skew",
                {"model": check.model, "check": check.name, "column": column},
                rate,
                check.threshold,
                rate > check.threshold,
                now,
            )  # fmt: skip
            for column, rate in rates.items()
        ]
    return out + failed_signals(engine, SKEW_JOB, now)


def _rates(report: dict[str, Any]) -> dict[str, float]:
    """Mismatch rate per feature, worst first (the stored order), at most MAX_SKEW_COLUMNS."""
    features = report.get("features", [])[:MAX_SKEW_COLUMNS]
    return {str(f["column"]): float(f["mismatch_rate"]) for f in features}
