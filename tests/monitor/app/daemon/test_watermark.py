"""The tick after a window ends waits for the HTTP intake received before the end to be
aggregated (`monitor.app.daemon._watermark`), within its bound."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.engine import Engine

from monitor.app.daemon._watermark import await_intake
from monitor.storage import IntakeEntry, oldest_pending, transaction, utcnow


def _pending(engine: Engine, received_ago_s: float) -> int:
    row = IntakeEntry(kind="events", sha256="0" * 64, events=1, body=b"[]",
                      received_at=utcnow() - timedelta(seconds=received_ago_s))  # fmt: skip
    with transaction(engine) as s:
        s.add(row)
        s.flush()
        return row.id


def _consume(engine: Engine, row: int) -> None:
    with transaction(engine) as s:
        s.execute(update(IntakeEntry).where(IntakeEntry.id == row).values(consumed_at=utcnow()))


@pytest.mark.slow
def test_the_tick_waits_for_requests_received_before_the_end_only(sqlite_engine: Engine) -> None:
    boundary = utcnow() - timedelta(seconds=1)
    assert oldest_pending(sqlite_engine) is None
    assert await_intake(sqlite_engine, boundary, 5.0)  # nothing pending: at once
    before = _pending(sqlite_engine, 3.0)
    began = time.monotonic()
    assert not await_intake(sqlite_engine, boundary, 0.3)  # the bound: goes on without it
    assert time.monotonic() - began >= 0.3
    drained = threading.Timer(0.3, _consume, (sqlite_engine, before))
    drained.start()
    assert await_intake(sqlite_engine, boundary, 10.0)  # returns once the drain passed it
    drained.join()
    _pending(sqlite_engine, 0.0)  # received after the end: no reason to wait
    began = time.monotonic()
    assert await_intake(sqlite_engine, boundary, 5.0)
    assert time.monotonic() - began < 1.0
