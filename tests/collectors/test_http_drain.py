"""The HTTP intake log's drain: two drains racing for the same rows count them once; a stored
body that cannot be split is a dead letter, not a stuck drain. SQLite and PostgreSQL. The
drain's worker process logs through the parent's logging, its secrets scrubbed."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Batch, BatchResult, Ingestor, _intake_drain
from collectors._http_intake import IntakeLog, make_ingestor
from collectors._intake_drain import Drain
from collectors._intake_worker import DrainProcess
from migrations import upgrade
from monitor.config import Config, parse_config
from monitor.storage import DeadLetter, IngestCounter, IntakeEntry, make_engine
from tests.collectors.conftest import aggregated, event
from tests.logged import root_lines
from tests.services.postgres import PostgresServer
from tests.waiting import wait_until

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

    def ingest_claimed(self, claim: Any) -> BatchResult | None:
        def claimed(session: Session) -> Any:  # `before()` once the rows are read
            read = claim(session)
            self.before()
            return read

        return self.inner.ingest_claimed(claimed)


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
    # SQLite: `first` reads the three rows, then `other` drains them before `first` commits: its
    # batch rolls back (nothing consumed twice) and the next round finds nothing pending.
    # PostgreSQL: `first` holds the rows it read (FOR UPDATE SKIP LOCKED): `other` finds none.
    assert first.drain_once() == (3 if engine.dialect.name == "postgresql" else 0)
    assert counted(engine) == (12, 0, 0)
    assert first.drain_once() == 0
    assert counted(engine) == (12, 0, 0)


@pytest.mark.services
def test_drains_side_by_side_on_postgresql_count_every_event_once(
    postgres: PostgresServer, pg_head: str
) -> None:
    """PostgreSQL only: SQLite has one writer, its drains take turns."""
    engine = make_engine(postgres.create_database(template=pg_head))
    log = IntakeLog(engine, max_backlog=1000)
    for k in range(60):
        log.append("events", orjson.dumps([event(k)]), 1, f"k{k}" if k % 2 else None)
    drains = [drain(engine, replica) for replica in "ab"]
    for each in drains:
        each.batch_events = 7  # batches of a few rows, so the two interleave
    consumed = [0, 0]

    def run(i: int) -> None:
        while (done := drains[i].drain_once()) or counted(engine)[2]:
            consumed[i] += done

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert counted(engine) == (60, 0, 0)  # none lost, none twice
    assert sum(consumed) == 60
    assert aggregated(engine, slice_key="") == 60
    engine.dispose()


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


def test_a_busy_drain_of_thin_traffic_lingers_until_the_next_step_of_its_max_delay() -> None:
    now = [100.8]
    thin = Drain(
        cast(Engine, None), lambda _: cast(Ingestor, None), "a", 100, max_delay_s=2.0,
        clock=lambda: now[0],
    )  # fmt: skip
    thin._last_events, thin._last_windows = 50, 40  # nearly a window per event
    thin._began = 100.3
    # busy: until the clock's next 2 s step after the batch began, and the linger
    assert thin.pause_s(0.5) == pytest.approx(102.25 - 100.8)
    assert thin.pause_s(0.01) == thin.linger_s - 0.01  # quiet: the usual linger
    thin._last_windows = 5  # ten events per window: not thin
    assert thin.pause_s(0.5) == 0.0
    # ... unless they were a minute's worth: at that rate a linger gathers <1 event per window
    thin._gathered_s = 60.0
    assert thin.pause_s(0.5) == pytest.approx(102.25 - 100.8)


@pytest.mark.parametrize(
    ("max_delay", "window", "began", "expected"),
    [
        (60.0, 60.0, 119.0, 120.25),  # a window's worth: the batch after its end
        (60.0, 60.0, 120.3, 180.25),  # just after an end: the next window's
        (30.0, 60.0, 95.0, 120.25),  # half a window: twice per window, one at its end
        (30.0, 60.0, 125.0, 150.25),
        (60.0, 10.0, 13.0, 20.25),  # windows shorter than the delay: each window's end
        (2.0, 0.0, 13.0, 14.25),  # no window known: the delay's grid alone
    ],
)
def test_thin_batches_follow_the_clock_grid_of_the_delay_and_the_windows(
    max_delay: float, window: float, began: float, expected: float
) -> None:
    drain = Drain(
        cast(Engine, None), lambda _: cast(Ingestor, None), "a", 100, max_delay_s=max_delay,
        window_s=window,
    )  # fmt: skip
    assert drain.next_batch_at(began) == pytest.approx(expected)
    # shifted like the evaluation ticks: the batch after a window's end starts just after the
    # tick that waits for it began
    drain.offset_s = 2.0
    assert drain.next_batch_at(began + 2.0) == pytest.approx(expected + 2.0)


def test_a_lingering_drain_sees_the_events_pending(engine: Engine) -> None:
    log = IntakeLog(engine, max_backlog=100)
    for k in range(2):
        log.append("events", orjson.dumps([event(10 * k + i) for i in range(4)]), 4, f"k{k}")
    lingering = drain(engine, "a")
    assert lingering._pending_events() == 8  # a full batch of 8 would end its linger
    lingering.drain_once()
    assert lingering._pending_events() == 0


def test_rows_of_both_adapters_are_drained_each_by_its_own(engine: Engine) -> None:
    log = IntakeLog(engine, max_backlog=100)
    log.append("cloudevents", b"{}", 1, None)  # not a CloudEvent: a dead letter of its source
    log.append("events", orjson.dumps([event(1), event(2)]), 2, None)
    ingestors = {a: make_ingestor(engine, CONFIG, a) for a in ("modelwatch", "cloudevents")}
    worker = Drain(engine, ingestors.__getitem__, "a")
    assert sorted(worker.drain_once() for _ in range(2)) == [1, 1]
    assert worker.drain_once() == 0
    assert counted(engine) == (2, 0, 0)  # source `http`: the events; nothing pending
    with Session(engine) as session:
        assert session.scalars(select(DeadLetter.source)).all() == ["http-cloudevents"]


def test_after_a_large_batch_the_drain_hands_its_freed_heap_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _intake_drain.trim_heap()  # the real one: glibc here, a no-op elsewhere; never raises
    trims: list[int] = []
    monkeypatch.setattr(_intake_drain, "trim_heap", lambda: trims.append(1))
    drain = Drain(cast(Engine, None), lambda _: cast(Ingestor, None), "a", 10_000)
    drain._done(cast(Ingestor, None), _intake_drain.TRIM_AFTER_EVENTS - 1)
    assert trims == []  # small batches: nothing to give back
    drain._done(cast(Ingestor, None), _intake_drain.TRIM_AFTER_EVENTS)
    assert trims == [1]


SECRET = "hunter2-Xq9"


def _unreachable(_engine: Engine, _config: Config, _adapter: str) -> Ingestor:
    """The worker's ingestor factory: fails naming a URL with a password and a query token."""
    raise RuntimeError(f"cannot reach postgresql://svc:{SECRET}@db:5432/mw?token={SECRET}")


@pytest.mark.slow
def test_the_drain_process_logs_through_the_parent_with_secrets_scrubbed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mw.db'}"
    engine = make_engine(url)
    upgrade(engine)
    IntakeLog(engine, max_backlog=100).append("events", orjson.dumps([event(1)]), 1, "k")
    worker, stop = DrainProcess(url, CONFIG, "a", _unreachable), threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    with root_lines(logging.INFO) as lines:
        thread.start()
        try:
            failed = "intake-drain ERROR collectors._intake_drain: intake drain failed; retrying"
            wait_until(lambda: any(line.startswith(failed) for line in lines.lines), failed, 60)
        finally:
            stop.set()
            thread.join(30)
    text = lines.text()
    assert "RuntimeError: cannot reach postgresql://<redacted>@db:5432/mw?token=<redacted>" in text
    assert SECRET not in text and not thread.is_alive()
