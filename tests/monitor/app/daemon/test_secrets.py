"""No secret leaves its variable: a real `serve` at `--log-level debug` delivers an alert to a
webhook URL carrying credentials and a query token, and neither they nor the signing secret
nor the API tokens nor the password in its database URL (PostgreSQL) appear in anything it
writes or serves, on SQLite and PostgreSQL.

The original symptom: httpx's request logging wrote `POST http://user:pw@host/hook?token=...`
to the log at INFO.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from alerts import Evaluator, Signal
from migrations import upgrade
from monitor.config import load_config
from monitor.failures import list_failures
from monitor.storage import AlertNotification, make_engine, transaction
from tests.alerts.receiver import RecordingReceiver
from tests.monitor.app.daemon.conftest import CONFIG, TOKENS, ServerProcess, auth

SIGNING = "signing-s3cret-Zq8"
ALERTS = """\
alerts:
  grouping: {{group_by: [alertname, model], group_wait: 0s}}
  receivers:
    - {{name: hook, type: webhook, url: "{hook}", secret_env: MW_T_SIGNING, timeout_s: 5}}
  rules:
    - {{name: FeatureDrift, kind: drift, receivers: [hook]}}
  delivery: {{poll_interval: 0.2s, backoff_initial: 0.2s, backoff_max: 0.5s}}
"""
# The password in the PostgreSQL URL (the test cluster trusts 127.0.0.1, so any password works).
DB_PASSWORD = "db-pa55w0rd-Kf3"
# What must never be written or served (the receiver's Basic credentials encoded as well).
SECRETS = (
    "pa55",
    "s3cr3t",
    SIGNING,
    base64.b64encode(b"user:pa55").decode(),
    DB_PASSWORD,
    *TOKENS.values(),
)


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    hook = RecordingReceiver(secret=SIGNING)
    hook.start()
    yield hook
    hook.stop()


def database_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """SQLite in `tmp_path`, or a fresh PostgreSQL database reached with a password."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'mw.db'}"
    url: str = request.getfixturevalue("postgres").create_database()
    return url.replace("://postgres@", f"://postgres:{DB_PASSWORD}@")


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=[pytest.mark.pg, pytest.mark.services])]
)
def test_debug_logs_metrics_and_bodies_hold_no_secret(
    backend: str, receiver: RecordingReceiver, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = database_url(backend, tmp_path, request)
    engine = make_engine(url)
    upgrade(engine)
    hook = f"http://user:pa55@127.0.0.1:{receiver.port}/hook?token=s3cr3t"
    config = tmp_path / "mw.yaml"
    config.write_text(CONFIG.format(url=url) + ALERTS.format(hook=hook))
    log = tmp_path / "serve.log"
    server = ServerProcess(config, {"MW_T_SIGNING": SIGNING}, log, ("--log-level", "debug"))
    receiver.fail_next = 1  # one failure and its retry are logged too
    try:
        server.wait_ready()
        now = datetime.now(UTC)
        alerts = load_config(config, env={"MW_T_SIGNING": SIGNING}).alerts
        drift = Signal("drift", {"model": "fraud", "column": "amount"}, 0.5, 0.2, True, now)
        Evaluator(engine, alerts).evaluate([drift], now)
        deadline = time.monotonic() + 60
        while not receiver.delivered():
            assert time.monotonic() < deadline, "the alert was never delivered"
            time.sleep(0.2)
        served = [
            httpx.get(f"{server.url}{path}", headers=auth("MW_T_READ"), timeout=30).text
            for path in ("/metrics", "/v1/alerts", "/readyz", "/openapi.json")
        ]
    finally:
        server.terminate()
    first = receiver.delivered()[0]
    assert first.valid and first.path == "/hook?token=s3cr3t"  # the URL itself was used as is
    output = log.read_text()
    assert "HTTP Request: POST http://<redacted>@127.0.0.1" in output  # httpx's line, redacted
    assert "DEBUG" in output and "httpcore" in output  # the library's DEBUG traces were there
    with transaction(engine) as session:
        errors = session.scalars(select(AlertNotification.last_error)).all()
    errors += [f.error for f in list_failures(engine)]
    engine.dispose()
    for where, text in {"output": output, **dict(enumerate(served)), "errors": str(errors)}.items():
        leaked = [s for s in SECRETS if s in text]
        assert not leaked, f"{where} shows {leaked}"
