"""Slack and PagerDuty payloads, delivered to loopback servers; the receiver registry."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy.engine import Engine

from alerts._evaluator import Evaluator
from alerts.delivery import DeliveryWorker
from alerts.receivers import build_receiver, receiver_types, register
from monitor.config.alerts import ReceiverConfig
from monitor.errors import ConfigError, RegistryError
from tests.alerts.conftest import alerts_config, at, drift
from tests.alerts.receiver import RecordingReceiver


@pytest.fixture
def server() -> Iterator[RecordingReceiver]:
    rec = RecordingReceiver()
    rec.start()
    yield rec
    rec.stop()


def _deliver(engine: Engine, receiver: dict[str, str], env: dict[str, str]) -> None:
    rule = alerts_config().rules[0].model_dump(by_alias=True)
    cfg = alerts_config(receivers=[receiver], rules=[{**rule, "receivers": [receiver["name"]]}])
    ev = Evaluator(engine, cfg)
    ev.evaluate([drift(), drift(column="age")], at(0))
    ev.evaluate([drift(), drift(column="age")], at(30))
    ev.evaluate([drift(column="age")], at(60))
    with httpx.Client() as client:
        worker = DeliveryWorker(engine, cfg, client, env=env)
        while worker.run_once(at(60)).claimed:
            pass


def test_pagerduty_triggers_and_resolves_by_dedup_key(
    sqlite_engine: Engine, server: RecordingReceiver
) -> None:
    pd = {"name": "pd", "type": "pagerduty", "url": server.url, "routing_key_env": "PD_KEY"}
    _deliver(sqlite_engine, pd, {"PD_KEY": "R0UTING"})
    events = [r.json() for r in server.delivered()]
    # The second notification re-states the still-firing alert (PagerDuty dedups it by key).
    assert [e["event_action"] for e in events] == ["trigger", "trigger", "trigger", "resolve"]
    assert all(e["routing_key"] == "R0UTING" for e in events)
    triggered = {e["dedup_key"] for e in events[:2]}
    assert events[2]["dedup_key"] in triggered and events[3]["dedup_key"] in triggered
    assert events[2]["dedup_key"] != events[3]["dedup_key"]
    assert events[0]["payload"]["severity"] == "warning"
    assert events[0]["payload"]["summary"].startswith("fraud column")
    assert len({r.key for r in server.requests}) == 4  # one idempotency key per event


def test_pagerduty_needs_its_routing_key() -> None:
    cfg = ReceiverConfig(
        name="pd", type="pagerduty", url="http://127.0.0.1:9/x", routing_key_env="PD_KEY"
    )
    with pytest.raises(ConfigError, match="PD_KEY"):
        build_receiver(cfg, {})
    receiver = build_receiver(cfg, {"PD_KEY": "R0UTING"})
    assert "R0UTING" not in repr(receiver)


def test_slack_message(sqlite_engine: Engine, server: RecordingReceiver) -> None:
    _deliver(sqlite_engine, {"name": "chat", "type": "slack", "url": server.url}, {})
    first, second = [r.json() for r in server.delivered()]
    assert first["text"].startswith("[FIRING:2]")
    assert "fraud column amount drifted" in first["attachments"][0]["text"]
    assert "runbook" in first["attachments"][0]["text"]
    assert (
        second["text"].startswith("[FIRING:1]") and "*resolved*" in second["attachments"][0]["text"]
    )


def test_registry_rejects_duplicates_and_lists_types() -> None:
    assert receiver_types() == ["alertmanager", "pagerduty", "slack", "webhook"]
    with pytest.raises(RegistryError, match="already registered"):
        register("webhook")(lambda cfg, env: build_receiver(cfg, env))
