"""Two `serve` processes on one PostgreSQL: each scheduled job runs once per interval."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from migrations import upgrade
from monitor.storage import JobRun, make_engine, session_factory
from tests.monitor.app.daemon.conftest import ServerProcess, write_config
from tests.services.postgres import PostgresServer
from tests.waiting import wait_until


def _runs(url: str) -> list[JobRun]:
    engine = make_engine(url)
    with session_factory(engine)() as s:
        rows = list(s.scalars(select(JobRun).where(JobRun.job == "retention")))
    engine.dispose()
    return rows


def _at_least(n: int, runs: list[JobRun]) -> list[JobRun] | None:
    return runs if len(runs) >= n else None


def test_jobs_run_once_per_interval_and_survivor_takes_over(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.create_database()
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    cfg = write_config(tmp_path, url)
    fast = cfg.read_text().replace("scheduler:\n", "scheduler:\n  retention_interval_s: 1\n")
    cfg.write_text(fast)
    a, b = ServerProcess(cfg), ServerProcess(cfg)
    try:
        a.wait_ready()
        b.wait_ready()
        # the job's interval is 1 s: wait for three windows, then check no window ran twice
        both = wait_until(lambda: _at_least(3, _runs(url)), "three retention runs", timeout=60)
        keys = [r.window_key for r in both]
        assert len(keys) == len(set(keys))
        assert all(r.status == "done" for r in both if r.finished_at is not None)
        a.proc.kill()  # a replica dies without a goodbye
        a.proc.wait(10)
        killed_at = max(r.claimed_at for r in _runs(url))

        def runs_after_kill() -> list[JobRun] | None:
            return _at_least(2, [r for r in _runs(url) if r.claimed_at > killed_at])

        after = wait_until(runs_after_kill, "the surviving replica to run the job on", timeout=60)
        assert len({r.window_key for r in after}) == len(after)
        assert len({r.holder for r in after}) == 1
    finally:
        a.terminate()
        b.terminate()
