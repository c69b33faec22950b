"""Replicas of one source start together: creating the source's counter row must not fail on
its primary key when another replica created it a moment earlier (found by the replica test)."""

from __future__ import annotations

import threading

from sqlalchemy import func, select

from collectors._store import ensure_counter
from migrations import upgrade
from monitor.storage import IngestCounter, make_engine, transaction
from tests.services.postgres import PostgresServer


def test_concurrent_replicas_create_one_counter(postgres: PostgresServer) -> None:
    engine = make_engine(postgres.create_database())
    upgrade(engine)
    errors: list[BaseException] = []

    def second_replica() -> None:
        try:
            with transaction(engine) as session:  # waits on the first one's uncommitted row
                ensure_counter(session, "stream", "kafka")
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    with transaction(engine) as first:
        ensure_counter(first, "stream", "kafka")
        first.flush()
        other = threading.Thread(target=second_replica)
        other.start()
        other.join(timeout=1)  # still blocked: the first transaction holds the key
    other.join(timeout=30)
    assert not other.is_alive() and errors == []
    with transaction(engine) as session:
        assert session.scalar(select(func.count()).select_from(IngestCounter)) == 1
        # and again in one process (a restart): still one row, counts untouched
        ensure_counter(session, "stream", "kafka")
    with transaction(engine) as session:
        row = session.get(IngestCounter, "stream")
        assert row is not None and row.events == 0 and row.type == "kafka"
    engine.dispose()
