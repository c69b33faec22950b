"""The HTTP intake log's drain: two drains racing for the same rows count them once; a stored
body that cannot be split is a dead letter, not a stuck drain. SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import orjson
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Batch, BatchResult, Ingestor
from collectors._http_intake import IntakeLog, make_ingestor
from collectors._intake_drain import Drain
from monitor.config import Config, parse_config
from monitor.storage import DeadLetter, IngestCounter, IntakeEntry
from tests.collectors.conftest import event

CONFIG = parse_config({"models": [{"name": "fraud", "slices": ["region"]}]}, env={})


class Racing:
    """An ingestor that lets `before()` run first (another replica's drain, say)."""

    def __init__(self, inner: Ingestor, before: Callable[[], Any]) -> None:
        self.inner, self.before = inner, before
        self.source = inner.source

    def position(self, key: str) -> int:
        return self.inner.position(key)

    def ingest(self, batch: Batch, within: Any = None) -> BatchResult:
        self.before()
        return self.inner.ingest(batch, within=within)


def counted(engine: Engine) -> tuple[int, int, int]:
    with Session(engine) as session:
        row = session.get(IngestCounter, "http")
        pending = session.scalar(select(func.count()).where(IntakeEntry.consumed_at.is_(None)))
        return (row.events if row else 0), (row.dead_letters if row else 0), int(pending or 0)


def drain(engine: Engine, replica: str, config: Config = CONFIG) -> Drain:
    ingestor = make_ingestor(engine, config, "modelwatch")
    return Drain(engine, lambda _adapter: ingestor, replica)


def test_two_drains_racing_for_the_same_rows_count_them_once(engine: Engine) -> None:
    log = IntakeLog(engine, max_backlog=100)
    for k in range(3):
        body = orjson.dumps([event(10 * k + i) for i in range(4)])
        log.append("events", body, 4, f"key-{k}")
    other = drain(engine, "b")
    inner = make_ingestor(engine, CONFIG, "modelwatch")
    racing = cast(Ingestor, Racing(inner, other.drain_once))
    first = Drain(engine, lambda _adapter: racing, "a")
    # `first` reads the three rows, then `other` drains them before `first` commits: its batch
    # rolls back (nothing consumed twice) and the next round finds nothing pending.
    assert first.drain_once() == 0
    assert counted(engine) == (12, 0, 0)
    assert first.drain_once() == 0
    assert counted(engine) == (12, 0, 0)


def test_a_body_that_cannot_be_split_is_a_dead_letter(engine: Engine) -> None:
    log = IntakeLog(engine, max_backlog=100)
    log.append("events", b"[{not json", 1, "broken")
    log.append("events", orjson.dumps(event(1)), 1, None)
    worker = drain(engine, "a")
    assert worker.drain_once() == 2
    assert counted(engine) == (1, 1, 0)
    with Session(engine) as session:
        reasons = session.scalars(select(DeadLetter.reason)).all()
        keyed = session.execute(select(IntakeEntry.key, IntakeEntry.body)).all()
    assert reasons == ["invalid_json"]
    assert [tuple(row) for row in keyed] == [("idem:broken", None)]  # key kept, body dropped
    assert log.append("events", b"[{not json", 1, "broken").duplicates == 1


def test_after_a_small_batch_the_drain_waits_only_what_is_left_of_its_linger() -> None:
    quiet = Drain(cast(Engine, None), lambda _adapter: cast(Ingestor, None), "a", batch_events=100)
    quiet._last_events = 10
    assert quiet.pause_s(0.05) == quiet.linger_s - 0.05  # requests may gather meanwhile
    assert quiet.pause_s(quiet.linger_s + 0.1) == 0.0  # busy: the backlog is read at once
    quiet._last_events = 100
    assert quiet.pause_s(0.0) == 0.0  # a full batch: more is waiting


def test_a_lingering_drain_sees_the_events_pending(engine: Engine) -> None:
    log = IntakeLog(engine, max_backlog=100)
    for k in range(2):
        log.append("events", orjson.dumps([event(10 * k + i) for i in range(4)]), 4, f"k{k}")
    lingering = drain(engine, "a")
    assert lingering._pending_events() == 8  # a full batch of 8 would end its linger
    lingering.drain_once()
    assert lingering._pending_events() == 0
