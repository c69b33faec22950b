"""Items of a job that each run on their own interval, once per interval across replicas.

A job that holds several items with their own schedules (canary pairs, skew checks) ticks at
the shortest interval; each item is claimed per (item, its own interval window) in `job_runs`
under the job's claims name, so two replicas never run the same item at once and a replica
that died mid-run is taken over after the lease. `PacedChecks` is that loop for a job of named
checks read from the config (skew checks, segment checks).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import ClassVar, Generic, Protocol, TypeVar

from sqlalchemy.engine import Engine

from monitor.app.daemon._leases import Claim, claim, finish
from monitor.app.daemon._scheduler import JobSpec
from monitor.config import Config
from monitor.failures import Backoff, Isolation
from monitor.storage import utcnow
from monitor.summaries import window_of


def claim_due(
    engine: Engine,
    claims: str,
    item: str,
    interval_s: float,
    holder: str,
    lease_s: float,
    now: datetime,
) -> Claim | None:
    """This replica's claim of `item` for the interval window `now` falls in; None when it
    ran (or runs) elsewhere in that window."""
    start = window_of(now, interval_s)
    digest = hashlib.sha256(item.encode()).hexdigest()[:16]  # bounded, whatever the item
    return claim(engine, claims, f"{digest} {start.isoformat()}", holder, lease_s, now)


class Check(Protocol):
    """A configured check with its own schedule."""

    @property
    def name(self) -> str: ...

    @property
    def interval(self) -> timedelta: ...


C = TypeVar("C", bound=Check)


class PacedChecks(ABC, Generic[C]):
    """A job's body over named checks: each due check this replica claims is run, its failures
    recorded per item (`Isolation`), so one failing check never stops the others."""

    job: ClassVar[str]  # the job's name (and its failure items' job)
    claims: ClassVar[str]  # the name its checks are claimed under in `job_runs`

    def __init__(self, engine: Engine, config: Config, holder: str,
                 on_failure: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.engine = engine
        self.config = config
        self.holder = holder
        sched = config.scheduler
        self.isolation = Isolation(
            engine, self.job, Backoff(sched.retry_initial_s, sched.retry_max_s), on_failure
        )

    @abstractmethod
    def checks(self) -> Sequence[C]:
        """The configured checks."""

    @abstractmethod
    def run_check(self, check: C, now: datetime) -> bool:
        """Run one check; False when an item failed (it is recorded)."""

    def spec(self) -> JobSpec | None:
        """The job, ticking at the shortest check interval; None without checks."""
        if not self.checks():
            return None
        interval = min(c.interval.total_seconds() for c in self.checks())
        return JobSpec(self.job, self, interval)

    def __call__(self, _window: datetime | None = None, now: datetime | None = None) -> int:
        """Run the due checks this replica claims; how many stored a result."""
        now = now or utcnow()
        self.isolation.begin(now)
        done = 0
        for check in self.checks():
            run = claim_due(self.engine, self.claims, check.name, check.interval.total_seconds(),
                            self.holder, self.config.scheduler.lease_s, now)  # fmt: skip
            if run is None:
                continue
            ok = self.run_check(check, now)
            finish(self.engine, run, None if ok else "failed; see job_failures")
            done += ok
        return done
