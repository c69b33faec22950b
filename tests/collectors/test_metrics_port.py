"""`modelwatch collect --metrics-port`: Prometheus sees what the collector committed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import orjson
import pytest

from tests.collectors.conftest import event, write_config
from tests.conftest import REPO, run_cli
from tests.services.net import free_port
from tests.waiting import wait_until

# `modelwatch collect` in its own process
pytestmark = pytest.mark.slow


def _sample(text: str, name: str, labels: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(f"{name}{{") and labels in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_port_exports_ingested_events_and_dead_letters(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = [orjson.dumps(event(i)) for i in range(300)] + [b"{not json"] * 4
    (logs / "app.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    source = {"name": "logs", "type": "jsonl", "path": str(logs / "*.jsonl")}
    cfg = write_config(tmp_path / "mw.yaml", f"sqlite:///{tmp_path}/mw.db", [source])
    assert run_cli("db", "upgrade", "--config", str(cfg)).returncode == 0
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MODELWATCH_DATABASE_URL", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monitor",
            "collect",
            "--config",
            str(cfg),
            "--metrics-port",
            str(port),
        ],
        env=env,
        stderr=subprocess.PIPE,
    )
    try:

        def all_counted() -> bool:
            text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
            events = _sample(text, "modelwatch_events_ingested_total", 'source="logs"')
            dead = _sample(text, "modelwatch_dead_letters_total", 'source="logs"')
            return (events, dead) == (300.0, 4.0)

        wait_until(
            all_counted,
            "300 events and 4 dead letters on /metrics",
            timeout=60,
            interval=0.5,
            retry_on=(httpx.TransportError,),
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
