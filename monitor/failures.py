"""Failures of scheduled-job items: recorded, retried with backoff, never fatal to the loop.

A job (evaluate, retention...) works through items (a model's windows, a signal producer). An
item that raises is recorded in `job_failures` (since when, how often, the last error, when it
is retried) and skipped until its retry time; the job goes on with the other items. A success
deletes the row. An item that is one window (`window_item`: `<kind> <model>/<version> <start>`)
also stores the window's start (`window_start`), which the jobs that retry or wait for failing
windows read: item names are for people, never parsed. Errors are stored redacted: one line,
no URLs or credentials, bounded length (`monitor.common.redact`, the one home of the redaction
rules), because they are served by `/readyz`, `modelwatch status` and alert labels.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from sqlalchemy import delete, func, select
from sqlalchemy.engine import Engine

from monitor.common.redact import redact as redact
from monitor.common.redact import scrub as scrub
from monitor.storage import JobFailure, JobRun, session_factory, transaction, utcnow

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_ITEM = 500  # job_failures.item's length


@dataclass(frozen=True)
class Failure:
    """One failing item of a job."""

    job: str
    item: str
    model: str | None
    version: str | None
    error: str
    failures: int
    first_failed_at: datetime
    last_failed_at: datetime
    retry_at: datetime
    window_start: datetime | None = None


@dataclass(frozen=True)
class Backoff:
    """Retry delay after `n` failures in a row: initial * 2**(n-1), capped."""

    initial_s: float = 30.0
    max_s: float = 3600.0

    def delay(self, failures: int) -> timedelta:
        exponent = min(max(failures - 1, 0), 40)
        return timedelta(seconds=min(self.initial_s * 2.0**exponent, self.max_s))


def window_item(kind: str, model: str, version: str, start: datetime) -> str:
    """The item name of one window's work of `kind` (drift, outcomes, slo...)."""
    return f"{kind} {model}/{version} {start.isoformat()}"


def failing_windows(failing: list[Failure], kind: str, model: str) -> list[tuple[str, datetime]]:
    """(version, window start) of the model's failing window items of `kind`."""
    return [
        (f.version, f.window_start)
        for f in failing
        if f.model == model
        and f.version is not None
        and f.window_start is not None
        and f.item == window_item(kind, model, f.version, f.window_start)[:MAX_ITEM]
    ]


def list_failures(engine: Engine, job: str | None = None) -> list[Failure]:
    """Failing items (of one job, or all), longest failing first."""
    stmt = select(JobFailure).order_by(JobFailure.first_failed_at, JobFailure.id)
    if job is not None:
        stmt = stmt.where(JobFailure.job == job)
    with session_factory(engine)() as s:
        return [_failure(row) for row in s.scalars(stmt)]


def record_failure(
    engine: Engine,
    job: str,
    item: str,
    error: BaseException | str,
    backoff: Backoff,
    now: datetime | None = None,
    model: str | None = None,
    version: str | None = None,
    window_start: datetime | None = None,
) -> Failure:
    """Count one more failure of `item` and schedule its retry; returns the updated record."""
    now = now or utcnow()
    with transaction(engine) as s:
        row = s.scalars(
            select(JobFailure).where(JobFailure.job == job, JobFailure.item == item)
        ).one_or_none()
        if row is None:
            row = JobFailure(job=job, item=item[:MAX_ITEM], failures=0, first_failed_at=now)
            s.add(row)
        row.failures += 1
        row.model, row.version, row.window_start = model, version, window_start
        row.error = redact(error)
        row.last_failed_at = now
        row.retry_at = now + backoff.delay(row.failures)
        s.flush()
        return _failure(row)


def clear_failure(engine: Engine, job: str, item: str) -> None:
    """The item succeeded: forget its failures."""
    with transaction(engine) as s:
        s.execute(delete(JobFailure).where(JobFailure.job == job, JobFailure.item == item))


def _failure(row: JobFailure) -> Failure:
    return Failure(
        row.job,
        row.item,
        row.model,
        row.version,
        row.error,
        row.failures,
        row.first_failed_at,
        row.last_failed_at,
        row.retry_at,
        row.window_start,
    )


class Isolation:
    """Runs a job's items one by one so that one failing item never stops the others.

    `begin` loads the job's failing items once per run (one query), so items that are fine
    cost nothing extra; `attempt` skips an item whose retry time has not come, records a
    failure, or clears a recovered item. `on_failure(job)` is told of every failure (metrics).
    """

    def __init__(
        self,
        engine: Engine,
        job: str,
        backoff: Backoff | None = None,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self.engine = engine
        self.job = job
        self.backoff = backoff or Backoff()
        self.on_failure = on_failure
        self._failing: dict[str, Failure] = {}
        self._now = utcnow()

    def begin(self, now: datetime | None = None) -> None:
        """Start a run at `now`: load which items are failing."""
        self._now = now or utcnow()
        self._failing = {f.item: f for f in list_failures(self.engine, self.job)}

    @property
    def now(self) -> datetime:
        """The time of the current run (`begin`)."""
        return self._now

    def failing(self) -> list[Failure]:
        """The job's failing items (as loaded by `begin`, less those recovered since)."""
        return list(self._failing.values())

    def due(self, item: str) -> bool:
        """Whether `item` may run now (not failing, or its retry time has come)."""
        failing = self._failing.get(item)
        return failing is None or failing.retry_at <= self._now

    def attempt(
        self,
        item: str,
        work: Callable[[], T],
        model: str | None = None,
        version: str | None = None,
        window_start: datetime | None = None,
    ) -> T | None:
        """`work()`'s result; None when the item is not due or failed (then it is recorded).
        `window_start`: the window's start when the item is one window (`window_item`)."""
        if not self.due(item):
            return None
        try:
            result = work()
        except Exception as exc:  # one failing item must not stop the job's other items
            log.warning("job %s: %s failed: %s", self.job, item, redact(exc))
            self._record(item, exc, (model, version, window_start))
            return None
        self.succeeded(item)
        return result

    def succeeded(self, item: str) -> None:
        """`item` succeeded (in `attempt`, or as part of a batch of items): forget its failures."""
        if item in self._failing:
            self._forget(item)

    def _record(
        self,
        item: str,
        exc: Exception,
        about: tuple[str | None, str | None, datetime | None],
    ) -> None:
        if self.on_failure is not None:
            self.on_failure(self.job)
        try:
            self._failing[item] = record_failure(
                self.engine, self.job, item, exc, self.backoff, self._now, *about
            )
        except Exception as db_exc:  # the database itself may be what failed
            log.warning(
                "job %s: cannot record the failure of %s: %s", self.job, item, redact(db_exc)
            )

    def _forget(self, item: str) -> None:
        try:
            clear_failure(self.engine, self.job, item)
            del self._failing[item]
        except Exception as exc:
            log.warning("job %s: cannot clear the failure of %s: %s", self.job, item, redact(exc))


def failing_jobs(engine: Engine, at_least: int) -> dict[str, str]:
    """Checks for `/readyz` and `status`: each item failed `at_least` times in a row."""
    return {
        f"job {f.job}: {f.item}": (
            f"failing since {f.first_failed_at.isoformat(timespec='seconds')} "
            f"({f.failures} times): {f.error}"
        )
        for f in list_failures(engine)
        if f.failures >= at_least
    }


def last_successes(engine: Engine) -> dict[str, datetime]:
    """When each scheduled job last finished without an error (any replica)."""
    stmt = (
        select(JobRun.job, func.max(JobRun.finished_at))
        .where(JobRun.status == "done")
        .group_by(JobRun.job)
    )
    with session_factory(engine)() as s:
        return {job: at for job, at in s.execute(stmt) if at is not None}
