"""Fixtures of the collector tests: a real Kafka broker, event builders, config files."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.storage import IngestCounter, WindowCount
from tests.services.kafka import KafkaBroker

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
_topics = itertools.count()


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaBroker]:
    """One ZooKeeper + Kafka 0.9 broker for the session; missing jars FAIL, never skip."""
    broker = KafkaBroker(partitions=4)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def topic(kafka: KafkaBroker) -> str:
    """A fresh 4-partition topic."""
    name = f"predictions-{next(_topics)}"
    kafka.create_topic(name, 4)
    return name


def event(i: int, ts: float | None = None, model: str = "fraud", **extra: Any) -> dict[str, Any]:
    """A valid prediction event number i (region alternates eu/us)."""
    out: dict[str, Any] = {
        "request_id": f"r{i}",
        "model": model,
        "model_version": "1",
        "timestamp": T0 + i if ts is None else ts,
        "features": {"amount": float(i % 97), "country": ["de", "fr", "us"][i % 3]},
        "prediction": (i % 10) / 10,
        "metadata": {"region": ["eu", "us"][i % 2]},
    }
    out.update(extra)
    return out


def payloads(n: int, start: int = 0) -> list[bytes]:
    """n valid events as JSON bytes."""
    return [orjson.dumps(event(i)) for i in range(start, start + n)]


def kafka_source(client: str, kafka: KafkaBroker, topic: str, group_id: str) -> dict[str, Any]:
    """A Kafka source `stream` on the test broker (0.9), quick to notice a dead member."""
    return {
        "client": client,
        "name": "stream",
        "type": "kafka",
        "bootstrap_servers": kafka.bootstrap,
        "topic": topic,
        "group_id": group_id,
        "api_version": "0.9",
        "session_timeout_ms": 3000,
    }


def write_config(
    path: Path, database_url: str, sources: list[dict[str, Any]], **collect: Any
) -> Path:
    """A config file with model `fraud` sliced by region."""
    import yaml

    data: dict[str, Any] = {
        "database_url": database_url,
        "models": [{"name": "fraud", "slices": ["region"]}],
        "sources": sources,
    }
    if collect:
        data["collect"] = collect
    path.write_text(yaml.safe_dump(data))
    return path


def counters(engine: Engine, source: str) -> IngestCounter:
    """The counter row of a source."""
    with Session(engine) as session:
        row = session.get(IngestCounter, source)
        assert row is not None, f"no counters for {source}"
        return row


def aggregated(engine: Engine, model: str = "fraud", slice_key: str = "") -> int:
    """Events aggregated into windows of a model (overall or one slice)."""
    with Session(engine) as session:
        total = session.execute(
            select(func.sum(WindowCount.events)).where(
                WindowCount.model == model, WindowCount.slice_key == slice_key
            )
        ).scalar_one()
    return int(total or 0)
