"""The one wrapper around APScheduler 3: in-memory job store, jobs defined in code at startup.

Durable state lives in our tables: each tick computes the window it belongs to and runs the job
only if this replica wins the (job, window) claim, so replicas run each job once per interval.
`Scheduler.run` is a supervisor's target: when APScheduler's own thread dies, it raises, and the
supervisor starts a fresh APScheduler (with the same jobs) after its backoff.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers import SchedulerNotRunningError
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy.engine import Engine

from monitor.app.daemon._leases import Claim, claim, finish
from monitor.config import SchedulerConfig
from monitor.failures import Backoff, clear_failure, record_failure, redact
from monitor.storage import utcnow
from monitor.summaries import window_of

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

log = logging.getLogger(__name__)

JobFunc = Callable[[datetime], object]
# The job_failures item of a whole run (its items, e.g. windows, have their own names).
RUN_ITEM = "run"
# How often `run` looks at APScheduler's thread.
WATCH_S = 0.5


@dataclass(frozen=True)
class JobSpec:
    """A job run every `interval_s`, once per interval across replicas."""

    name: str
    func: JobFunc
    interval_s: float


def window_start(now: datetime, interval_s: float) -> datetime:
    """The start of the interval `now` falls in, aligned to the epoch (as windows are cut)."""
    return window_of(now, interval_s)


class Scheduler:
    """Runs registered jobs on a background thread pool with cross-replica claims."""

    def __init__(
        self,
        engine: Engine,
        holder: str,
        lease_s: float,
        backoff: Backoff | None = None,
        on_failure: Callable[[str], None] | None = None,
        on_success: Callable[[str, float], None] | None = None,
        tick_offset_s: float = 0.0,
    ) -> None:

        self._engine = engine
        self._holder = holder
        self._lease_s = lease_s
        self._backoff = backoff or Backoff()
        self._on_failure = on_failure
        self._on_success = on_success
        self._tick_offset_s = tick_offset_s
        self._jobs: dict[str, JobSpec] = {}
        # Jobs in progress, so that shutdown can wait for them with a bound.
        self._active: dict[str, int] = {}
        self._idle = threading.Condition()
        # Jobs with a scheduled run in progress: the run at start and the interval's are two
        # APScheduler jobs, which it would run at once (`tick`).
        self._ticking: set[str] = set()
        self._scheduler = self._apscheduler()
        self._closed = False
        self._runs = 0

    def _apscheduler(self) -> BackgroundScheduler:
        """A fresh APScheduler with every registered job, each due now."""
        scheduler = BackgroundScheduler(
            jobstores={"default": MemoryJobStore()},
            executors={"default": ThreadPoolExecutor(4)},
            job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": 30},
            timezone=UTC,
        )
        for spec in self._jobs.values():
            self._add_job(scheduler, spec)
        return scheduler

    def _add_job(self, scheduler: BackgroundScheduler, spec: JobSpec) -> None:
        """Due now, then on the interval's grid of the clock (as claims and windows are cut)
        shifted by the tick offset, at most half the interval: a 10 s tick with 1-minute windows
        runs just after each window ends and its last events are aggregated, not anywhere up
        to a whole interval later (which made the evaluation lag a uniform wait).

        The run at start is a job of its own: an interval job told to run now counts its later
        runs from that moment, off the grid (APScheduler adds the interval to the previous run
        time), which is how ticks of a 1-minute job ran at whatever second the process began."""
        offset = SchedulerConfig.offset_within(self._tick_offset_s, spec.interval_s)
        scheduler.add_job(
            self.tick,
            "interval",
            seconds=spec.interval_s,
            start_date=EPOCH + timedelta(seconds=offset),
            args=[spec.name],
            id=spec.name,
        )
        scheduler.add_job(
            self.tick, "date", run_date=utcnow(), args=[spec.name], id=f"{spec.name}@start"
        )

    def add(self, spec: JobSpec) -> None:
        """Register a job before `start`; names are unique."""
        if spec.name in self._jobs:
            raise ValueError(f"job {spec.name!r} registered twice")
        self._jobs[spec.name] = spec
        self._add_job(self._scheduler, spec)

    def tick(self, name: str, now: datetime | None = None) -> bool:
        """Run job `name` for the current window if this replica claims it; True if it ran.

        Never raises: a database that is down while claiming counts as a failure of the job.

        A scheduled run (`now` None) that outlasts the next time on its grid runs again at once,
        for the window it is then in: APScheduler skips a time that comes while its job still
        runs (one instance per job), so an evaluation tick of 61 s on a 60 s interval left
        every other window to the tick after (bench/fleet.py: half the windows a minute late).
        Back to back while it overruns, never two at once: a scheduled run that comes while
        another of the same job runs in this process (the run at start still going when the
        interval's first comes) returns False at once, and the running one goes on to the
        window it missed. Two at once evaluated the same windows twice and counted a failing
        item's failure twice.
        """
        if now is not None:
            return self._tick(name, now)
        with self._idle:
            if name in self._ticking:
                return False
            self._ticking.add(name)
        try:
            spec = self._jobs[name]
            began = utcnow()
            ran = self._tick(name, None)
            while not self._closed and utcnow() >= self.next_time(spec, began):
                began = utcnow()
                ran = self._tick(name, None) or ran
            return ran
        finally:
            with self._idle:
                self._ticking.discard(name)

    def next_time(self, spec: JobSpec, after: datetime) -> datetime:
        """The first time on `spec`'s grid (shifted by the tick offset) after `after`."""
        offset = SchedulerConfig.offset_within(self._tick_offset_s, spec.interval_s)
        since = (after - EPOCH).total_seconds() - offset
        return EPOCH + timedelta(seconds=offset + (math.floor(since / spec.interval_s) + 1)
                                 * spec.interval_s)  # fmt: skip

    def _tick(self, name: str, now: datetime | None) -> bool:
        spec = self._jobs[name]
        with self._idle:
            self._active[name] = self._active.get(name, 0) + 1
        try:
            now = now or utcnow()
            start = window_start(now, spec.interval_s)
            try:
                run = claim(self._engine, name, start.isoformat(), self._holder, self._lease_s, now)
            except Exception as exc:  # e.g. the database restarting; the next tick tries again
                self._failed(spec.name, exc)
                return False
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
            self._failed(spec.name, exc)
            self._finish(run, redact(exc))
            return
        if self._finish(run, None):
            self._succeeded(spec.name)

    def _finish(self, run: Claim, error: str | None) -> bool:
        try:
            finish(self._engine, run, error=error)
            return True
        except Exception as exc:  # the run's lease expires and another tick retries it
            log.warning("job %s: cannot record its end: %s", run.job, redact(exc))
            return False

    def _failed(self, job: str, exc: Exception) -> None:
        if self._on_failure is not None:
            self._on_failure(job)
        try:
            record_failure(self._engine, job, RUN_ITEM, exc, self._backoff)
        except Exception as db_exc:
            log.warning("job %s: cannot record its failure: %s", job, redact(db_exc))

    def _succeeded(self, job: str) -> None:
        if self._on_success is not None:
            self._on_success(job, utcnow().timestamp())
        try:
            clear_failure(self._engine, job, RUN_ITEM)
        except Exception as exc:
            log.warning("job %s: cannot clear its failure: %s", job, redact(exc))

    def start(self) -> None:
        self._scheduler.start()

    def run(self, stop: threading.Event) -> None:
        """Run the jobs until `stop` (a supervisor's target); raises when APScheduler's thread
        dies, so that the supervisor counts it and starts a fresh one after its backoff."""
        if self._runs:
            self._shutdown_apscheduler()
            self._scheduler = self._apscheduler()
        self._runs += 1
        if not self._closed:
            self._scheduler.start()
        while not self._closed and not stop.wait(WATCH_S):
            if not self._closed and self.problem() is not None:
                raise RuntimeError("the scheduler's thread stopped")
        self._shutdown_apscheduler()

    def _shutdown_apscheduler(self) -> None:
        # `run` and `shutdown` may both get here (stopping the daemon stops both).
        with contextlib.suppress(SchedulerNotRunningError):
            self._scheduler.shutdown(wait=False)

    def problem(self) -> str | None:
        """None while the scheduler's thread runs; else what /readyz shows."""
        thread = getattr(self._scheduler, "_thread", None)  # APScheduler's own loop
        if self._scheduler.running and (thread is None or thread.is_alive()):
            return None
        return "not running"

    def running(self) -> list[str]:
        """Names of the jobs in progress now."""
        with self._idle:
            return sorted(self._active)

    def shutdown(self, timeout: float | None = None) -> list[str]:
        """Start no more jobs and wait up to `timeout` seconds (None: without bound) for the
        running ones; the names of those still running.

        A tick can block (a locked database, a slow query); SIGTERM must not wait for it. An
        abandoned tick's transaction never commits and its claim expires after the lease."""
        self._closed = True
        self._shutdown_apscheduler()
        with self._idle:
            self._idle.wait_for(lambda: not self._active, timeout)
            return sorted(self._active)
