"""The metrics publisher reads what changed: dead letters since its last publish, lagging rows.

SQLite and PostgreSQL; the plans are checked in test_tick_plans.py, this is what a user sees
on /metrics.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from sqlalchemy import update
from sqlalchemy.engine import Engine

from dashboards.metrics import ModelwatchMetrics
from monitor.config import parse_config
from monitor.daemon._health_signals import ingest_lag_signals
from monitor.daemon.metrics import MetricsPublisher
from monitor.storage import DeadLetter, SourcePosition, transaction, utcnow


def _dead(engine: Engine, n: int, reason: str) -> None:
    with transaction(engine) as s:
        for i in range(n):
            s.add(
                DeadLetter(
                    source="http", key=f"idem:{reason}{i}", offset=0, reason=reason,
                    detail="x", payload=b"x", payload_size=1, truncated=False,
                )
            )  # fmt: skip


def test_dead_letters_count_once_and_lag_returns_to_zero(engine: Engine) -> None:
    config = parse_config({"database_url": str(engine.url), "models": [{"name": "m"}]}, env={})
    registry = CollectorRegistry()
    publisher = MetricsPublisher(engine, ModelwatchMetrics(registry, config.models))

    def dead(reason: str) -> float | None:
        labels = {"source": "http", "reason": reason}
        return registry.get_sample_value("modelwatch_dead_letters_total", labels)

    def lag(source: str) -> float | None:
        return registry.get_sample_value("modelwatch_consumer_lag", {"source": source})

    _dead(engine, 3, "invalid_json")  # retained before the process started: counted once
    with transaction(engine) as s:
        s.add(SourcePosition(source="kafka", key="t:0", offset=10, end_offset=60))
        s.add(SourcePosition(source="kafka", key="t:1", offset=5, end_offset=5))
        s.add(SourcePosition(source="http", key="idem:a", offset=40, end_offset=40))
    publisher.publish(["m"])
    assert dead("invalid_json") == 3 and lag("kafka") == 50
    publisher.publish(["m"])
    assert dead("invalid_json") == 3  # nothing new: no increment
    _dead(engine, 2, "invalid_json")
    _dead(engine, 1, "invalid_timestamp")
    publisher.publish(["m"])
    assert dead("invalid_json") == 5 and dead("invalid_timestamp") == 1
    assert [(s.labels, s.value) for s in ingest_lag_signals(engine, utcnow())] == [
        ({"source": "kafka"}, 50.0)
    ]
    with transaction(engine) as s:
        s.execute(update(SourcePosition).where(SourcePosition.key == "t:0").values(offset=60))
    publisher.publish(["m"])
    assert lag("kafka") == 0  # caught up: the gauge goes back to 0, not stuck at 50
    assert ingest_lag_signals(engine, utcnow()) == []  # no signal: its alert resolves
