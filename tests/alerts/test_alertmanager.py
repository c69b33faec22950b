"""Push to a real Alertmanager and read the alerts back through its API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import Engine

from alerts._evaluator import Evaluator
from alerts.delivery import DeliveryWorker
from monitor.storage import utcnow
from tests.alerts.conftest import alerts_config, drift
from tests.services.alertmanager import AlertmanagerServer


@pytest.fixture
def alertmanager() -> Iterator[AlertmanagerServer]:
    server = AlertmanagerServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _alerts(am: AlertmanagerServer) -> list[dict[str, Any]]:
    response = httpx.get(f"{am.url}/api/v2/alerts", timeout=5)
    response.raise_for_status()
    data: list[dict[str, Any]] = response.json()
    return data


def test_pushed_alerts_are_listed_with_labels_and_annotations(
    sqlite_engine: Engine, alertmanager: AlertmanagerServer
) -> None:
    cfg = alerts_config(
        receivers=[{"name": "am", "type": "alertmanager", "url": alertmanager.url}],
        rules=[
            {
                "name": "FeatureDrift",
                "kind": "drift",
                "receivers": ["am"],
                "labels": {"team": "risk"},
                "annotations": {"summary": "{model}/{column} PSI {value:.2f}"},
            }
        ],
    )
    start = utcnow() - timedelta(minutes=2)
    ev = Evaluator(sqlite_engine, cfg)
    ev.evaluate([drift(column="amount"), drift(column="age")], start)
    ev.evaluate([drift(column="amount"), drift(column="age")], start + timedelta(seconds=30))
    with httpx.Client() as client:
        worker = DeliveryWorker(sqlite_engine, cfg, client, env={})
        assert worker.run(once=True).sent == 1
        listed = {a["labels"]["column"]: a for a in _alerts(alertmanager)}
        assert sorted(listed) == ["age", "amount"]
        amount = listed["amount"]
        assert amount["labels"] == {
            "alertname": "FeatureDrift",
            "severity": "warning",
            "kind": "drift",
            "team": "risk",
            "model": "fraud",
            "version": "3",
            "column": "amount",
        }
        assert amount["annotations"]["summary"] == "fraud/amount PSI 0.30"  # the rule's own
        assert "column amount" in amount["annotations"]["description"]  # the kind's default
        assert amount["status"]["state"] == "active"

        ev.evaluate([drift(column="age")], start + timedelta(seconds=60))  # amount resolves
        assert worker.run(once=True).sent == 1
    assert [a["labels"]["column"] for a in _alerts(alertmanager)] == ["age"]
