"""The one wrapper around APScheduler 3: in-memory job store, jobs defined in code at startup.

Durable state lives in our tables: each tick computes the window it belongs to and runs the job
only if this replica wins the (job, window) claim, so replicas run each job once per interval.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.engine import Engine

from monitor.daemon.leases import Claim, claim, finish
from monitor.storage import utcnow

log = logging.getLogger(__name__)

JobFunc = Callable[[datetime], object]


@dataclass(frozen=True)
class JobSpec:
    """A job run every `interval_s`, once per interval across replicas."""

    name: str
    func: JobFunc
    interval_s: float


def window_start(now: datetime, interval_s: float) -> datetime:
    """The start of the interval `now` falls in, aligned to the epoch."""
    ts = math.floor(now.timestamp() / interval_s) * interval_s
    return datetime.fromtimestamp(ts, UTC)


class Scheduler:
    """Runs registered jobs on a background thread pool with cross-replica claims."""

    def __init__(self, engine: Engine, holder: str, lease_s: float) -> None:
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.jobstores.memory import MemoryJobStore
        from apscheduler.schedulers.background import BackgroundScheduler

        self._engine = engine
        self._holder = holder
        self._lease_s = lease_s
        self._jobs: dict[str, JobSpec] = {}
        # Jobs in progress, so that shutdown can wait for them with a bound.
        self._active: dict[str, int] = {}
        self._idle = threading.Condition()
        self._scheduler = BackgroundScheduler(
            jobstores={"default": MemoryJobStore()},
            executors={"default": ThreadPoolExecutor(4)},
            job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": 30},
            timezone=UTC,
        )

    def add(self, spec: JobSpec) -> None:
        """Register a job before `start`; names are unique."""
        if spec.name in self._jobs:
            raise ValueError(f"job {spec.name!r} registered twice")
        self._jobs[spec.name] = spec
        self._scheduler.add_job(
            self.tick,
            "interval",
            seconds=spec.interval_s,
            args=[spec.name],
            id=spec.name,
            next_run_time=utcnow(),
        )

    def tick(self, name: str, now: datetime | None = None) -> bool:
        """Run job `name` for the current window if this replica claims it; True if it ran."""
        spec = self._jobs[name]
        with self._idle:
            self._active[name] = self._active.get(name, 0) + 1
        try:
            start = window_start(now or utcnow(), spec.interval_s)
            run = claim(self._engine, name, start.isoformat(), self._holder, self._lease_s)
            if run is None:
                return False
            self._run(spec, run, start)
            return True
        finally:
            with self._idle:
                self._active[name] -= 1
                if not self._active[name]:
                    del self._active[name]
                self._idle.notify_all()

    def _run(self, spec: JobSpec, run: Claim, start: datetime) -> None:
        try:
            spec.func(start)
        except Exception as exc:  # a failing job must not kill the scheduler
            log.exception("job %s for window %s failed", spec.name, run.window_key)
            finish(self._engine, run, error=f"{type(exc).__name__}: {exc}")
        else:
            finish(self._engine, run)

    def start(self) -> None:
        self._scheduler.start()

    def running(self) -> list[str]:
        """Names of the jobs in progress now."""
        with self._idle:
            return sorted(self._active)

    def shutdown(self, timeout: float | None = None) -> list[str]:
        """Start no more jobs and wait up to `timeout` seconds (None: without bound) for the
        running ones; the names of those still running.

        A tick can block (a locked database, a slow query); SIGTERM must not wait for it. An
        abandoned tick's transaction never commits and its claim expires after the lease."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        with self._idle:
            self._idle.wait_for(lambda: not self._active, timeout)
            return sorted(self._active)
