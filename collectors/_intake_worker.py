"""The intake drain in its own process, so aggregating never holds the API process's GIL.

In one process the drain's CPU work (decode, validate, profile) and the event loop answering
`POST /v1/events` take turns on one interpreter lock, which halves the rate requests are
acknowledged at. `modelwatch serve` runs the drain in a spawned worker instead; the worker exits
when its parent dies (kill -9), and its unfinished batch rolls back (exactly once either way).

`DrainProcess.run` is a supervisor's target: it starts one worker and watches it. A worker that
exits unasked (SIGKILL, the OOM killer, a crash) makes `run` raise `DrainDied`; the daemon's
supervisor counts the restart and calls `run` again after a backoff. The dead worker's open
transaction rolled back with it, so the new worker reads the same pending rows of the intake log
(the durable queue) and aggregates them once.

The parent wakes the worker's drain through a pipe whenever a request is appended (a byte
written without blocking: a full pipe already holds a wake-up), so an idle drain begins at
once rather than at its next poll of the log.

The parent alone decides when the worker stops. The worker ignores SIGTERM and SIGINT, which a
service manager or a terminal sends to the whole process group at once, and its stop flag is a
plain shared byte it polls: a `multiprocessing.Event` would make the parent's `set()` wait for
a waiter that a signal already killed, and `serve` would never exit.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine

from collectors._ingest import Ingestor
from collectors._intake_drain import Drain
from collectors._profiling import default_backend
from monitor.common.childlog import ChildLog, LogRelay, RelayHandler
from monitor.common.children import become_worker, tune_gc
from monitor.config import Config
from monitor.storage import make_engine

# The HTTP source's ingestor of one adapter (collectors._http_intake.make_ingestor, passed in by
# reference: the spawned worker re-imports it by name, and this module needs no import of
# http_intake, which imports it).
IngestorFactory = Callable[[Engine, Config, str], Ingestor]

_ERROR_BYTES = 400
# The worker's CPU priority against the API process (Unix nice increment). Not below it: what
# counts is the rate events are aggregated at. At +5 the drain got a third of the API's share of
# a busy host and fell ever further behind what was acknowledged (issue 40: 24% of the insert
# floor counted while 65% was acknowledged); `collect.http_max_lag` and /readyz watch the gap.
DRAIN_NICE = 0
# The worker's cyclic-GC gen-0 threshold (CPython's default: 700 allocations). A 5,000-event
# batch allocates ~15,000 containers (each event's dicts), so at the default the collector ran
# ~20 times per batch, and its older generations walked the whole heap: ~20% of the drain's CPU
# (issue 40). Decoded events hold no cycles; what a batch leaves behind is collected at this
# rate, a few MB at most.
GC_THRESHOLD = 10_000
# How long a stopping worker goes on aggregating what is pending (within serve's grace period).
FLUSH_S = 2.0
# How often the worker looks at its stop flag, and the parent at the worker.
POLL_S = 0.2
WATCH_S = 0.2
PROCESS_NAME = "mw-drain"


class DrainDied(RuntimeError):
    """The drain's worker process exited without being asked to (killed, crashed)."""


def _main(log: ChildLog, *args: Any) -> None:
    """The worker: `_drain_until_stopped`, its records (and a crash's traceback) going through
    the parent's logging."""
    with log.relayed() as relayed:
        _drain_until_stopped(relayed, *args)


def _drain_until_stopped(
    relayed: RelayHandler,
    factory: IngestorFactory,
    url: str,
    config: Config,
    replica: str,
    stop: Any,
    error: Any,
    parent: int,
    wakes: Any,
) -> None:
    become_worker(parent, PROCESS_NAME)  # the parent stops us (module docstring)
    default_backend().warm_up()
    tune_gc(GC_THRESHOLD)
    if DRAIN_NICE:
        with contextlib.suppress(OSError):
            os.nice(DRAIN_NICE)  # the drain's thread, started below, inherits it

    engine = make_engine(url)
    ingestors: dict[str, Ingestor] = {}

    def ingestor_for(adapter: str) -> Ingestor:
        if adapter not in ingestors:
            ingestors[adapter] = factory(engine, config, adapter)
        return ingestors[adapter]

    drain = Drain(
        engine,
        ingestor_for,
        replica,
        config.collect.batch_size,
        max_delay_s=config.collect.drain_max_delay.total_seconds(),
        window_s=config.collect.window.total_seconds(),
        offset_s=config.scheduler.offset_s(config.scheduler.evaluate_interval_s),
    )
    threading.Thread(target=_wake_on, args=(wakes, drain), daemon=True).start()
    drain.start()
    while not stop.value:
        if not drain.running():  # its thread died: exit, and the parent starts another worker
            relayed.close()  # os._exit skips logging's shutdown, which would send what is queued
            os._exit(1)
        error.value = (drain.last_error or "").encode()[:_ERROR_BYTES]
        time.sleep(POLL_S)
    drain.stop(FLUSH_S)


def _wake_on(wakes: Any, drain: Drain) -> None:
    """Wake the drain whenever the parent appended a request (else it polls every
    `interval_s`: a request on an idle drain waited up to that long before its batch began)."""
    while True:
        try:
            if not os.read(wakes.fileno(), 4096):
                return  # the parent closed its end
        except OSError:
            return
        drain.wake()


class DrainProcess:
    """The drain in spawned worker processes, one per `run` (a supervisor's target)."""

    def __init__(self, url: str, config: Config, replica: str, factory: IngestorFactory) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        self._args = (factory, url, config, replica)
        # Plain shared memory, no lock: a worker killed while writing must not leave a lock
        # held that the API's /readyz would then wait on (a torn read is only a garbled text).
        self._error: Any = self._ctx.RawArray("c", _ERROR_BYTES + 1)
        self._process: Any = None
        # The write end of the running worker's wake pipe (non-blocking: a full pipe already
        # holds a wake-up, and no request ever waits on a stuck worker).
        self._waker: Any = None
        self._waker_lock = threading.Lock()
        # How long a stopping worker may flush before it is killed (set by the daemon's grace).
        self.grace_s = FLUSH_S + 1.0

    def run(self, stop: threading.Event) -> None:
        """Run one worker until `stop` is set, then stop it (flush for up to `grace_s`, then
        kill; its open batch rolls back). DrainDied when it exits unasked. The worker's log
        records go through this process's logging while it runs (`monitor.common.childlog`)."""
        with LogRelay(self._ctx) as relay:
            self._run(stop, relay)

    def _run(self, stop: threading.Event, relay: LogRelay) -> None:
        flag: Any = self._ctx.RawValue("b", 0)  # no lock, no condition: module docstring
        self._error.value = b""
        wakes, waker = self._ctx.Pipe(duplex=False)
        os.set_blocking(waker.fileno(), False)
        args = (relay.child, *self._args, flag, self._error, os.getpid(), wakes)
        process = self._ctx.Process(target=_main, args=args, name="intake-drain", daemon=True)
        process.start()
        wakes.close()
        relay.child_started()
        self._process = process
        with self._waker_lock:
            self._waker = waker
        try:
            while not stop.wait(WATCH_S):
                if not process.is_alive():
                    raise DrainDied(
                        f"intake drain process {process.pid} exited (code {process.exitcode})"
                    )
        finally:
            with self._waker_lock:
                self._waker = None
                waker.close()
            flag.value = 1
            process.join(self.grace_s)
            if process.is_alive():  # it ignores SIGTERM; its open batch rolls back
                process.kill()
                process.join(self.grace_s)

    def running(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def wake(self) -> None:
        """Tell the worker a request was appended (it aggregates at once when idle)."""
        with self._waker_lock:
            if self._waker is not None:
                with contextlib.suppress(OSError):  # full (a wake-up is pending) or closed
                    os.write(self._waker.fileno(), b"\0")

    @property
    def last_error(self) -> str | None:
        text = bytes(self._error.value).decode("utf-8", "replace")
        return text or None
