"""Evaluation units in a worker process of their own, so they never share the API's GIL.

In one process a replica's units (read profiles, score windows, write results: CPU-bound Python
for ~80% of their time) and the event loop answering `POST /v1/events` take turns on one
interpreter lock. At 500 one-event requests a second on two cores the units of 1,000 models
took ~45 s instead of ~20 s and every window was evaluated late (issue 40). `modelwatch serve`
on PostgreSQL therefore runs its queue worker (`_work_queue.WorkQueue.work`) in a spawned
process, as it runs the intake drain (`collectors._intake_worker`); the tick's producer side
(deferring units, waiting for them) stays in the API's process.

`UnitProcess.run` is a supervisor's target: it starts one worker and watches it. A worker that
exits unasked (SIGKILL, the OOM killer, the database gone) makes `run` raise `UnitsDied`; the
supervisor counts the restart and calls `run` again after its backoff. A unit the dead worker
was running is put back by a live worker once its heartbeat is stale (`WorkQueue.take_over`),
as for a dead replica. The worker exits when its parent dies (kill -9), ignores SIGTERM and
SIGINT (the parent alone stops it: a service manager signals the whole process group), and
calls itself `mw-units` (Linux: `ps`, `top`).

What the worker records goes to the parent's `/metrics`: its metrics object sends each update
of the families a unit touches (`RELAYED`) through a pipe, as one JSON frame, to a thread of the
parent that applies it to the replica's registry. The worker never waits on the parent (a
bounded queue; updates past it are dropped and counted in the worker's log) and the parent never
waits on the worker (the pipe's end ends the reader). Its log records go through the parent's
logging (`monitor.common.childlog`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import multiprocessing
import os
import queue
import threading
import time
from typing import Any

from prometheus_client import CollectorRegistry

from dashboards.metrics import ModelwatchMetrics
from monitor.app.daemon._evaluation import Units
from monitor.app.daemon._work_queue import WorkQueue
from monitor.common.childlog import ChildLog, LogRelay
from monitor.common.children import become_worker, tune_gc
from monitor.config import Config
from monitor.failures import redact
from monitor.storage import make_engine

log = logging.getLogger(__name__)

# The metric updates a unit makes, relayed to the parent's registry (method names of
# `ModelwatchMetrics`); the worker's other metrics stay in its own, unread registry.
RELAYED = frozenset(
    {"observe_window_evaluation", "record_job_failure", "record_unit", "record_units_retried"}
)
# Updates the worker holds for its sender thread before it drops new ones.
CAPACITY = 10_000
# How long a stopping worker's units may run on (procrastinate's grace is 2 s) before the
# worker is killed (its open transactions roll back; the unit is taken over).
GRACE_S = 4.0
# How often the worker looks at its stop flag, and the parent at the worker.
POLL_S = 0.2
PROCESS_NAME = "mw-units"
# The worker's cyclic-GC gen-0 threshold: a unit decodes profiles and results into many small
# containers, none of them in cycles, while the decoded baselines it keeps (hundreds of MB at
# 1,000 models) are walked by every older collection (as the drain's, `collectors._intake_worker`).
GC_THRESHOLD = 10_000


class UnitsDied(RuntimeError):
    """The evaluation worker's process exited without being asked to (killed, crashed)."""


class RelayedMetrics(ModelwatchMetrics):
    """The worker's metrics: the `RELAYED` updates go to the parent (`UnitProcess`)."""

    def __init__(self, config: Config, writer: Any) -> None:
        super().__init__(CollectorRegistry(), config.models)
        self._writer = writer
        self._updates: queue.Queue[bytes | None] = queue.Queue(CAPACITY)
        self.dropped = 0
        self._sender = threading.Thread(target=self._send, name="metrics-relay", daemon=True)
        self._sender.start()

    def _put(self, name: str, *args: Any) -> None:
        try:
            self._updates.put_nowait(json.dumps([name, *args]).encode())
        except queue.Full:
            self.dropped += 1

    def _send(self) -> None:
        while (frame := self._updates.get()) is not None:
            try:
                self._writer.send_bytes(frame)
            except OSError:  # the parent is gone: nobody reads any more
                return

    def close(self, timeout: float = 1.0) -> None:
        """Send what is queued (for up to `timeout`), then stop the sender."""
        with contextlib.suppress(queue.Full):
            self._updates.put(None, timeout=timeout)
        self._sender.join(timeout)
        if self.dropped:
            log.warning("%d metric updates of evaluation units were dropped", self.dropped)

    def observe_window_evaluation(self, model: str, seconds: float) -> None:
        self._put("observe_window_evaluation", model, seconds)

    def record_job_failure(self, job: str) -> None:
        self._put("record_job_failure", job)

    def record_unit(self, model: str, outcome: str) -> None:
        self._put("record_unit", model, outcome)

    def record_units_retried(self, count: int) -> None:
        self._put("record_units_retried", count)


def apply_updates(reader: Any, metrics: ModelwatchMetrics | None) -> None:
    """The parent's side: apply each update the worker sends until its end of the pipe closes
    (a frame torn by a killed worker ends the same way). A frame that is not a known update is
    skipped, never applied."""
    while True:
        try:
            frame = reader.recv_bytes()
        except (EOFError, OSError):
            return
        if metrics is None:
            continue
        try:
            name, *args = json.loads(frame)
            if name in RELAYED:
                getattr(metrics, name)(*args)
        except (ValueError, TypeError) as exc:
            log.warning("skipped a garbled metric update of the evaluation worker: %s", exc)


def _main(log_: ChildLog, *args: Any) -> None:
    with log_.relayed():
        _work_until_stopped(*args)


def _work_until_stopped(
    url: str, config: Config, holder: str, stop: Any, parent: int, writer: Any
) -> None:
    become_worker(parent, PROCESS_NAME)  # the parent stops us (module docstring)
    engine = make_engine(url)
    metrics = RelayedMetrics(config, writer)
    sched = config.scheduler
    names = [m.name for m in config.models]
    evaluate = Units(engine, config, metrics)
    units = WorkQueue(engine, names, evaluate, sched.lease_s, holder, metrics, sched.units_at_once)
    tune_gc(GC_THRESHOLD)
    threading.Thread(target=_warm, args=(evaluate,), name="warm-up", daemon=True).start()
    asked = threading.Event()

    def watch_flag() -> None:
        while not stop.value:
            asked.wait(POLL_S)
        asked.set()

    threading.Thread(target=watch_flag, name="stop-flag", daemon=True).start()
    try:
        units.work(asked)
    finally:
        asked.set()
        metrics.close()
        engine.dispose()


def _warm(evaluate: Units) -> None:
    """Decode the fleet's baselines while the worker starts (`WindowEvaluator.warm`): else the
    first windows after a start decoded them all at once, ~1,000 in one tick at 1,000 models.
    Then the collector never walks them again (`gc.freeze`: a decoded baseline lives as long
    as the cache keeps it, and holds no reference cycles)."""
    started = time.monotonic()
    try:
        decoded = evaluate.windows.warm()
    except Exception as exc:  # the database away: units decode on demand, as without this
        log.warning("evaluation worker: baselines not decoded ahead: %s", redact(exc))
        return
    gc.freeze()
    log.info(
        "evaluation worker: %d baselines decoded in %.1f s", decoded, time.monotonic() - started
    )


class UnitProcess:
    """This replica's queue worker in spawned processes, one per `run` (a supervisor's target)."""

    def __init__(self, url: str, config: Config, holder: str, metrics: ModelwatchMetrics | None):
        self._ctx = multiprocessing.get_context("spawn")
        self._args = (url, config, holder)
        self._metrics = metrics
        self._process: Any = None
        self.grace_s = GRACE_S

    def run(self, stop: threading.Event) -> None:
        """Run one worker until `stop` is set, then stop it (its units get `grace_s` to end,
        then it is killed). UnitsDied when it exits unasked."""
        with LogRelay(self._ctx) as relay:
            self._run(stop, relay)

    def _run(self, stop: threading.Event, relay: LogRelay) -> None:
        flag: Any = self._ctx.RawValue("b", 0)  # no lock: a killed child must not hold one
        reader, writer = self._ctx.Pipe(duplex=False)
        args = (relay.child, *self._args, flag, os.getpid(), writer)
        process = self._ctx.Process(target=_main, args=args, name="evaluation", daemon=True)
        process.start()
        writer.close()  # the child's exit now ends the reader
        relay.child_started()
        applier = threading.Thread(
            target=apply_updates, args=(reader, self._metrics), name="unit-metrics", daemon=True
        )
        applier.start()
        self._process = process
        try:
            while not stop.wait(POLL_S):
                if not process.is_alive():
                    raise UnitsDied(
                        f"evaluation worker process {process.pid} exited (code {process.exitcode})"
                    )
        finally:
            flag.value = 1
            process.join(self.grace_s)
            if process.is_alive():  # it ignores SIGTERM; its open transactions roll back
                process.kill()
                process.join(self.grace_s)
            applier.join(POLL_S * 5)
            reader.close()

    def set_grace(self, timeout: float) -> None:
        """A stop within `timeout`: the worker gets part of it to end its units, and as much
        again to die once killed."""
        self.grace_s = min(GRACE_S, 0.4 * timeout)

    def running(self) -> bool:
        return self._process is not None and self._process.is_alive()
