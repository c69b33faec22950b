"""Supervised components: the delivery worker dies with its database and comes back.

After a PostgreSQL restart or a SQLite exclusive lock longer than the busy timeout, the
delivery loop raises; the supervisor restarts it with backoff, counts the restart, and
alerts raised afterwards are still delivered.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import event
from sqlalchemy.engine import Engine

from alerts import Evaluator
from dashboards.metrics import ModelwatchMetrics
from migrations import upgrade
from monitor.app.daemon._supervisor import SupervisedComponent
from monitor.app.daemon.signals import guard_signal
from monitor.app.daemon.wiring import ComponentHealth, delivery_component
from monitor.app.demo._receiver import SignedWebhookReceiver
from monitor.config import Config, parse_config
from monitor.failures import Backoff, list_failures
from monitor.storage import make_engine
from tests.services.postgres import PostgresServer
from tests.waiting import wait_until

SECRET = "supervision-secret"


def _config(url: str, receiver: str) -> Config:
    return parse_config(
        {
            "database_url": url,
            "models": [{"name": "fraud"}],
            "alerts": {
                "grouping": {"group_wait": "0s"},
                "receivers": [
                    {"name": "hook", "type": "webhook", "url": receiver, "secret_env": "MW_SUP"}
                ],
                "rules": [{"name": "GateFailed", "kind": "guard", "receivers": ["hook"]}],
                "delivery": {"poll_interval": "0.1s", "backoff_initial": "0.1s"},
            },
        },
        env={},
    )


def _raise_alert(engine: Engine, config: Config, version: str) -> None:
    now = datetime.now(UTC)
    signal = guard_signal("fraud", version, "fail", now)
    Evaluator(engine, config.alerts).evaluate([signal], now, kinds=("guard",))


def _wait(condition: Callable[[], bool], timeout: float = 90) -> None:
    wait_until(condition, getattr(condition, "__name__", "the condition"), timeout)


def _versions(receiver: SignedWebhookReceiver) -> set[str]:
    return {a["labels"]["version"] for p in receiver.received.verified for a in p["alerts"]}


def _outage_then_delivery(engine: Engine, outage: Callable[[Callable[[], bool]], None]) -> None:
    """`outage(restarted)` breaks the database; `restarted()` tells once the worker came back."""
    registry = CollectorRegistry()
    with SignedWebhookReceiver(SECRET) as receiver:
        config = _config(str(engine.url), receiver.url)
        health = ComponentHealth(engine, ModelwatchMetrics(registry))
        worker = delivery_component(engine, config, health)
        worker.start()
        try:
            _raise_alert(engine, config, "1")
            _wait(lambda: "1" in _versions(receiver))
            restarts = lambda: registry.get_sample_value(  # noqa: E731
                "modelwatch_component_restarts_total", {"component": "delivery"}
            )
            outage(lambda: (restarts() or 0) >= 1)
            _wait(lambda: (restarts() or 0) >= 1)
            _raise_alert(engine, config, "2")
            _wait(lambda: "2" in _versions(receiver))
            _wait(lambda: worker.problem() is None)
            # A death during the outage is recorded once the database answers again.
            _wait(lambda: any(f.job == "components" for f in list_failures(engine)), timeout=30)
        finally:
            worker.stop(5)
    assert receiver.received.rejected == []
    [death] = [f for f in list_failures(engine) if f.job == "components"]
    assert death.item == "delivery" and death.failures >= 1 and "://" not in death.error


def test_delivery_survives_a_postgresql_restart(
    own_postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MW_SUP", SECRET)
    engine = make_engine(own_postgres.create_database())
    upgrade(engine)

    def restart(_restarted: Callable[[], bool]) -> None:
        own_postgres.pause()
        time.sleep(2)
        own_postgres.resume()

    _outage_then_delivery(engine, restart)
    engine.dispose()


def test_delivery_survives_a_sqlite_exclusive_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MW_SUP", SECRET)
    path = tmp_path / "mw.db"
    engine = make_engine(f"sqlite:///{path}")
    # The worker's connections wait 1 s for a lock, not the default 30 s (set after the
    # engine's own pragmas, so this one wins): the outage is the same, only shorter.
    event.listen(engine, "connect", lambda conn, _record: conn.execute("PRAGMA busy_timeout=1000"))
    upgrade(engine)

    def lock(restarted: Callable[[], bool]) -> None:
        # Held past the busy timeout until the worker's claim failed and it was restarted.
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        try:
            _wait(restarted, timeout=60)
        finally:
            conn.execute("ROLLBACK")
            conn.close()

    _outage_then_delivery(engine, lock)
    engine.dispose()


def test_a_component_that_dies_is_restarted_with_backoff() -> None:
    runs: list[float] = []
    recovered = threading.Event()

    def target(stop: threading.Event) -> None:
        runs.append(time.monotonic())
        if len(runs) <= 2:
            raise ConnectionError("postgresql://user:secret@db/x went away")
        stop.wait()

    component = SupervisedComponent(
        "worker",
        target,
        backoff=Backoff(initial_s=0.2, max_s=1.0),
        stable_s=0.3,
        on_recovered=lambda _name: recovered.set(),
    )
    component.start()
    try:
        _wait(lambda: len(runs) == 3, timeout=10)
        assert component.restarts == 2
        assert runs[2] - runs[1] >= 0.4 - 0.05, "the second restart waits twice as long"
        assert recovered.wait(5) and component.problem() is None
    finally:
        component.stop(2)
    assert component.problem() == "not running"


def test_a_dead_component_is_reported_without_secrets() -> None:
    def target(_stop: threading.Event) -> None:
        raise ConnectionError("connection to postgresql://u:hunter2@10.0.0.1/db refused")

    component = SupervisedComponent("worker", target, backoff=Backoff(initial_s=30, max_s=30))
    component.start()
    try:
        _wait(lambda: component.problem() != None, timeout=5)  # noqa: E711
        problem = component.problem() or ""
        assert problem.startswith("restarting after: ConnectionError")
        assert "hunter2" not in problem and "://" not in problem
        assert not component.running()
    finally:
        component.stop(2)


def test_a_death_that_cannot_be_recorded_yet_is_recorded_when_the_hook_succeeds() -> None:
    recorded: list[str] = []
    calls: list[str] = []

    def on_death(_name: str, error: str) -> None:
        calls.append(error)
        if len(calls) <= 2:  # the database is still away
            raise ConnectionError("database is locked")
        recorded.append(error)

    def target(stop: threading.Event) -> None:
        if not calls:
            raise ConnectionError("lost the database")
        stop.wait()

    component = SupervisedComponent(
        "worker", target, backoff=Backoff(initial_s=0.05, max_s=0.2), on_death=on_death
    )
    component.start()
    try:
        _wait(lambda: recorded == ["ConnectionError: lost the database"], timeout=10)
        assert len(calls) == 3 and component.restarts == 1
    finally:
        component.stop(2)
