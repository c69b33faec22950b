"""Evaluation shared across replicas: one unit per model on a procrastinate queue (PostgreSQL).

The replica that wins an `evaluate` tick's (job, window) claim is its producer: it defers one
unit per model with work due (`_due`: pending change markers, failed items due for retry; an
idle model gets none) and waits, up to the lease, for them to finish, so that the tick's
alert rules see their results. Every replica runs a worker (a supervised component) that takes
units, `scheduler.units_at_once` at a time. procrastinate (`SELECT ... FOR UPDATE SKIP LOCKED`
on its own tables) gives:

- a `lock` per model: no two units of a model run at once, on any replica;
- a `queueing_lock` per model: at most one unit of a model waits, however many ticks defer;
- worker heartbeats: a unit whose worker stopped beating for `stalled_s` (the replica died) is
  put back by any live worker (`take_over`), well within the lease.

A unit whose finished status procrastinate cannot write (the database went away just then)
would stay `doing` under this worker's live heartbeat, holding its model's lock for ever; the
worker ends instead (`_UnitWorker`), supervision starts a new one, and the unit, now of a
worker that is gone, is taken over.

A unit evaluates what changed since it was last evaluated and stores results with upserts, so a
unit done again after a takeover finds only what the dead replica had not committed.
SQLite keeps evaluation in the tick's process (`WindowEvaluator.run`); nothing here runs there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from procrastinate import App, PsycopgConnector, SyncPsycopgConnector
from procrastinate import worker as procrastinate_worker
from procrastinate.exceptions import AlreadyEnqueued, ProcrastinateException, UniqueViolation
from procrastinate.jobs import Job
from sqlalchemy.engine import Engine

from dashboards.metrics import ModelwatchMetrics
from monitor.app.daemon._supervisor import Component
from monitor.failures import redact

log = logging.getLogger(__name__)

QUEUE = "evaluate"
TASK = "modelwatch.evaluate_model"
# How often the producer looks whether its units are done.
POLL_S = 0.2
# How often an idle worker looks for units it was not told of. procrastinate wakes a worker when
# a unit is deferred, but clears that wake-up after each fetch: a unit deferred while the worker
# was fetching (another unit) waits for the next look. At the heartbeat (`lease_s / 6`, 50 s by
# default) such a unit sat idle for up to 50 s beside a free worker; a look costs one indexed
# query.
FETCH_POLL_S = 1.0
# Seconds to open a connection, and to wait for one from a pool (psycopg_pool).
CONNECT_TIMEOUT_S = 10
# A unit still running when its worker stops has this long to finish; else it is put back.
SHUTDOWN_GRACE_S = 2.0
# What the queue's connections say they are (`application_name`, "modelwatch <role>").
PRODUCER = "evaluation producer"
WORKER = "evaluation worker"

UnitFunc = Callable[[str], object]
More = Callable[[], Sequence[str] | None]
_NEWEST = "SELECT max(id) AS id FROM procrastinate_jobs WHERE queue_name = %(queue)s"
# procrastinate notifies workers of inserted units only; one put back is told the same way.
_CHANNEL = f"procrastinate_queue_v1#{QUEUE}"
_WAKE = "SELECT pg_notify(%(channel)s, json_build_object('type', 'job_inserted')::text)"
_PENDING = (
    "SELECT count(*) FILTER (WHERE status = 'todo') AS todo,"
    " count(*) FILTER (WHERE status = 'doing') AS doing,"
    " count(*) FILTER (WHERE id <= %(last)s) AS upto"
    " FROM procrastinate_jobs WHERE queue_name = %(queue)s AND status IN ('todo', 'doing')"
)


@dataclass(frozen=True)
class Timings:
    """The worker's heartbeat, when a silent worker's units are taken over, and how long the
    producer waits for its units: all derived from the scheduler's lease."""

    heartbeat_s: float
    stalled_s: float
    wait_s: float

    @classmethod
    def of(cls, lease_s: float) -> Timings:
        """A dead replica's unit is put back within `stalled_s + heartbeat_s` (2/3 of the
        lease): its heartbeat has been silent `stalled_s`, and a live worker looks each beat."""
        heartbeat = max(0.5, lease_s / 6)
        return cls(heartbeat_s=heartbeat, stalled_s=max(2 * heartbeat, lease_s / 2), wait_s=lease_s)


def conninfo(engine: Engine) -> str:
    """libpq's URL of the engine's PostgreSQL database (procrastinate speaks psycopg)."""
    return engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


def _sync(app: App) -> Any:
    """The app's synchronous connector (procrastinate's own queries run on it too)."""
    return app.connector.get_sync_connector()


def _quiet_procrastinate() -> None:
    """procrastinate logs each unit deferred, started and finished at INFO: 1,000 models would
    flood the log every tick (kept at DEBUG)."""
    if not log.isEnabledFor(logging.DEBUG):
        logging.getLogger("procrastinate").setLevel(logging.WARNING)


def _key(model: str) -> str:
    return f"evaluate:{model}"


class WorkQueue:
    """Defers, takes and takes over evaluation units (see the module's docstring).

    `unit(model)` evaluates one model's changed windows; it runs on the worker's thread and
    must not raise for a bad window (it isolates its items, see `monitor.failures`).
    """

    def __init__(
        self,
        engine: Engine,
        models: Sequence[str],
        unit: UnitFunc,
        lease_s: float,
        holder: str,
        metrics: ModelwatchMetrics | None = None,
        units_at_once: int = 2,
    ) -> None:
        self._conninfo = conninfo(engine)
        self._units_at_once = units_at_once  # `scheduler.units_at_once`
        self._models = list(models)
        self._unit = unit
        self.timings = Timings.of(lease_s)
        self._holder = holder
        self._metrics = metrics
        self._producer: App | None = None
        self._producer_lock = threading.Lock()
        # Set when the worker is asked to stop: a tick waiting for units gives up at once (no
        # worker here runs them any more, and the process must exit within its grace period).
        self._stopping = threading.Event()

    def _pool_args(self, role: str) -> dict[str, Any]:
        """psycopg_pool's arguments; `role` names the connections in `pg_stat_activity`."""
        return {
            "conninfo": self._conninfo,
            "min_size": 1,
            "max_size": 1 + self._units_at_once,
            "timeout": CONNECT_TIMEOUT_S,
            "kwargs": {
                "connect_timeout": CONNECT_TIMEOUT_S,
                "application_name": f"modelwatch {role}",
            },
        }

    def _app(self) -> App:
        """The producer's (synchronous) app, opened on first use; a broken connection is
        replaced by the pool on the next use."""
        with self._producer_lock:
            if self._producer is None:
                _quiet_procrastinate()
                app = App(connector=SyncPsycopgConnector(**self._pool_args(PRODUCER)))
                app.open()
                self._producer = app
            return self._producer

    # -- the producer ----------------------------------------------------------------------

    def evaluate(self, models: Sequence[str] | None = None, more: More | None = None) -> int:
        """Defer a unit per model of `models` (those with work due, `_due`; None: every
        configured model) and wait (up to the lease) until none of the units pending then is;
        how many units this tick deferred (a model whose unit waits already gets none).

        `more()`, asked at each poll while it returns a list, names models to defer now as
        well (those whose windows the intake drain has just written, `Monitoring`), then None
        once nothing more is to come; their units are waited for too."""
        app = self._app()
        deferred = self._defer(app, self._models if models is None else models)
        # Ours and those deferred before (a model's waiting unit, one still running): the
        # tick's rules then see every unit's results.
        deadline = time.monotonic() + self.timings.wait_s
        last = self._newest(app)
        while True:
            extra = more() if more is not None else None
            if extra is None:
                more = None
            elif extra:
                deferred += self._defer(app, extra)
                last = self._newest(app)
            if more is None and not self._pending(app, last):
                break
            if time.monotonic() >= deadline:
                log.warning("evaluation units still pending after %.0f s", self.timings.wait_s)
                break
            if self._stopping.wait(POLL_S):
                break
        return deferred

    def _defer(self, app: App, models: Sequence[str]) -> int:
        deferred = 0
        for model in models:
            task = app.configure_task(
                TASK, queue=QUEUE, lock=_key(model), queueing_lock=_key(model)
            )
            with contextlib.suppress(AlreadyEnqueued):  # it waits already: it will see ours
                task.defer(model=model)
                deferred += 1
        if self._metrics is not None:
            self._metrics.record_units_deferred(deferred)
        return deferred

    def _newest(self, app: App) -> int:
        """The id of the newest unit waiting or running (0: none)."""
        row = _sync(app).execute_query_one(_NEWEST, queue=QUEUE)
        return int(row["id"] or 0)

    def _pending(self, app: App, last: int) -> int:
        """How many units up to `last` wait or run (ids only grow; a unit put back keeps its
        id); the queue-depth gauge on the way. Two aggregates per poll: listing the units
        built ~1,000 job objects every 0.2 s (~10 ms of CPU) beside the evaluation."""
        row = _sync(app).execute_query_one(_PENDING, queue=QUEUE, last=last)
        if self._metrics is not None:
            self._metrics.set_queue_depth(int(row["todo"]), int(row["doing"]))
        return int(row["upto"])

    def depth(self, app: App | None = None) -> list[Job]:
        """The queue's units waiting or running (finished ones are deleted)."""
        return (app or self._app()).job_manager.list_jobs(queue=QUEUE)

    def stop_waiting(self) -> None:
        """A tick waiting for units returns at once, and later ones do not wait (stopping)."""
        self._stopping.set()

    def close(self) -> None:
        with self._producer_lock:
            if self._producer is not None:
                self._producer.close()
                self._producer = None

    # -- the worker ------------------------------------------------------------------------

    def work(self, stop: threading.Event) -> None:
        """Take units until `stop` (a supervised component's target); raises when the worker
        dies (the database went away), so that supervision restarts it after its backoff."""
        asyncio.run(self._work(stop))

    async def _work(self, stop: threading.Event) -> None:
        _quiet_procrastinate()
        app = App(connector=PsycopgConnector(**self._pool_args(WORKER)))
        app.task(name=TASK, queue=QUEUE)(self._run_unit)
        t = self.timings
        async with app.open_async():
            unit_worker = _UnitWorker(
                app,
                queues=[QUEUE],
                name=self._holder,
                # A unit waits on the database for about half its time: two at once ran ~25%
                # more units per second (docs/how-to/scale-out.md, "Sizing a fleet").
                concurrency=self._units_at_once,
                install_signal_handlers=False,  # the daemon owns SIGTERM
                delete_jobs="always",  # the queue holds only what is pending
                shutdown_graceful_timeout=SHUTDOWN_GRACE_S,
                update_heartbeat_interval=t.heartbeat_s,
                stalled_worker_timeout=t.stalled_s,
                fetch_job_polling_interval=min(t.heartbeat_s, FETCH_POLL_S),
                abort_job_polling_interval=t.heartbeat_s,
            )
            worker = asyncio.create_task(unit_worker.run())  # type: ignore[no-untyped-call]
            try:
                await self._watch(app, worker, stop, unit_worker)
            finally:
                worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await worker

    async def _watch(
        self,
        app: App,
        worker: asyncio.Task[None],
        stop: threading.Event,
        unit_worker: _UnitWorker,
    ) -> None:
        """Until `stop`: put back units of silent workers each heartbeat; raise if the worker
        ended unasked."""
        next_check = 0.0
        while not stop.is_set():
            if worker.done():
                worker.result()  # raises what killed it
                if unit_worker.unrecorded is not None:
                    raise RuntimeError(unit_worker.unrecorded)
                raise RuntimeError("the evaluation worker stopped")
            if time.monotonic() >= next_check:
                await self.take_over(app)
                next_check = time.monotonic() + self.timings.heartbeat_s
            await asyncio.wait({worker}, timeout=POLL_S)

    async def take_over(self, app: App) -> int:
        """Put back the units of workers silent for `stalled_s` (their replica died); how many.

        A model whose next unit already waits would break procrastinate's queueing lock: that
        waiting unit is cancelled first (the stalled one evaluates the same changed windows).
        """
        manager = app.job_manager
        retried = 0
        try:
            stalled = await manager.get_stalled_jobs(
                queue=QUEUE, seconds_since_heartbeat=self.timings.stalled_s
            )
            for job in stalled:
                retried += await self._retry(app, job)
            # forget dead workers (their units were just put back), as a starting worker does
            await manager.prune_stalled_workers(self.timings.stalled_s)
            if retried:  # wake idle workers now, not at their next poll (up to a heartbeat)
                await app.connector.execute_query_async(_WAKE, channel=_CHANNEL)
        except ProcrastinateException as exc:  # the database is away: the next beat retries
            log.warning("cannot take over stalled evaluation units: %s", redact(exc))
        if retried and self._metrics is not None:
            self._metrics.record_units_retried(retried)
        return retried

    async def _retry(self, app: App, job: Job) -> int:
        manager = app.job_manager
        assert job.id is not None
        try:
            await manager.retry_job(job)
        except UniqueViolation:
            waiting = await manager.list_jobs_async(
                queue=QUEUE, status="todo", queueing_lock=job.queueing_lock
            )
            for other in waiting:
                assert other.id is not None
                await manager.cancel_job_by_id_async(other.id, delete_job=True)
            await manager.retry_job(job)
        except ProcrastinateException:  # another replica put it back first
            return 0
        log.info("took over evaluation unit %s (%s)", job.id, job.task_kwargs.get("model"))
        return 1

    def _run_unit(self, model: str) -> None:
        if model not in self._models:  # deferred before a restart that removed the model
            log.info("evaluation unit of model %s skipped: not configured", model)
            return
        try:
            self._unit(model)
        except Exception:  # a unit isolates its items; this is a bug, counted and logged
            log.exception("evaluation unit of model %s failed", model)
            if self._metrics is not None:
                self._metrics.record_unit(model, "failed")
            raise
        if self._metrics is not None:
            self._metrics.record_unit(model, "done")


class _UnitWorker(procrastinate_worker.Worker):
    """procrastinate's worker, which stops when it cannot write a finished unit's status.

    procrastinate logs that error and goes on taking units, leaving the unit `doing` under this
    worker's live heartbeat: its model's lock would never be freed (no worker takes a unit of a
    locked model) and the model never evaluated again. Stopping unregisters this worker (or,
    with the database still away, lets its heartbeat go stale), so any live worker's
    `take_over` puts the unit back; `WorkQueue._watch` then raises, for supervision to restart.
    procrastinate has no public hook after a job's status is written: this wraps the private
    `_persist_job_status` (the pin `procrastinate~=3.10.0` holds its shape; test_work_queue.py
    breaks if it changes).
    """

    unrecorded: str | None = None

    async def _persist_job_status(self, *args: Any, **kwargs: Any) -> None:
        try:
            await super()._persist_job_status(*args, **kwargs)
        except Exception as exc:
            job = kwargs.get("job", args[0] if args else None)
            model = job.task_kwargs.get("model") if isinstance(job, Job) else None
            self.unrecorded = (
                f"the status of the evaluation unit of model {model} could not be written"
                f" ({redact(exc)}); the worker restarts and the unit is taken over"
            )
            log.warning("%s", self.unrecorded)
            self.stop()  # type: ignore[no-untyped-call]


class Worker(Component):
    """This replica's worker of the queue, supervised (`queue.work` under `supervised`);
    stopping it also ends a tick's wait for units, which no worker here would run any more."""

    def __init__(
        self,
        queue: WorkQueue,
        supervised: Component,
        grace: Callable[[float], None] | None = None,
    ) -> None:
        """`grace(timeout)` is told the time a stop has, before stopping (a worker process's
        own stop is given part of it)."""
        self.name = supervised.name
        self._queue = queue
        self._supervised = supervised
        self._grace = grace

    def start(self) -> None:
        self._supervised.start()

    def stop(self, timeout: float) -> None:
        self._queue.stop_waiting()
        if self._grace is not None:
            self._grace(timeout)
        self._supervised.stop(timeout)

    def running(self) -> bool:
        return self._supervised.running()

    def problem(self) -> str | None:
        return self._supervised.problem()
