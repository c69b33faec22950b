"""Two `serve` processes on one PostgreSQL: each scheduled job runs once per interval."""

from __future__ import annotations

import time
from pathlib import Path

from sqlalchemy import select

from migrations import upgrade
from monitor.storage import JobRun, make_engine, session_factory
from tests.daemon.conftest import ServerProcess, write_config
from tests.services.postgres import PostgresServer


def _runs(url: str) -> list[JobRun]:
    engine = make_engine(url)
    with session_factory(engine)() as s:
        rows = list(s.scalars(select(JobRun).where(JobRun.job == "retention")))
    engine.dispose()
    return rows


def test_jobs_run_once_per_interval_and_survivor_takes_over(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.create_database()
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    cfg = write_config(tmp_path, url)
    a, b = ServerProcess(cfg), ServerProcess(cfg)
    try:
        a.wait_ready()
        b.wait_ready()
        time.sleep(4)
        both = _runs(url)
        keys = [r.window_key for r in both]
        assert len(keys) == len(set(keys)) >= 3
        assert all(r.status == "done" for r in both if r.finished_at is not None)
        a.proc.kill()  # a replica dies without a goodbye
        a.proc.wait(10)
        killed_at = max(r.claimed_at for r in _runs(url))
        time.sleep(4)
        after = [r for r in _runs(url) if r.claimed_at > killed_at]
        assert len(after) >= 2, "the surviving replica stopped running the job"
        assert len({r.holder for r in after}) == 1
    finally:
        a.terminate()
        b.terminate()
