"""Supervised components: a component whose loop dies is restarted with backoff and counted.

A database outage (PostgreSQL restart, SQLite exclusive lock) makes a delivery worker or a
collector raise out of its loop, and a signal or the OOM killer can end the intake drain's
worker process; without supervision they would stay dead until the daemon restarts. Each
attempt gets its own stop event (a source that fails sets it to stop its siblings), so only
`stop()` ends supervision.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from monitor.failures import Backoff, redact

log = logging.getLogger(__name__)

Target = Callable[[threading.Event], None]


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


class SupervisedComponent(Component):
    """Runs `target(stop)` on a thread; when it raises (or returns unasked) it is restarted.

    Restarts wait `backoff` (doubling per failure in a row; a run that lasted `stable_s`
    resets the count) and call `on_restart(name)`. `on_death(name, error)` is told of each
    death (when it is restarted), `on_recovered(name)` once a restarted run has lasted
    `stable_s`. `problem()` says why it is degraded.
    """

    def __init__(
        self,
        name: str,
        target: Target,
        on_restart: Callable[[str], None] | None = None,
        backoff: Backoff | None = None,
        stable_s: float = 60.0,
        on_death: Callable[[str, str], None] | None = None,
        on_recovered: Callable[[str], None] | None = None,
    ) -> None:
        self.name = name
        self._target = target
        self._on_restart = on_restart
        self._on_death = on_death
        self._on_recovered = on_recovered
        self._deaths = 0
        self._backoff = backoff or Backoff(initial_s=1.0, max_s=60.0)
        self._stable_s = stable_s
        self._stop = threading.Event()
        self._attempt = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: str | None = None
        self.restarts = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        failures = 0
        while not self._stop.is_set():
            started = time.monotonic()
            error = self._run_once()
            if error is None:
                return
            failures = 1 if time.monotonic() - started >= self._stable_s else failures + 1
            self._error = error
            self._deaths += 1
            if self._stop.wait(self._backoff.delay(failures).total_seconds()):
                return
            self.restarts += 1
            log.warning("component %s restarting (restart %d)", self.name, self.restarts)
            # Told now, not at death: a death by outage could not be recorded while it lasts;
            # an outage longer than the backoff is retried until the record is written.
            if not self._tell(self._on_death, error):
                self._retry_death(error, self._deaths, 1)
            self._tell(self._on_restart)
            self._error = None
            self._watch_recovery(self._deaths)

    def _watch_recovery(self, deaths: int) -> None:
        def check() -> None:
            if self._deaths == deaths and not self._stop.is_set():
                self._tell(self._on_recovered)

        timer = threading.Timer(self._stable_s, check)
        timer.daemon = True
        timer.start()

    def _retry_death(self, error: str, deaths: int, attempt: int) -> None:
        """Record death number `deaths` later, unless a newer death or `stop()` came first."""

        def again() -> None:
            if self._deaths != deaths or self._stop.is_set():
                return
            if not self._tell(self._on_death, error):
                self._retry_death(error, deaths, attempt + 1)

        timer = threading.Timer(self._backoff.delay(attempt).total_seconds(), again)
        timer.daemon = True
        timer.start()

    def _tell(self, hook: Callable[..., None] | None, *args: str) -> bool:
        """Call a hook; False when it raised (logged, never fatal to the supervisor)."""
        if hook is None:
            return True
        try:
            hook(self.name, *args)
        except Exception as exc:  # a hook (a database write) must not kill the supervisor
            log.warning("component %s: hook failed: %s", self.name, redact(exc))
            return False
        return True

    def _run_once(self) -> str | None:
        """Run the target once; None when it ended because it was asked to stop."""
        self._attempt = threading.Event()
        if self._stop.is_set():
            return None
        try:
            self._target(self._attempt)
        except Exception as exc:  # the component died; supervision restarts it
            log.exception("component %s stopped with an error", self.name)
            return redact(exc)
        return None if self._stop.is_set() else "stopped unexpectedly"

    def stop(self, timeout: float) -> None:
        self._stop.set()
        self._attempt.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def running(self) -> bool:
        return self.problem() is None

    def problem(self) -> str | None:
        """None while healthy; otherwise why not (no secrets: errors are redacted)."""
        if self._thread is None or not self._thread.is_alive():
            return "not running"
        if self._error is not None:
            return f"restarting after: {self._error} ({self.restarts} restarts so far)"
        return None
