"""`modelwatch serve`: scheduler, components and HTTP API in one process, stopped gracefully."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import uvicorn
from prometheus_client import CollectorRegistry
from sqlalchemy.engine import Engine

from collectors import HttpIntake
from migrations import prepare_for_writes
from monitor.config import Config
from monitor.daemon._app import create_app
from monitor.daemon._common import DaemonState
from monitor.daemon._http import server_config
from monitor.daemon._retention import retention_job
from monitor.daemon._scheduler import JobSpec, Scheduler
from monitor.failures import Backoff

log = logging.getLogger(__name__)

# How long stopping waits for a running job (a tick blocked on the database is abandoned).
JOB_STOP_WAIT_S = 3.0


class Component:
    """Something the daemon runs beside the API (a collector, a delivery worker)."""

    name: str = "component"

    def start(self) -> None:
        raise NotImplementedError

    def stop(self, timeout: float) -> None:
        """Stop intake, flush and commit; must return within `timeout` seconds."""
        raise NotImplementedError

    def running(self) -> bool:
        raise NotImplementedError

    def problem(self) -> str | None:
        """None while healthy, else a short reason shown by /readyz (never a secret)."""
        return None if self.running() else "not running"


def replica_id() -> str:
    """A name unique to this process, shown in job claims."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class Service:
    """The composed daemon. Jobs and components are injected by the composition root."""

    config: Config
    engine: Engine
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    jobs: Sequence[JobSpec] = ()
    components: Sequence[Component] = ()
    holder: str = field(default_factory=replica_id)
    # Told of each job failure / success (job name; success also its unix time): metrics.
    on_job_failure: Callable[[str], None] | None = None
    on_job_success: Callable[[str, float], None] | None = None

    def __post_init__(self) -> None:
        sched = self.config.scheduler
        self.scheduler = Scheduler(
            self.engine,
            self.holder,
            sched.lease_s,
            backoff=Backoff(sched.retry_initial_s, sched.retry_max_s),
            on_failure=self.on_job_failure,
            on_success=self.on_job_success,
        )
        self._stopped = threading.Event()
        self._intake: HttpIntake | None = None

    def all_jobs(self) -> list[JobSpec]:
        sched = self.config.scheduler
        base = [
            JobSpec(
                "retention",
                retention_job(
                    self.engine,
                    sched.retention_days,
                    sched.labeled_retention_days,
                    self.on_job_failure,
                    self.config.collect.http_dedup_window,
                ),
                sched.retention_interval_s,
            )
        ]
        return base + list(self.jobs)

    def state(self) -> DaemonState:
        comps: dict[str, Callable[[], str | None]] = {c.name: c.problem for c in self.components}
        comps["scheduler"] = lambda: "stopped" if self._stopped.is_set() else None
        intake = self._intake = HttpIntake(
            self.engine, self.config, replica=self.holder, drain_process=True
        )
        intake.start()  # drain what a previous run accepted but had not yet aggregated
        return DaemonState(self.engine, self.config, self.registry, comps, intake=intake)

    def start(self) -> None:
        """Check the schema (an embedded SQLite database is created and migrated on first use;
        PostgreSQL must be at head), then start components and the scheduler."""
        prepare_for_writes(self.engine)
        for component in self.components:
            component.start()
        for job in self.all_jobs():
            self.scheduler.add(job)
        self.scheduler.start()

    def stop(self, timeout: float = 8.0) -> None:
        """Stop intake first, flush, then let running jobs finish."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        share = timeout / max(1, len(self.components) + 2)
        if self._intake is not None:
            self._intake.stop(share)
        for component in self.components:
            try:
                component.stop(share)
            except Exception:
                log.exception("component %s failed to stop cleanly", component.name)
        self.scheduler.shutdown(timeout=min(share, JOB_STOP_WAIT_S))

    def serve(
        self,
        host: str,
        port: int,
        sock: socket.socket | None = None,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        """Run until SIGTERM/SIGINT, then stop intake, flush and exit normally (status 0).

        `sock` is an already bound listening socket (so a port in use fails before anything
        starts); `on_ready` runs once everything has started, just before serving.
        """
        self.start()
        config = server_config(
            create_app(self.state()), self.config.api, host, port, timeout_graceful_shutdown=3
        )
        server = _QuietServer(config)

        def request_exit(signum: int, _frame: object) -> None:
            log.info("received %s; shutting down", signal.Signals(signum).name)
            server.should_exit = True

        previous = {s: signal.signal(s, request_exit) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            if on_ready is not None:
                on_ready()
            server.run(sockets=[sock] if sock is not None else None)
        finally:
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def serve_in_background(self, host: str, port: int) -> uvicorn.Server:
        """Start everything with the API on a thread (for embedding, e.g. the demo)."""
        self.start()
        config = server_config(create_app(self.state()), self.config.api, host, port)
        server = _QuietServer(config)
        threading.Thread(target=server.run, name="api", daemon=True).start()
        return server

    def stop_background(self, server: uvicorn.Server, timeout: float = 8.0) -> None:
        """Stop a server from `serve_in_background`, then the components and scheduler."""
        server.should_exit = True
        self.stop(timeout)


class _QuietServer(uvicorn.Server):
    """uvicorn's server without its own signal capture (which re-raises SIGTERM on exit)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
