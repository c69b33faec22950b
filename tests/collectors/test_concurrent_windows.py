"""Two writers create the same window row at once (replicas with their own sources, or two
sources of one model): the second commit must merge into the first's row, not stop the source."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import orjson
from sqlalchemy import text

from collectors import BatchResult, Ingestor, RawRecord
from migrations import upgrade
from monitor.config import CollectConfig, ModelConfig
from monitor.storage import WindowCount, make_engine
from tests.collectors.conftest import T0, aggregated, event
from tests.services.postgres import PostgresServer
from tests.waiting import wait_until

MODELS = [ModelConfig(name="fraud")]


def test_a_concurrent_insert_of_the_same_window_is_merged(postgres: PostgresServer) -> None:
    engine = make_engine(postgres.create_database())
    upgrade(engine)
    settings = CollectConfig(window=timedelta(hours=1))
    ingestor = Ingestor(engine, "b", "jsonl", MODELS, settings)
    start = datetime.fromtimestamp(T0, UTC)
    blocker = engine.connect()
    tx = blocker.begin()
    # Another writer has inserted the window's count row and not yet committed.
    blocker.execute(
        WindowCount.__table__.insert().values(
            model="fraud", version="1", window_start=start, slice_key="",
            window_end=start + timedelta(hours=1), events=5, updated_at=start,
        )
    )  # fmt: skip
    results: list[BatchResult] = []
    errors: list[BaseException] = []

    def ingest() -> None:
        records = [RawRecord("f", i, i + 1, orjson.dumps(event(i))) for i in range(10)]
        try:
            results.append(ingestor.ingest(records))
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=ingest)
    worker.start()
    wait_until(
        lambda: _someone_waits(engine) or not worker.is_alive(),
        "the ingest to reach the window row",
        timeout=60,
        interval=0.05,
    )
    tx.commit()
    blocker.close()
    worker.join(timeout=60)
    assert not errors, errors
    assert results and results[0].events == 10
    assert aggregated(engine) == 15  # 5 from the other writer + 10, none lost or doubled
    engine.dispose()


def _someone_waits(engine: object) -> bool:
    with engine.connect() as conn:  # type: ignore[attr-defined]
        return bool(conn.execute(text("select count(*) from pg_locks where not granted")).scalar())
