"""The database goes away mid-stream: the ingestor retries with bounded backoff and resumes."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import orjson
import pytest
from sqlalchemy.engine import Engine

from collectors import BatchResult, Ingestor, RawRecord
from migrations import upgrade
from monitor.config import CollectConfig, ModelConfig
from monitor.errors import StorageError
from monitor.storage import make_engine
from tests.collectors.conftest import aggregated, counters, event
from tests.services.postgres import PostgresServer

MODELS = [ModelConfig(name="fraud", slices=["region"])]


def batch(first: int, n: int) -> list[RawRecord]:
    return [RawRecord("p", i, i + 1, orjson.dumps(event(i))) for i in range(first, first + n)]


def test_outage_is_retried_and_nothing_is_lost_or_doubled(own_postgres: PostgresServer) -> None:
    engine: Engine = make_engine(own_postgres.create_database())
    upgrade(engine)
    settings = CollectConfig(
        db_retry_backoff_max=timedelta(seconds=0.5), db_retry_timeout=timedelta(minutes=2)
    )
    ing = Ingestor(engine, "s", "kafka", MODELS, settings)
    ing.ingest(batch(0, 100))
    own_postgres.pause()
    results: list[BatchResult] = []
    worker = threading.Thread(target=lambda: results.append(ing.ingest(batch(100, 100))))
    worker.start()
    time.sleep(2.0)
    assert worker.is_alive() and not results, "ingest returned while the database was down"
    own_postgres.resume()
    worker.join(timeout=120)
    assert results and results[0].events == 100
    # A restarted collector replaying the whole stream adds nothing twice.
    again = Ingestor(engine, "s", "kafka", MODELS, settings).ingest(batch(0, 250))
    assert (again.events, again.skipped) == (50, 200)
    assert aggregated(engine) == 250 and counters(engine, "s").events == 250
    engine.dispose()


def test_gives_up_after_retry_timeout_with_one_line(own_postgres: PostgresServer) -> None:
    engine = make_engine(own_postgres.create_database())
    upgrade(engine)
    settings = CollectConfig(
        db_retry_backoff_max=timedelta(seconds=0.2), db_retry_timeout=timedelta(seconds=1)
    )
    ing = Ingestor(engine, "s", "kafka", MODELS, settings)
    own_postgres.pause()
    with pytest.raises(StorageError, match="database unavailable") as info:
        ing.ingest(batch(0, 10))
    assert "\n" not in str(info.value)
    own_postgres.resume()
    engine.dispose()
