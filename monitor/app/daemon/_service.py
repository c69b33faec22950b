"""`modelwatch serve`: scheduler, components and HTTP API in one process, stopped gracefully."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import uvicorn
from prometheus_client import CollectorRegistry
from sqlalchemy.engine import Engine

from collectors import HttpIntake
from migrations import prepare_for_writes
from monitor.app.daemon._app import create_app
from monitor.app.daemon._common import DaemonState
from monitor.app.daemon._http import server_config
from monitor.app.daemon._retention import retention_job
from monitor.app.daemon._scheduler import JobSpec, Scheduler
from monitor.app.daemon._supervisor import Component, SupervisedComponent, Target
from monitor.config import Config
from monitor.failures import Backoff

log = logging.getLogger(__name__)

# How long stopping waits for a running job (a tick blocked on the database is abandoned).
JOB_STOP_WAIT_S = 3.0
# How long stopping may take when no signal set a deadline (embedding: `stop_background`);
# after SIGTERM/SIGINT it is what `scheduler.shutdown_grace_s` has left.
DEFAULT_STOP_S = 8.0


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
    # Runs a target under supervision (restart with backoff, counted): the intake drain's
    # worker process and the scheduler. Default: a `SupervisedComponent` without metrics.
    supervise: Callable[[str, Target], Component] = SupervisedComponent

    def __post_init__(self) -> None:
        sched = self.config.scheduler
        self.scheduler = Scheduler(
            self.engine,
            self.holder,
            sched.lease_s,
            backoff=Backoff(sched.retry_initial_s, sched.retry_max_s),
            on_failure=self.on_job_failure,
            on_success=self.on_job_success,
            tick_offset_s=sched.tick_offset_s,
        )
        self._stopped = threading.Event()
        self._intake: HttpIntake | None = None
        self._jobs_runner: Component | None = None
        # When the grace period of a SIGTERM/SIGINT ends (monotonic), once one arrived.
        self._exit_by: float | None = None

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
        comps["scheduler"] = self._scheduler_problem
        intake = self._intake = HttpIntake(
            self.engine, self.config, replica=self.holder, supervise=self.supervise
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
        self._jobs_runner = self.supervise("scheduler", self.scheduler.run)
        self._jobs_runner.start()

    def _scheduler_problem(self) -> str | None:
        """Why the scheduler is not running jobs (its supervisor's word while it restarts)."""
        if self._stopped.is_set():
            return "stopped"
        runner = self._jobs_runner.problem() if self._jobs_runner is not None else None
        return runner or self.scheduler.problem()

    def stop(self, timeout: float | None = None) -> None:
        """Stop intake, components and jobs at once, each flushing what it holds, and return
        within `timeout` seconds (default: what a signal's grace period has left, else
        DEFAULT_STOP_S); what is still running then is abandoned (daemon threads; the drain's
        worker is killed), and nothing acknowledged is lost: it waits in the intake log."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        if timeout is None:
            left = None if self._exit_by is None else self._exit_by - time.monotonic()
            timeout = DEFAULT_STOP_S if left is None else max(1.0, left)
        deadline = time.monotonic() + timeout
        parts: list[Component | HttpIntake] = [*self.components]
        if self._jobs_runner is not None:
            parts.append(self._jobs_runner)
        if self._intake is not None:
            parts.insert(0, self._intake)
        stoppers = [
            threading.Thread(target=_stop_part, args=(part, 0.9 * timeout), daemon=True)
            for part in parts
        ]
        for stopper in stoppers:
            stopper.start()
        self.scheduler.shutdown(timeout=min(timeout, JOB_STOP_WAIT_S))
        for stopper in stoppers:
            stopper.join(max(0.0, deadline - time.monotonic()))

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
            if self._exit_by is None:
                self._exit_by = time.monotonic() + self.config.scheduler.shutdown_grace_s
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

    def stop_background(self, server: uvicorn.Server, timeout: float = DEFAULT_STOP_S) -> None:
        """Stop a server from `serve_in_background`, then the components and scheduler."""
        server.should_exit = True
        self.stop(timeout)


def _stop_part(part: Component | HttpIntake, timeout: float) -> None:
    try:
        part.stop(timeout)
    except Exception:
        log.exception("%s failed to stop cleanly", getattr(part, "name", "intake"))


class _QuietServer(uvicorn.Server):
    """uvicorn's server without its own signal capture (which re-raises SIGTERM on exit)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
