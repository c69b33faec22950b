"""Delivery through a real loopback receiver: outages, retries, dead rows, order, signatures."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alerts._evaluator import Evaluator
from alerts._outbox import claim, enqueue, status_counts
from alerts.delivery import DeliveryWorker
from monitor.config.alerts import AlertsConfig
from monitor.storage import AlertNotification, transaction
from tests.alerts.conftest import alerts_config, at, drift
from tests.alerts.receiver import RecordingReceiver

SECRET = "s3cr3t-hmac-value"
ENV = {"HOOK_SECRET": SECRET}


def config_for(url: str, **delivery: Any) -> AlertsConfig:
    return alerts_config(
        receivers=[{"name": "hook", "type": "webhook", "url": url, "secret_env": "HOOK_SECRET"}],
        delivery={"backoff_initial": "1s", "backoff_max": "30s", **delivery},
    )


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    rec = RecordingReceiver(secret=SECRET)
    yield rec
    rec.stop()


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


def produce(engine: Engine, cfg: AlertsConfig) -> None:
    """Two models; fraud fires, grows, and resolves: 4 notifications in 2 groups."""
    ev = Evaluator(engine, cfg)
    ev.evaluate([drift(), drift(model="churn")], at(0))
    ev.evaluate([drift(), drift(model="churn")], at(30))
    ev.evaluate([drift(), drift(column="b"), drift(model="churn")], at(330))
    ev.evaluate([drift(), drift(column="b"), drift(model="churn")], at(360))
    ev.evaluate([drift(model="churn")], at(400))


def rows(engine: Engine) -> list[AlertNotification]:
    with transaction(engine) as s:
        return list(s.scalars(select(AlertNotification).order_by(AlertNotification.id)))


def test_outage_then_recovery_delivers_everything_once_in_order(
    engine: Engine, receiver: RecordingReceiver, client: httpx.Client
) -> None:
    cfg = config_for(receiver.url)
    produce(engine, cfg)
    queued = rows(engine)
    assert len(queued) == 4
    worker = DeliveryWorker(engine, cfg, client, env=ENV, rng=random.Random(1))
    # Receiver down (nothing listens): every due row fails and backs off.
    first = worker.run_once(at(400))
    assert first.claimed == 2 and first.retried == 2
    assert worker.run_once(at(400)).claimed == 0  # backing off, not hammering
    receiver.start()
    receiver.fail_next = 1  # up, but the first answer is a 503
    for t in range(401, 700, 5):
        worker.run_once(at(t))
    assert status_counts(engine)["sent"] == 4
    got = receiver.delivered()
    assert sorted(r.key for r in got) == sorted(r.idempotency_key for r in queued)
    assert all(r.valid for r in receiver.requests)
    by_group = [r.json()["groupKey"] for r in got]
    fraud = [r.json() for r in got if 'model="fraud"' in r.json()["groupKey"]]
    assert [(d["status"], len(d["alerts"])) for d in fraud] == [
        ("firing", 1),
        ("firing", 2),
        ("resolved", 2),
    ]
    assert len(set(by_group)) == 2


def test_webhook_payload_is_alertmanager_v4(
    engine: Engine, receiver: RecordingReceiver, client: httpx.Client
) -> None:
    cfg = config_for(receiver.url)
    receiver.start()
    Evaluator(engine, cfg).evaluate([drift()], at(0))
    Evaluator(engine, cfg).evaluate([drift()], at(30))
    DeliveryWorker(engine, cfg, client, env=ENV).run_once(at(30))
    [req] = receiver.delivered()
    doc = req.json()
    assert set(doc) == {
        "version",
        "groupKey",
        "truncatedAlerts",
        "status",
        "receiver",
        "groupLabels",
        "commonLabels",
        "commonAnnotations",
        "externalURL",
        "alerts",
    }
    assert doc["version"] == "4" and doc["status"] == "firing" and doc["receiver"] == "hook"
    assert doc["groupLabels"] == {"alertname": "FeatureDrift", "model": "fraud"}
    [alert] = doc["alerts"]
    assert set(alert) == {
        "status",
        "labels",
        "annotations",
        "startsAt",
        "endsAt",
        "generatorURL",
        "fingerprint",
    }
    assert alert["startsAt"] == "2026-06-01T12:00:00Z" and alert["endsAt"] == "0001-01-01T00:00:00Z"
    assert alert["labels"]["column"] == "amount"


def test_permanent_error_and_exhausted_attempts_go_dead(
    engine: Engine, client: httpx.Client
) -> None:
    down = RecordingReceiver(secret=SECRET)  # never started: connection refused
    cfg = config_for(down.url, max_attempts=3)
    produce(engine, cfg)
    worker = DeliveryWorker(engine, cfg, client, env=ENV, rng=random.Random(2))
    for t in range(400, 1000, 10):
        worker.run_once(at(t))
    counts = status_counts(engine)
    assert counts["dead"] == 4 and counts["pending"] == 0
    assert all(r.attempts == 3 and "ConnectError" in (r.last_error or "") for r in rows(engine))


def test_client_error_is_dead_at_once(engine: Engine, client: httpx.Client) -> None:
    cfg = config_for("http://127.0.0.1:9/hook")
    with transaction(engine) as s:
        enqueue(s, kind="notify", receiver="nowhere", group_key="g", seq=1, payload={}, now=at(0))
    report = DeliveryWorker(engine, cfg, client, env=ENV).run_once(at(0))
    assert report.dead == 1
    assert "not configured" in (rows(engine)[0].last_error or "")


def test_concurrent_workers_never_claim_the_same_row(engine: Engine) -> None:
    with transaction(engine) as s:
        for i in range(40):
            enqueue(
                s,
                kind="notify",
                receiver="hook",
                group_key=f"g{i % 10}",
                seq=i,
                payload={},
                now=at(0),
            )
    taken: list[list[int]] = [[], [], []]

    def work(slot: int) -> None:
        for _ in range(60):
            for item in claim(engine, at(0), lease=at(0) - at(-60), limit=3):
                taken[slot].append(item.id)
                with transaction(engine) as s:
                    row = s.get(AlertNotification, item.id)
                    assert row is not None
                    row.status = "sent"

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = [i for slot in taken for i in slot]
    assert len(ids) == len(set(ids)) == 40


def test_secrets_stay_out_of_reprs_and_logs(
    engine: Engine, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = config_for("http://127.0.0.1:9/hook")
    produce(engine, cfg)
    caplog.set_level(logging.DEBUG)
    worker = DeliveryWorker(engine, cfg, client, env=ENV)
    worker.run_once(at(400))
    assert SECRET not in repr(worker) and SECRET not in repr(worker.receivers)
    assert SECRET not in caplog.text and SECRET not in repr(worker.__dict__)
    assert all(SECRET not in (r.last_error or "") for r in rows(engine))


def test_missing_secret_env_is_a_config_error(engine: Engine, client: httpx.Client) -> None:
    from monitor.errors import ConfigError

    with pytest.raises(ConfigError, match="HOOK_SECRET"):
        DeliveryWorker(engine, config_for("http://127.0.0.1:9/h"), client, env={})
