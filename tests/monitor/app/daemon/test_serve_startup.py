"""`modelwatch serve` start-up: bind before anything runs, log level and JSON logs, quiet ticks."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.storage import JobRun, make_engine
from tests.conftest import REPO, run_cli, run_cli_process
from tests.monitor.app.daemon.conftest import CONFIG, TOKENS
from tests.services.net import free_port
from tests.waiting import wait_until

# each test starts `python -m monitor serve`
pytestmark = pytest.mark.slow


def _config(tmp_path: Path) -> Path:
    url = f"sqlite:///{tmp_path / 'mw.db'}"
    assert run_cli("db", "upgrade", "--database-url", url).returncode == 0
    path = tmp_path / "mw.yaml"
    path.write_text(CONFIG.format(url=url))
    return path


def _serve(config: Path, port: int, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, **TOKENS, "PYTHONPATH": str(REPO)}
    env.pop("MODELWATCH_DATABASE_URL", None)
    return subprocess.Popen(
        [sys.executable, "-m", "monitor", "serve", "--config", str(config), "--port", str(port),
         *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _finished_ticks(tmp_path: Path) -> int:
    engine = make_engine(f"sqlite:///{tmp_path / 'mw.db'}")
    try:
        with Session(engine) as s:
            done = select(func.count()).where(JobRun.job == "evaluate", JobRun.status == "done")
            return int(s.scalar(done.select_from(JobRun)) or 0)
    finally:
        engine.dispose()


def _run_for_ticks(proc: subprocess.Popen[str], port: int, tmp_path: Path) -> str:
    """Wait until healthy and three 1 s evaluate ticks have finished, stop; the stderr text."""
    for _ in range(300):
        assert proc.poll() is None, proc.communicate()[1]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    wait_until(lambda: _finished_ticks(tmp_path) >= 3, "three finished evaluate ticks", 60)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return err


def test_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = _config(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = _serve(config, port)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.strip().splitlines() == [
        f"modelwatch: error: cannot listen on 127.0.0.1:{port}: the port is already in use "
        "(choose another with --port or api.port)"
    ]


def test_json_logs_and_quiet_scheduler(tmp_path: Path) -> None:
    port = free_port()
    err = _run_for_ticks(_serve(_config(tmp_path), port, "--log-format", "json"), port, tmp_path)
    records = [json.loads(line) for line in err.strip().splitlines()]
    assert any(
        r["message"].startswith(f"modelwatch serving on http://127.0.0.1:{port}") for r in records
    )
    assert all(set(r) >= {"time", "level", "logger", "message"} for r in records)
    assert not any(r["logger"].startswith(("apscheduler", "alembic")) for r in records)


def test_debug_level_shows_scheduler_ticks(tmp_path: Path) -> None:
    port = free_port()
    err = _run_for_ticks(_serve(_config(tmp_path), port, "--log-level", "debug"), port, tmp_path)
    assert "DEBUG apscheduler" in err and "INFO apscheduler" not in err


def test_bad_log_level_is_refused(tmp_path: Path) -> None:
    out = run_cli_process("serve", "--config", str(_config(tmp_path)), "--log-level", "loud")
    assert out.returncode == 2 and "--log-level" in out.stderr
