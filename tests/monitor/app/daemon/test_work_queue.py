"""The shared evaluation queue in process: its timings, one waiting unit per model, and a stop
that ends a tick's wait (with real replicas and faults: test_shared_evaluation.py)."""

from __future__ import annotations

import threading
import time

from sqlalchemy import Engine, text

from migrations import upgrade
from monitor.app.daemon._supervisor import SupervisedComponent
from monitor.app.daemon._work_queue import WORKER, Timings, Worker, WorkQueue
from monitor.failures import Backoff
from monitor.storage import make_engine
from tests.services.postgres import PostgresServer
from tests.waiting import wait_until


def test_timings_follow_the_lease() -> None:
    t = Timings.of(300)
    assert (t.heartbeat_s, t.stalled_s, t.wait_s) == (50, 150, 300)
    assert Timings.of(1).heartbeat_s == 0.5 and Timings.of(1).stalled_s == 1.0


def test_a_waiting_unit_is_deferred_once_and_stopping_ends_the_wait(
    postgres: PostgresServer,
) -> None:
    engine = make_engine(postgres.create_database())
    upgrade(engine)
    queue = WorkQueue(engine, ["a", "b"], lambda _model: None, lease_s=600, holder="test")
    worker = Worker(queue, SupervisedComponent("evaluation", queue.work))
    first = threading.Thread(target=queue.evaluate, daemon=True)
    try:
        first.start()  # no worker runs: it waits for its two units
        wait_until(lambda: len(queue.depth()) == 2, "two units waiting", 10)
        worker.stop(5)  # as `serve` stops: the tick gives up its wait
        first.join(10)
        assert not first.is_alive()
        assert queue.evaluate() == 0  # each model's unit waits already: none deferred again
        assert sorted(str(j.task_kwargs["model"]) for j in queue.depth()) == ["a", "b"]
    finally:
        queue.close()
        engine.dispose()


_HOLD_RUNNING_UNIT = text("SELECT 1 FROM procrastinate_jobs WHERE status = 'doing' FOR UPDATE")
_WAITING_WORKER = text(
    "SELECT pid FROM pg_stat_activity WHERE application_name = :name AND wait_event_type = 'Lock'"
)


def _fail_the_status_write(engine: Engine, held: threading.Event) -> None:
    """Hold the running unit's row until the worker waits on it to write the unit's status,
    then end that connection: the write fails as in an outage (its connections are checked
    before use, so a connection merely killed while idle would not do)."""
    with engine.begin() as connection:
        connection.execute(_HOLD_RUNNING_UNIT)
        held.set()
        name = {"name": f"modelwatch {WORKER}"}
        deadline = time.monotonic() + 10
        while not (pids := connection.execute(_WAITING_WORKER, name).scalars().all()):
            assert time.monotonic() < deadline, "the worker never wrote the unit's status"
            time.sleep(0.05)
        for pid in pids:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})


def test_a_unit_whose_status_cannot_be_written_is_evaluated_again(
    postgres: PostgresServer,
) -> None:
    """Left `doing` under a live worker, the unit would hold its model's lock for ever."""
    engine = make_engine(postgres.create_database())
    upgrade(engine)
    runs: list[str] = []
    failing: list[threading.Thread] = []

    def unit(model: str) -> None:
        runs.append(model)
        if len(runs) == 1:
            held = threading.Event()
            failing.append(threading.Thread(target=_fail_the_status_write, args=(engine, held)))
            failing[0].start()
            held.wait(10)

    # a long lease: the heartbeat (every 10 s) does not end the worker first
    queue = WorkQueue(engine, ["a"], unit, lease_s=60, holder="test")
    supervised = SupervisedComponent("evaluation", queue.work, backoff=Backoff(0.2, 1.0))
    worker = Worker(queue, supervised)
    try:
        worker.start()
        assert queue.evaluate(["a"]) == 1  # waits until the unit is done (not just doing)
        failing[0].join(10)
        assert runs == ["a", "a"]
        assert supervised.restarts == 1
        assert queue.depth() == []
        wait_until(lambda: worker.problem() is None, "the worker runs again", 10)
    finally:
        worker.stop(5)
        queue.close()
        engine.dispose()


def test_a_replica_runs_units_at_once_of_different_models(postgres: PostgresServer) -> None:
    """`scheduler.units_at_once` units run together: two units that each wait for the other
    finish only if both run at once."""
    engine = make_engine(postgres.create_database())
    upgrade(engine)
    both = threading.Barrier(2, timeout=10)
    met: list[str] = []

    def unit(model: str) -> None:
        both.wait()  # raises BrokenBarrierError after 10 s alone
        met.append(model)

    queue = WorkQueue(engine, ["a", "b"], unit, lease_s=60, holder="test", units_at_once=2)
    worker = Worker(queue, SupervisedComponent("evaluation", queue.work))
    try:
        worker.start()
        assert queue.evaluate(["a", "b"]) == 2
        assert sorted(met) == ["a", "b"]
    finally:
        worker.stop(5)
        queue.close()
        engine.dispose()
