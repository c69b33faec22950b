"""`modelwatch serve` with two models, one of them poisoned: the other keeps being evaluated,
and /readyz, /metrics and `modelwatch status` say what fails (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from sqlalchemy import select
from sqlalchemy.engine import Engine

from migrations import upgrade
from monitor.config import ModelConfig
from monitor.storage import DriftResultRow, session_factory
from tests.conftest import run_cli
from tests.monitor.app.daemon.conftest import ServerProcess
from tests.monitor.app.daemon.isolation_data import (
    START,
    WINDOW,
    baseline,
    events,
    ingest,
    poison_window,
)
from tests.waiting import wait_until

CONFIG = """\
database_url: {url}
models:
  - name: fraud
  - name: churn
scheduler:
  evaluate_interval_s: 1
  retry_initial_s: 3600
  failing_after: 1
"""


def _statuses(engine: Engine, model: str) -> dict[tuple[str, str], str]:
    with session_factory(engine)() as s:
        rows = s.scalars(select(DriftResultRow).where(DriftResultRow.model == model))
        return {(r.column, r.window_start.isoformat()): r.status for r in rows}


def _wait_not_ready(url: str, timeout: float = 60) -> dict[str, object]:
    def failing_window() -> dict[str, object] | None:
        answer = httpx.get(f"{url}/readyz", timeout=5)
        body: dict[str, object] = answer.json()
        checks = body["checks"]
        assert isinstance(checks, dict)
        failing = answer.status_code == 503 and any(k.startswith("job evaluate") for k in checks)
        return body if failing else None

    return wait_until(failing_window, "/readyz to report the failing window", timeout, 0.3)


def _wait_metric(url: str, name: str, timeout: float = 30) -> str:
    def exposition() -> str | None:
        text = httpx.get(f"{url}/metrics", timeout=5).text
        return text if f"\n{name}" in text else None

    return wait_until(exposition, f"{name} on /metrics", timeout, 0.3)


def test_one_poisoned_model_never_stops_the_other(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    upgrade(engine)
    models = [ModelConfig(name="fraud"), ModelConfig(name="churn")]
    baseline(engine, "fraud", ["f0", "f1", "score"])  # `score`: a column events never carry
    baseline(engine, "churn", ["f0", "f1"])
    ingest(
        engine,
        models,
        events("fraud", ["f0", "f1"], 2, 200) + events("churn", ["f0", "f1"], 2, 200),
    )
    poison_window(engine, "fraud", 1)
    path = tmp_path / "mw.yaml"
    path.write_text(CONFIG.format(url=database_url))
    server = ServerProcess(path)
    try:
        server.wait_ready()
        body = _wait_not_ready(server.url)
        metrics = _wait_metric(
            server.url, 'modelwatch_job_last_success_timestamp_seconds{job="evaluate"}'
        )
    finally:
        assert server.terminate() == 0

    checks = body["checks"]
    assert isinstance(checks, dict)
    item = f"job evaluate: drift fraud/1 {(START + WINDOW).isoformat()}"
    assert "failing since" in checks[item] and "CorruptProfileError" in checks[item]
    assert checks["database"] == "ok"
    assert "://" not in str(body) and "password" not in str(body).lower()
    assert 'modelwatch_job_failures_total{job="evaluate"}' in metrics
    assert 'modelwatch_job_last_success_timestamp_seconds{job="evaluate"}' in metrics

    churn = _statuses(engine, "churn")
    assert {w for _, w in churn} == {START.isoformat(), (START + WINDOW).isoformat()}
    fraud = _statuses(engine, "fraud")
    assert fraud[("score", START.isoformat())] == "missing"
    assert {w for _, w in fraud} == {START.isoformat()}, "the poisoned window has no results"

    status = run_cli("status", "--config", str(path))
    assert status.returncode == 0, status.stderr
    # Once: the run at start and the interval's first never evaluate beside each other (they
    # did on a loaded machine, and counted the failure twice).
    line = f"FAILING evaluate: drift fraud/1 {(START + WINDOW).isoformat()}: 1 times since"
    assert line in status.stdout, status.stdout
    assert "job evaluate: last success" in status.stdout
    doc = json.loads(run_cli("status", "--config", str(path), "--json").stdout)
    [failure] = [f for f in doc["failures"] if f["job"] == "evaluate"]
    assert failure["window_start"] == (START + WINDOW).isoformat()
