"""Run each scheduled job once per (job, window) across replicas sharing one database.

A replica claims a run by inserting its (job, window_key) row; the unique constraint lets only
one insert win on SQLite and PostgreSQL alike. A run still `running` after its lease expired
(its replica died) is taken over with an optimistic compare-and-set on (holder, claimed_at).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from monitor.storage import JobRun, session_factory, transaction, utcnow


@dataclass(frozen=True)
class Claim:
    """A run this replica owns."""

    run_id: int
    job: str
    window_key: str
    takeover: bool


def claim(
    engine: Engine,
    job: str,
    window_key: str,
    holder: str,
    lease_s: float,
    now: datetime | None = None,
) -> Claim | None:
    """Claim (job, window_key) for `holder`; None when another replica has it or it is done."""
    now = now or utcnow()
    try:
        with transaction(engine) as s:
            run = JobRun(job=job, window_key=window_key, holder=holder, claimed_at=now)
            s.add(run)
            s.flush()
            return Claim(run.id, job, window_key, takeover=False)
    except IntegrityError:
        return _take_over(engine, job, window_key, holder, lease_s, now)


def _take_over(
    engine: Engine, job: str, window_key: str, holder: str, lease_s: float, now: datetime
) -> Claim | None:
    with session_factory(engine)() as s:
        run = s.scalars(
            select(JobRun).where(JobRun.job == job, JobRun.window_key == window_key)
        ).one()
    expired = run.status == "running" and run.claimed_at < now - timedelta(seconds=lease_s)
    if run.status != "failed" and not expired:
        return None
    with transaction(engine) as s:
        result = s.execute(
            update(JobRun)
            .where(
                JobRun.id == run.id,
                JobRun.holder == run.holder,
                JobRun.claimed_at == run.claimed_at,
                JobRun.status == run.status,
            )
            .values(holder=holder, claimed_at=now, status="running", error=None)
        )
        won = getattr(result, "rowcount", 0) == 1
    return Claim(run.id, job, window_key, takeover=True) if won else None


def finish(engine: Engine, run: Claim, error: str | None = None) -> None:
    """Mark a claimed run done (or failed, so a later tick may retry it)."""
    with transaction(engine) as s:
        s.execute(
            update(JobRun)
            .where(JobRun.id == run.run_id)
            .values(
                status="failed" if error else "done",
                finished_at=utcnow(),
                error=error[:2000] if error else None,
            )
        )


def release(engine: Engine, run: Claim, holder: str) -> None:
    """Give a claim up (delete its row) so that its key can be claimed again: a claim used as
    a lock across windows, not as a once-per-window run. A claim another replica took over
    after its lease expired is theirs and stays."""
    with transaction(engine) as s:
        s.execute(delete(JobRun).where(JobRun.id == run.run_id, JobRun.holder == holder))
