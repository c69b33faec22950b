"""The HTTP intake backlog: bounded (503 + Retry-After), shown by /readyz and `status`."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from sqlalchemy import update

from collectors import HttpIntake, collect_status
from collectors._http_intake import BACKLOG_REFRESH_S
from dashboards.metrics import ModelwatchMetrics
from migrations import upgrade
from monitor.app.daemon._app import create_app
from monitor.app.daemon._common import DaemonState
from monitor.app.daemon.metrics import MetricsPublisher
from monitor.config import parse_config
from monitor.storage import IntakeEntry, make_engine, utcnow
from tests.monitor.app.daemon.test_api_ingest import event

TOKEN = {"name": "c", "scopes": ["ingest", "read"], "token": "secret-ingest"}
HEADERS = {"Authorization": "Bearer secret-ingest"}


def test_backlog_at_its_bound_is_503_with_retry_after_and_shown(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'mw.db'}")
    upgrade(engine)
    config = parse_config(
        {
            "models": [{"name": "fraud"}],
            "api": {"tokens": [TOKEN]},
            "collect": {"http_max_backlog": 2},
        }
    )
    intake = HttpIntake(engine, config)
    intake.drain.stop(0)  # a drain that is not keeping up: started, and already gone
    intake.drain.start()
    intake.drain.stop(30)
    client = TestClient(create_app(DaemonState(engine, config, CollectorRegistry(), intake=intake)))

    assert client.post("/v1/events", json=[event(1), event(2)], headers=HEADERS).status_code == 202
    assert client.post("/v1/events", json=event(3), headers=HEADERS).status_code == 202
    full = client.post("/v1/events", json=[event(4)], headers=HEADERS)
    assert full.status_code == 503 and full.headers["retry-after"] == "2"
    assert "collect.http_max_backlog (2)" in full.json()["detail"]
    labels = [{"request_id": "r1", "model": "fraud", "label": 1, "timestamp": 0}]
    assert client.post("/v1/labels", json=labels, headers=HEADERS).status_code == 503

    ready = client.get("/readyz", headers=HEADERS)
    assert ready.status_code == 503
    assert ready.json()["checks"]["intake"] == "drain not running"
    assert {k: v for k, v in ready.json()["intake"].items() if k != "oldest_age_s"} == {
        "backlog_requests": 2,
        "backlog_events": 3,
        "max_backlog": 2,
        "max_lag_s": 60.0,
    }
    status = collect_status(engine)
    assert status.intake_backlog == 2
    assert [(s.name, s.lag) for s in status.sources] == [("http", 3)]

    assert intake.drain.drain_once() == 2  # both requests in one batch
    assert intake.drain.drain_once() == 0
    time.sleep(BACKLOG_REFRESH_S)  # the endpoint counts the backlog again after this
    assert client.post("/v1/events", json=[event(5)], headers=HEADERS).status_code == 202
    status = collect_status(engine)
    assert (status.intake_backlog, status.sources[0].events) == (1, 3)
    engine.dispose()


@pytest.mark.slow
def test_a_drain_behind_http_max_lag_is_not_ready_and_its_lag_is_exported(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'mw.db'}")
    upgrade(engine)
    config = parse_config(
        {
            "models": [{"name": "fraud"}],
            "api": {"tokens": [TOKEN]},
            "collect": {"http_max_lag": "1m"},
        }
    )
    intake = HttpIntake(engine, config)
    body = orjson.dumps([event(1), event(2)])
    intake.log.append("events", body, 2, None)  # appended, the drain not started: it waits
    with engine.begin() as conn:  # acknowledged two minutes ago
        conn.execute(update(IntakeEntry).values(received_at=utcnow() - timedelta(minutes=2)))
    client = TestClient(create_app(DaemonState(engine, config, CollectorRegistry(), intake=intake)))
    registry = CollectorRegistry()
    publisher = MetricsPublisher(engine, ModelwatchMetrics(registry, config.models))

    ready = client.get("/readyz", headers=HEADERS)
    assert ready.status_code == 503
    assert ready.json()["checks"]["intake"].startswith("drain lag 120s over http_max_lag (60s)")
    assert ready.json()["checks"]["intake"].endswith(": 1 requests, 2 events not yet aggregated")
    publisher.publish([])
    assert registry.get_sample_value("modelwatch_intake_backlog_requests") == 1
    assert registry.get_sample_value("modelwatch_intake_backlog_events") == 2
    assert registry.get_sample_value("modelwatch_intake_lag_seconds") >= 120  # type: ignore[operator]

    assert intake.drain.drain_once() == 1
    assert client.get("/readyz", headers=HEADERS).json()["checks"]["intake"] == "ok"
    publisher.publish([])
    assert registry.get_sample_value("modelwatch_intake_lag_seconds") == 0
    assert registry.get_sample_value("modelwatch_intake_backlog_events") == 0
    engine.dispose()


def test_without_models_a_request_is_refused_not_queued(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'mw.db'}")
    upgrade(engine)
    config = parse_config({"models": [], "api": {"tokens": [TOKEN]}})
    client = TestClient(create_app(DaemonState(engine, config, CollectorRegistry())))
    refused = client.post("/v1/events", json=[event(1)], headers=HEADERS)
    assert refused.status_code == 400
    assert refused.json()["detail"] == "HTTP ingest: no models configured; add them under `models`"
    assert collect_status(engine).intake_backlog == 0
    engine.dispose()
