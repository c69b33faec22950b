"""Scheduled jobs run once per (job, window) across replicas, and survive a dead replica."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.engine import Engine

from monitor.app.daemon._leases import claim, finish
from monitor.app.daemon._scheduler import JobSpec, Scheduler, window_start
from monitor.storage import JobRun, session_factory
from tests.waiting import wait_until

T0 = datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC)


def _replicas(engine: Engine, calls: list[tuple[str, datetime]]) -> list[Scheduler]:
    out = []
    for name in ("a", "b"):
        sched = Scheduler(engine, holder=name, lease_s=60)
        sched.add(JobSpec("evaluate", lambda w, n=name: calls.append((n, w)), interval_s=10))
        out.append(sched)
    return out


def test_each_window_runs_once_across_two_replicas(engine: Engine) -> None:
    calls: list[tuple[str, datetime]] = []
    a, b = _replicas(engine, calls)
    ticks = [T0 + timedelta(seconds=5 * i) for i in range(6)]  # ~2 ticks per 10 s window
    for now in ticks:
        a.tick("evaluate", now)
        b.tick("evaluate", now)
    windows = [w for _, w in calls]
    assert windows == sorted({window_start(t, 10) for t in ticks})


def test_surviving_replica_takes_over_when_the_other_stops(engine: Engine) -> None:
    calls: list[tuple[str, datetime]] = []
    a, b = _replicas(engine, calls)
    assert a.tick("evaluate", T0)
    # replica a is gone from here on; b keeps every later window
    for i in range(1, 4):
        assert b.tick("evaluate", T0 + timedelta(seconds=10 * i))
    assert [n for n, _ in calls] == ["a", "b", "b", "b"]


def test_dead_holder_is_taken_over_after_lease(engine: Engine) -> None:
    run = claim(engine, "evaluate", "w1", "a", lease_s=60, now=T0)
    assert run is not None
    assert claim(engine, "evaluate", "w1", "b", lease_s=60, now=T0 + timedelta(seconds=30)) is None
    later = claim(engine, "evaluate", "w1", "b", lease_s=60, now=T0 + timedelta(seconds=61))
    assert later is not None and later.takeover
    # the original holder can no longer steal it back before the new lease expires
    assert claim(engine, "evaluate", "w1", "a", lease_s=60, now=T0 + timedelta(seconds=62)) is None


def test_finished_run_is_not_repeated_but_failed_run_is_retried(engine: Engine) -> None:
    done = claim(engine, "j", "w", "a", lease_s=60, now=T0)
    assert done is not None
    finish(engine, done)
    assert claim(engine, "j", "w", "b", lease_s=60, now=T0 + timedelta(hours=1)) is None
    failed = claim(engine, "j", "w2", "a", lease_s=60, now=T0)
    assert failed is not None
    finish(engine, failed, error="boom")
    retry = claim(engine, "j", "w2", "b", lease_s=60, now=T0 + timedelta(seconds=1))
    assert retry is not None
    with session_factory(engine)() as s:
        row = s.scalars(select(JobRun).where(JobRun.window_key == "w2")).one()
    assert row.holder == "b" and row.status == "running" and row.error is None


def test_failing_job_is_recorded_and_does_not_raise(engine: Engine) -> None:
    sched = Scheduler(engine, holder="a", lease_s=60)

    def broken(_: datetime) -> None:
        raise RuntimeError("window store unavailable")

    sched.add(JobSpec("broken", broken, interval_s=60))
    assert sched.tick("broken", T0)
    with session_factory(engine)() as s:
        row = s.scalars(select(JobRun)).one()
    assert row.status == "failed"
    assert row.error == "RuntimeError: window store unavailable"


def test_window_start_is_aligned() -> None:
    assert window_start(T0, 60) == datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert window_start(T0, 3600) == datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_scheduler_tick_takes_over_only_after_the_lease_by_its_clock(engine: Engine) -> None:
    """The injected clock decides the lease too, not only the window (no sleeping in tests)."""
    calls: list[datetime] = []
    b = Scheduler(engine, holder="b", lease_s=60)
    b.add(JobSpec("evaluate", calls.append, interval_s=3600))
    window = window_start(T0, 3600)
    assert claim(engine, "evaluate", window.isoformat(), "a", lease_s=60, now=T0) is not None
    assert not b.tick("evaluate", T0 + timedelta(seconds=30))  # a's lease still holds
    assert b.tick("evaluate", T0 + timedelta(seconds=61))  # a died: b takes the window over
    assert calls == [window]


def test_ticks_run_on_the_interval_grid_shifted_by_the_offset(engine: Engine) -> None:
    sched = Scheduler(engine, holder="a", lease_s=60, tick_offset_s=2.0)
    sched.add(JobSpec("evaluate", lambda _now: None, 10.0))
    sched.add(JobSpec("fast", lambda _now: None, 1.0))
    at = datetime(2026, 12, 5, 16, 0, 7, 600000, tzinfo=UTC)

    def next_after(name: str) -> datetime:
        trigger = sched._scheduler.get_job(name).trigger
        return trigger.get_next_fire_time(None, at)  # type: ignore[no-any-return]

    # just after the next 10 s boundary (a window's end), not 10 s after the process started
    assert next_after("evaluate") == datetime(2026, 12, 5, 16, 0, 12, tzinfo=UTC)
    # the offset is at most half the interval
    assert next_after("fast") == datetime(2026, 12, 5, 16, 0, 8, 500000, tzinfo=UTC)


@pytest.mark.slow
def test_ticks_after_the_first_stay_on_the_grid(sqlite_engine: Engine) -> None:
    """The run at start is wherever the process began; the runs after it are on the grid (an
    interval job told to run at once had counted its later runs from that moment)."""
    runs: list[datetime] = []
    time.sleep((1.6 - time.time() % 1) % 1)
    sched = Scheduler(sqlite_engine, holder="a", lease_s=60, tick_offset_s=0.25)
    sched.add(JobSpec("often", lambda _window: runs.append(datetime.now(UTC)), 1.0))
    sched.start()  # at ~.6 s past a second: the grid's runs come at .25
    try:
        wait_until(lambda: len(runs) >= 3, "three runs", timeout=10)
    finally:
        sched.shutdown(5)
    assert abs(runs[0].microsecond / 1e6 - 0.6) < 0.2  # at start
    for run in runs[1:3]:
        assert abs(run.microsecond / 1e6 - 0.25) < 0.15, runs


def test_the_next_time_on_the_grid_is_strictly_after() -> None:
    sched = Scheduler(create_engine("sqlite://"), holder="a", lease_s=60, tick_offset_s=2.0)
    spec = JobSpec("evaluate", lambda _now: None, 60.0)
    at = datetime(2026, 12, 5, 16, 0, 2, tzinfo=UTC)  # on the grid: the next one
    assert sched.next_time(spec, at) == datetime(2026, 12, 5, 16, 1, 2, tzinfo=UTC)
    assert sched.next_time(spec, at - timedelta(microseconds=1)) == at


@pytest.mark.slow
def test_a_run_past_its_next_time_runs_again_at_once_not_an_interval_later(
    sqlite_engine: Engine,
) -> None:
    """APScheduler skips a time that comes while the job still runs: the tick runs once more
    when it ends (for the window it is then in), instead of leaving it to the time after."""
    runs: list[float] = []

    def slow_first(_window: datetime) -> None:
        runs.append(time.monotonic())
        if len(runs) == 1:
            time.sleep(1.3)  # past the next time on a 1 s grid

    sched = Scheduler(sqlite_engine, holder="a", lease_s=60)
    sched.add(JobSpec("often", slow_first, 1.0))
    began = time.monotonic()
    assert sched.tick("often")
    assert len(runs) == 2  # the skipped time's run, at once after the first
    assert runs[1] - runs[0] < 1.5 and time.monotonic() - began < 2.0


def test_a_scheduled_run_never_overlaps_another_of_the_same_job(sqlite_engine: Engine) -> None:
    """The run at start and the interval's first are two APScheduler jobs: the second, coming
    in the next window while the first still runs (a slow start on a loaded machine), must not
    run the job beside it; the first goes on to the window it missed, once it is done."""
    started, release = threading.Event(), threading.Event()
    runs: list[datetime] = []

    def slow(window: datetime) -> None:
        runs.append(window)
        if len(runs) == 1:
            started.set()
            release.wait(30)

    sched = Scheduler(sqlite_engine, holder="a", lease_s=60)
    sched.add(JobSpec("evaluate", slow, interval_s=1.0))
    first = threading.Thread(target=sched.tick, args=("evaluate",))
    first.start()
    assert started.wait(30)
    time.sleep(1.1)  # the next window has begun: its claim would succeed
    assert sched.tick("evaluate") is False  # at once: it neither runs nor waits
    assert len(runs) == 1
    release.set()
    first.join(30)
    assert len(runs) >= 2 and len(set(runs)) == len(runs)  # the missed window, once
