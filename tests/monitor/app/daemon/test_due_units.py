"""A tick evaluates only the models with work due (`monitor.app.daemon._due`): every kind of
pending change and every failed item due for retry gives its model a unit (on SQLite: its
evaluation in the tick's process); an idle model gets none, and an idle tick costs three queries.
An ended window's profiles are due only once the HTTP intake holds none of its last events.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from sqlalchemy import delete, event, select, update
from sqlalchemy.engine import Engine

from migrations import upgrade
from monitor.app.daemon._due import UNIT_KINDS, due_models
from monitor.app.daemon._watermark import IntakeFollow
from monitor.app.daemon._work_queue import WorkQueue
from monitor.app.daemon.wiring import Monitoring
from monitor.config import Config, parse_config
from monitor.evaluation.windows import EVALUATE_JOB
from monitor.failures import Backoff, record_failure, window_item
from monitor.slo.evaluate import slo_item
from monitor.storage import (
    Change,
    IntakeEntry,
    JobFailure,
    WindowChange,
    consume_changes,
    intake_settled,
    make_engine,
    mark_changed,
    pending_changes,
    session_factory,
    transaction,
    utcnow,
)
from monitor.summaries import window_of
from tests.monitor.app.daemon.isolation_data import START, WINDOW, baseline, events, ingest
from tests.services.postgres import PostgresServer

MODELS = ["a", "b"]
FEATURES = ["f0"]
BACKOFF = Backoff(60.0, 600.0)


def _config(url: str) -> Config:
    return parse_config({"database_url": url, "models": [{"name": m} for m in MODELS]}, env={})


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    eng = make_engine(f"sqlite:///{tmp_path_factory.mktemp('due') / 'modelwatch.db'}")
    upgrade(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def db(migrated: Engine) -> Engine:
    """The module's SQLite database without markers or failures (one migration per module)."""
    with transaction(migrated) as s:
        s.execute(delete(WindowChange))
        s.execute(delete(JobFailure))
    return migrated


def _mark(engine: Engine, kind: str, model: str = "a") -> None:
    with transaction(engine) as s:
        mark_changed(s, kind, [(model, "1", START, START + WINDOW)])


@pytest.mark.parametrize("kind", UNIT_KINDS)
def test_each_kind_of_pending_change_gives_its_model_work(db: Engine, kind: str) -> None:
    assert due_models(db, MODELS, EVALUATE_JOB, START) == []
    _mark(db, kind)
    assert due_models(db, MODELS, EVALUATE_JOB, START) == ["a"]
    consume_changes(db, kind, pending_changes(db, "a", kind))
    assert due_models(db, MODELS, EVALUATE_JOB, START) == []


def test_an_open_window_day_or_week_gives_work_only_once_it_waited_its_interval(db: Engine) -> None:
    # Marked at `now` (not when the transaction runs: a loaded machine takes seconds), noon of
    # the day so that `now` + 301 s is still inside it whenever the test runs.
    now = utcnow().replace(hour=12, minute=0, second=0, microsecond=0)
    day = now.replace(hour=0)
    with transaction(db) as s:  # pending since now, the day still open
        mark_changed(
            s, ["drift_day", "outcome_week"], [("a", "1", day, day + timedelta(days=1))], now=now
        )
    assert due_models(db, MODELS, EVALUATE_JOB, now, 300.0) == []
    assert due_models(db, MODELS, EVALUATE_JOB, now + timedelta(seconds=301), 300.0) == ["a"]
    assert due_models(db, MODELS, EVALUATE_JOB, now, 0.0) == ["a"]  # no interval: at once
    with transaction(db) as s:  # an ended day is due at once; a window unless paced too
        mark_changed(s, "drift_day", [("b", "1", day - timedelta(days=1), day)], now=now)
        mark_changed(s, "drift", [("a", "2", now, now + WINDOW)], now=now)
    assert due_models(db, MODELS, EVALUATE_JOB, now, 300.0) == ["a", "b"]
    # With open windows paced too, a's open window waits like its day.
    assert due_models(db, MODELS, EVALUATE_JOB, now, 300.0, 300.0) == ["b"]
    later = now + timedelta(seconds=301)
    assert due_models(db, MODELS, EVALUATE_JOB, later, 300.0, 300.0) == ["a", "b"]


@pytest.mark.parametrize(
    "item",
    [
        slo_item("a", "1", START),  # an SLO window retried without a change
        window_item("drift", "a", "1", START),
        window_item("outcomes", "a", "1", START),
        window_item("estimate", "a", "1", START),
        "fairness a/1",
        "baseline a/1",
        "estimation models a/1",
        f"drift a/1 day {START.isoformat()}",  # a period
        "drift a",  # the model's listing
    ],
)
def test_a_failed_item_gives_its_model_work_once_its_retry_is_due(db: Engine, item: str) -> None:
    failed = record_failure(db, EVALUATE_JOB, item, "boom", BACKOFF, START, "a", "1")
    assert due_models(db, MODELS, EVALUATE_JOB, START) == []  # not yet due
    assert due_models(db, MODELS, EVALUATE_JOB, failed.retry_at) == ["a"]


def test_failures_of_other_jobs_or_of_no_model_are_no_models_work(db: Engine) -> None:
    record_failure(db, "alerts", "signals drift a", "boom", BACKOFF, START, "a")
    record_failure(db, EVALUATE_JOB, "queue", "boom", BACKOFF, START)
    later = START + timedelta(days=1)
    assert due_models(db, MODELS, EVALUATE_JOB, later) == []


@pytest.fixture
def traffic(sqlite_engine: Engine) -> Iterator[tuple[Engine, Config]]:
    config = _config(str(sqlite_engine.url))
    for m in MODELS:
        baseline(sqlite_engine, m, FEATURES)
    ingest(
        sqlite_engine, config.models, events("a", FEATURES, 1, 20) + events("b", FEATURES, 1, 20)
    )
    yield sqlite_engine, config


def _statements(engine: Engine) -> list[str]:
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    return seen


def test_the_in_process_tick_evaluates_only_models_with_work(
    traffic: tuple[Engine, Config],
) -> None:
    engine, config = traffic
    monitoring = Monitoring(engine, config)
    now = START + timedelta(days=1)
    assert sorted(e.window.model for e in monitoring._evaluate(now)) == MODELS
    seen = _statements(engine)
    assert monitoring._evaluate(now) == []  # idle: nothing evaluated
    # the intake's oldest pending request, the pending markers and the failures due: nothing
    # per model
    assert len(seen) == 3, seen
    ingest(engine, config.models, events("b", FEATURES, 2, 20), 40)  # new profiles
    assert {e.window.model for e in monitoring._evaluate(now)} == {"b"}
    labels = [
        {"request_id": f"a-0-{i}", "model": "a", "label": 1, "timestamp": START.isoformat()}
        for i in range(20)
    ]
    ingest(engine, config.models, labels, 100)  # labels only: outcomes and estimation
    assert monitoring.due(now) == ["a"]
    assert [e.window.model for e in monitoring._evaluate(now)] == ["a"]
    with session_factory(engine)() as s:  # every kind evaluation marked, a unit reads
        kinds = set(s.scalars(select(WindowChange.kind).distinct()))
    assert {"drift", "outcome", "estimate", "outcome_day", "outcome_week"} <= kinds
    assert kinds <= set(UNIT_KINDS)
    assert monitoring.due(now) == []


def test_the_producer_defers_units_only_for_models_with_work(
    postgres: PostgresServer, pg_head: str
) -> None:
    engine = make_engine(postgres.create_database(template=pg_head))
    monitoring = Monitoring(engine, _config(str(engine.url)))
    queue = WorkQueue(engine, MODELS, lambda _model: None, lease_s=600, holder="test")
    monitoring.share(queue)
    queue.stop_waiting()  # no worker runs here: the tick does not wait for its units
    try:
        now = START + timedelta(days=1)
        monitoring._evaluate(now)
        assert queue.depth() == []  # idle models: no unit
        _mark(engine, "outcome", "b")
        record_failure(engine, EVALUATE_JOB, slo_item("a", "1", START), "x", BACKOFF, START, "a")
        monitoring._evaluate(now)
        assert sorted(str(j.task_kwargs["model"]) for j in queue.depth()) == MODELS
    finally:
        queue.close()
        engine.dispose()


def test_a_tick_defers_the_units_of_windows_the_drain_writes_while_it_waits(
    postgres: PostgresServer, pg_head: str
) -> None:
    """The shared queue's tick does not block on the intake: it follows it while it waits for
    its units, and defers the models due once the drain has passed the boundary, in the tick."""
    engine = make_engine(postgres.create_database(template=pg_head))
    monitoring = Monitoring(engine, _config(str(engine.url)))
    done: list[str] = []
    queue = WorkQueue(engine, MODELS, done.append, lease_s=6, holder="test")
    monitoring.share(queue)
    stop = threading.Event()
    worker = threading.Thread(target=queue.work, args=(stop,), daemon=True)
    worker.start()
    try:
        with transaction(engine) as s:  # a request received before the tick, not drained yet
            entry = IntakeEntry(kind="events", sha256="0" * 64, events=1, body=b"[]",
                                received_at=utcnow() - timedelta(seconds=1))  # fmt: skip
            s.add(entry)
        follow = IntakeFollow(engine, utcnow(), 5.0)

        def drained() -> None:  # the drain's batch: the model's window and the intake entry
            with transaction(engine) as s:
                mark_changed(s, "drift", [("b", "1", START, START + WINDOW)])
                s.execute(update(IntakeEntry).values(consumed_at=utcnow()))

        timer = threading.Timer(0.5, drained)
        timer.start()
        monitoring._evaluate(START + timedelta(days=1), follow)
        timer.join()
        assert done == ["b"]  # deferred and run within the tick, not the next one
        assert queue.depth() == []
        assert follow.passed() is True
    finally:
        stop.set()
        worker.join(10)
        queue.close()
        engine.dispose()


def _pending_request(engine: Engine, received_at: datetime) -> None:
    with transaction(engine) as s:
        s.execute(delete(IntakeEntry))
        s.add(IntakeEntry(kind="events", sha256="0" * 64, events=1, body=b"[]",
                          received_at=received_at))  # fmt: skip


def test_an_ended_window_is_due_once_its_last_events_left_the_intake(db: Engine) -> None:
    """Evaluated while a request received just after its end is still pending, the window
    would be evaluated on part of its events, then again once they re-mark it."""
    end = START + WINDOW
    _mark(db, "drift", "a")
    _mark(db, "outcome", "b")  # labels: not held by the events' intake
    args = (db, MODELS, EVALUATE_JOB, START + timedelta(days=1))
    assert due_models(*args, settled=end - timedelta(microseconds=1)) == ["b"]
    assert due_models(*args, settled=end) == MODELS  # exactly settled
    assert due_models(*args, settled=None) == MODELS  # nothing pending in the intake
    held = Change("a", "1", START, end, 1, changed_at=START)
    assert not held.due(end, timedelta(0), end - timedelta(microseconds=1))
    assert held.due(end, timedelta(0), end) and held.due(end, timedelta(0))
    # an open window keeps its own pacing, whatever the intake holds
    assert held.due(START, timedelta(0), START - WINDOW)


def test_the_intake_settles_windows_up_to_its_oldest_request_less_the_tick_offset(
    db: Engine,
) -> None:
    with transaction(db) as s:
        s.execute(delete(IntakeEntry))
    assert intake_settled(db, 2.0, 60.0) is None
    received = utcnow() - timedelta(seconds=1)
    _pending_request(db, received)
    assert intake_settled(db, 2.0, 60.0) == received - timedelta(seconds=2)
    # a drain behind by more than collect.http_max_lag holds no window longer than that
    _pending_request(db, utcnow() - timedelta(seconds=600))
    found = intake_settled(db, 2.0, 60.0)
    assert found is not None and utcnow() - found < timedelta(seconds=61)


def test_the_tick_holds_a_window_whose_last_request_is_still_in_the_intake(db: Engine) -> None:
    monitoring = Monitoring(db, _config(str(db.url)))  # tick offset 2 s, max lag 60 s
    end = utcnow().replace(microsecond=0) - timedelta(seconds=1)
    with transaction(db) as s:
        mark_changed(s, "drift", [("a", "1", end - WINDOW, end)])
    _pending_request(db, end + timedelta(seconds=1))  # received 1 s after the end: its events
    assert monitoring.due(utcnow()) == []
    assert monitoring._evaluate(utcnow()) == []
    assert monitoring.unit("a") == []  # a unit deferred earlier, run now, holds it too
    assert [c.end for c in pending_changes(db, "a", "drift")] == [end]  # still pending
    with transaction(db) as s:  # the drain's batch took it
        s.execute(update(IntakeEntry).values(consumed_at=utcnow()))
    assert monitoring.due(utcnow()) == ["a"]
    with transaction(db) as s:
        s.execute(delete(IntakeEntry))


def test_a_late_tick_follows_the_intake_up_to_its_time_on_the_grid_not_its_start(
    db: Engine,
) -> None:
    """A tick that starts late (the one before it overran) must not wait for the requests the
    drain's batch after the window's end could not read: it would give up at the bound and
    leave the window to the next tick (bench/fleet.py: a minute more of lag every other window)."""
    monitoring = Monitoring(db, _config(str(db.url)))  # tick offset 2 s
    ended = window_of(utcnow(), monitoring.windows.window_s)
    late = ended + timedelta(seconds=7)
    follow = monitoring._intake_follow(late)
    assert follow is not None and follow.boundary == ended + timedelta(seconds=2)
    _pending_request(db, ended + timedelta(seconds=2))  # after the grid time: the next batch's
    assert follow.passed() is True
    _pending_request(db, ended + timedelta(seconds=1))  # before it: the window's last events
    assert follow.passed() is False
    on_time = monitoring._intake_follow(ended + timedelta(seconds=1))
    assert on_time is not None and on_time.boundary == ended + timedelta(seconds=1)
    with transaction(db) as s:
        s.execute(delete(IntakeEntry))
