"""SIGTERM during a tick: `serve` exits cleanly and promptly even when the tick is blocked
(here on a database lock held by another client), and the API answers while it is blocked."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from sqlalchemy import make_url, text

from migrations import upgrade
from monitor.storage import make_engine
from tests.monitor.app.daemon.conftest import ServerProcess, write_config


@contextmanager
def _database_locked(url: str) -> Iterator[None]:
    """Another client holds a lock that every job's first query (its claim) waits on."""
    if url.startswith("sqlite"):
        con = sqlite3.connect(make_url(url).database or "", isolation_level=None)
        con.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            con.execute("ROLLBACK")
            con.close()
        return
    engine = make_engine(url)
    with engine.connect() as conn, conn.begin():
        # PostgreSQL waits on a lock without any timeout: the tick would block forever.
        conn.execute(text("LOCK TABLE job_runs IN ACCESS EXCLUSIVE MODE"))
        yield
    engine.dispose()


def test_sigterm_during_a_blocked_tick_exits_cleanly(database_url: str, tmp_path: Path) -> None:
    engine = make_engine(database_url)
    upgrade(engine)
    engine.dispose()
    server = ServerProcess(write_config(tmp_path, database_url))
    try:
        server.wait_ready()
        with _database_locked(database_url):
            time.sleep(2.5)  # the 1 s evaluate ticks now wait on the lock
            for _ in range(5):  # the API keeps answering while a tick is blocked (one that
                # waited on the lock would never answer; 5 s: a loaded machine's scheduling)
                assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
            server.proc.send_signal(signal.SIGTERM)
            # Far below SQLite's 30 s busy timeout; PostgreSQL's lock wait has no end at all.
            try:
                returncode = server.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                raise AssertionError("serve did not exit after SIGTERM during a tick") from None
        assert returncode == 0
        stderr = server.proc.stderr.read() if server.proc.stderr else ""
        assert "exiting while job(s) evaluate" in stderr
        assert "Traceback" not in stderr.split("received SIGTERM")[-1]
    finally:
        server.terminate()
