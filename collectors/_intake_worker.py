"""The intake drain in its own process, so aggregating never holds the API process's GIL.

In one process the drain's CPU work (decode, validate, profile) and the event loop answering
`POST /v1/events` take turns on one interpreter lock, which halves the rate requests are
acknowledged at. `modelwatch serve` runs the drain in a spawned worker instead; the worker exits
when its parent dies (kill -9), and its unfinished batch rolls back (exactly once either way).

The parent alone decides when the worker stops. The worker ignores SIGTERM and SIGINT, which a
service manager or a terminal sends to the whole process group at once, and its stop flag is a
plain shared byte it polls: a `multiprocessing.Event` would make the parent's `set()` wait for
a waiter that a signal already killed, and `serve` would never exit.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine

from collectors._ingest import Ingestor
from collectors._intake_drain import Drain
from collectors._profiling import default_backend
from monitor.config import Config
from monitor.storage import make_engine

# The HTTP source's ingestor of one adapter (collectors._http_intake.make_ingestor, passed in by
# reference: the spawned worker re-imports it by name, and this module needs no import of
# http_intake, which imports it).
IngestorFactory = Callable[[Engine, Config, str], Ingestor]

_ERROR_BYTES = 400
# The worker's CPU priority below the API process (Unix nice increment): when both want the CPU,
# acknowledging requests goes first and aggregating catches up (the backlog bound caps the gap).
DRAIN_NICE = 5
# How long a stopping worker goes on aggregating what is pending (within serve's grace period).
FLUSH_S = 2.0
# How often the worker looks at its stop flag.
POLL_S = 0.2


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(1)


def _main(
    factory: IngestorFactory,
    url: str,
    config: Config,
    replica: str,
    stop: Any,
    error: Any,
    parent: int,
) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):  # the parent stops us (module docstring)
        signal.signal(sig, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    default_backend().warm_up()  # start up at full priority; then yield to the API
    with contextlib.suppress(OSError):
        os.nice(DRAIN_NICE)  # the drain's thread, started below, inherits it

    engine = make_engine(url)
    ingestors: dict[str, Ingestor] = {}

    def ingestor_for(adapter: str) -> Ingestor:
        if adapter not in ingestors:
            ingestors[adapter] = factory(engine, config, adapter)
        return ingestors[adapter]

    drain = Drain(engine, ingestor_for, replica, config.collect.batch_size)
    drain.start()
    while not stop.value:
        error.value = (drain.last_error or "").encode()[:_ERROR_BYTES]
        time.sleep(POLL_S)
    drain.stop(FLUSH_S)


class DrainProcess:
    """Runs the drain in a spawned process; same start/stop/running/last_error as `Drain`."""

    def __init__(self, url: str, config: Config, replica: str, factory: IngestorFactory) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._stop: Any = ctx.RawValue("b", 0)  # no lock, no condition: see the module docstring
        self._error: Any = ctx.Array("c", _ERROR_BYTES + 1)
        args = (factory, url, config, replica, self._stop, self._error, os.getpid())
        self._process = ctx.Process(target=_main, args=args, name="intake-drain", daemon=True)
        self.started = False

    def start(self) -> None:
        if not self.started:
            self.started = True
            self._process.start()

    def stop(self, timeout: float) -> None:
        self._stop.value = 1
        if self.started:
            self._process.join(timeout)
            if self._process.is_alive():  # it ignores SIGTERM; its open batch rolls back
                self._process.kill()
                self._process.join(timeout)

    def running(self) -> bool:
        return self.started and self._process.is_alive()

    @property
    def last_error(self) -> str | None:
        text = bytes(self._error.value).decode("utf-8", "replace")
        return text or None

    def wake(self) -> None:
        """The worker polls the log; nothing to signal across processes."""
