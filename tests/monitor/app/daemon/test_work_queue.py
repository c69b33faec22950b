"""The shared evaluation queue in process: its timings, one waiting unit per model, and a stop
that ends a tick's wait (with real replicas and faults: test_shared_evaluation.py)."""

from __future__ import annotations

import threading

from migrations import upgrade
from monitor.app.daemon._supervisor import SupervisedComponent
from monitor.app.daemon._work_queue import Timings, Worker, WorkQueue
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
