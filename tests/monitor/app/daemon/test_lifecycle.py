"""Process lifecycle of `serve`: the intake drain's worker process is supervised (kill -9 of it
alone is restarted with backoff and counted, `/readyz` names it while it is down, and what it had
not aggregated is aggregated by the next worker exactly once, on SQLite and PostgreSQL); stopping
returns within its grace period even when a component does not stop."""

from __future__ import annotations

import os
import re
import signal
import threading
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors._intake_worker import PROCESS_NAME as DRAIN_PROCESS
from monitor.app.daemon._service import Service
from monitor.app.daemon._supervisor import Component
from monitor.config import parse_config
from monitor.storage import IngestCounter, IntakeEntry, WindowCount, make_engine
from tests.monitor.app.daemon.conftest import ServerProcess, auth, migrated_url, write_config
from tests.monitor.app.daemon.test_api_ingest import event
from tests.waiting import wait_until

RESTARTS = re.compile(
    r'^modelwatch_component_restarts_total\{component="intake-drain"\} (\S+)$', re.MULTILINE
)


def _drain_pid(server: ServerProcess) -> int | None:
    """The worker process serve spawned for the drain (by its name: not multiprocessing's
    resource tracker, nor the evaluation units' worker on PostgreSQL)."""
    return server.child(DRAIN_PROCESS)


def _restarts(server: ServerProcess) -> float:
    found = RESTARTS.search(httpx.get(f"{server.url}/metrics", timeout=10).text)
    return float(found.group(1)) if found else 0.0


def _aggregated(url: str) -> tuple[int, int, int]:
    """(events counted by the HTTP source, events in window counts, requests still pending)."""
    engine = make_engine(url)
    try:
        with Session(engine) as s:
            counter = s.get(IngestCounter, "http")
            overall = select(func.sum(WindowCount.events)).where(WindowCount.slice_key == "")
            windows = s.scalar(overall) or 0
            pending = s.scalar(select(func.count()).where(IntakeEntry.consumed_at.is_(None)))
            return (counter.events if counter else 0), int(windows), int(pending or 0)
    finally:
        engine.dispose()


def _new_drain(server: ServerProcess, old: int) -> int | None:
    """The drain's worker process once it is another than `old` (None meanwhile, and when a
    thread of serve ended while its children were listed: the poll looks again)."""
    try:
        pid = _drain_pid(server)
    except OSError:
        return None
    return None if pid == old else pid


def _counted(engine: Engine) -> int:
    """Events counted by the HTTP source so far."""
    with Session(engine) as s:
        counter = s.get(IngestCounter, "http")
        return counter.events if counter else 0


def _post(server: ServerProcess, first: int, requests: int, per_request: int) -> None:
    for r in range(requests):
        body = [event(first + r * per_request + i) for i in range(per_request)]
        headers = {**auth("MW_T_INGEST"), "Idempotency-Key": f"k{first + r * per_request}"}
        answer = httpx.post(f"{server.url}/v1/events", json=body, headers=headers, timeout=30)
        assert answer.status_code == 202, answer.text


def _kill_drain(server: ServerProcess) -> int:
    pid = wait_until(lambda: _drain_pid(server), "the drain's worker process", timeout=30)
    os.kill(pid, signal.SIGKILL)
    return pid


RESTART_S = 5


def _start(tmp_path: Path, url: str, extra: str = "") -> ServerProcess:
    """`serve` on `url` (migrated: `migrated_url`)."""
    config = write_config(tmp_path, url, extra)
    # A dead component waits RESTART_S before its restart: a window /readyz's watcher cannot miss
    # on a slow machine (the default is 1 s).
    text = config.read_text().replace(
        "scheduler:\n", f"scheduler:\n  restart_initial_s: {RESTART_S}\n"
    )
    config.write_text(text)
    server = ServerProcess(config)
    server.wait_ready()
    return server


def test_a_killed_drain_process_is_restarted_counted_and_shown_by_readyz(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = migrated_url("sqlite", tmp_path, request)
    server = _start(tmp_path, url)
    seen: list[tuple[int, str]] = []
    done = threading.Event()

    def watch() -> None:  # every /readyz answer from the kill until the worker is back
        while not done.is_set():
            with httpx.Client() as client:
                try:
                    ready = client.get(f"{server.url}/readyz", timeout=10)
                except httpx.TransportError:
                    continue
                seen.append((ready.status_code, ready.json()["checks"].get("intake", "")))

    try:
        assert _restarts(server) == 0
        watcher = threading.Thread(target=watch)
        watcher.start()
        killed = _kill_drain(server)
        try:
            wait_until(lambda: _restarts(server) == 1, "the restart counted in /metrics", 60)
            new = wait_until(lambda: _drain_pid(server), "a new worker", timeout=30)
            assert new != killed
            wait_until(lambda: seen and seen[-1][0] == 200, "/readyz 200 again", timeout=30)
        finally:
            done.set()
            watcher.join(30)
        down = [check for status, check in seen if status == 503]
        assert down and all("intake-drain" in check for check in down), seen

        _post(server, 0, 3, 10)  # the new worker aggregates what comes now
        wait_until(lambda: _aggregated(url) == (30, 30, 0), "30 events aggregated", 60)
        assert httpx.get(f"{server.url}/readyz", timeout=10).status_code == 200
    finally:
        assert server.terminate(timeout=30, group=True) == 0


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_drain_killed_mid_batch_loses_and_doubles_nothing(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = migrated_url(backend, tmp_path, request)
    engine = make_engine(url)  # one for the tight poll below (a new one per poll is too slow)
    request.addfinalizer(engine.dispose)
    # Small batches: the backlog below takes the drain many transactions.
    server = _start(tmp_path, url, "  batch_size: 100\n")
    requests, per_request = 60, 50
    total = requests * per_request
    try:
        # The backlog piles up while the worker is frozen, then the worker is killed.
        frozen = wait_until(lambda: _drain_pid(server), "the drain's worker process", 30)
        os.kill(frozen, signal.SIGSTOP)
        _post(server, 0, requests, per_request)
        assert _aggregated(url) == (0, 0, requests)
        os.kill(frozen, signal.SIGKILL)
        # Stop the next worker as soon as it has committed a batch, with more still pending, and
        # kill it there (stopped first: under load a poll could come after it drained it all).
        worker = wait_until(lambda: _new_drain(server, frozen), "the next drain worker", 30, 0.01)
        wait_until(lambda: _counted(engine) > 0, "the new worker aggregating", 60, 0.005)
        os.kill(worker, signal.SIGSTOP)
        assert _aggregated(url)[2] > 0, "the kill did not land mid-backlog"
        os.kill(worker, signal.SIGKILL)
        wait_until(lambda: _aggregated(url)[2] == 0, "the backlog aggregated", 120)
        assert _aggregated(url) == (total, total, 0)
        assert _restarts(server) >= 2
    finally:
        assert server.terminate(timeout=30, group=True) == 0


class _Stuck(Component):
    """A component whose stop never returns (a flush blocked on a dead peer)."""

    name = "stuck"

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()

    def start(self) -> None:
        pass

    def stop(self, timeout: float) -> None:
        self.asked.set()
        self.release.wait()

    def running(self) -> bool:
        return True


def test_stopping_returns_within_its_budget_when_a_component_hangs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mw.db'}"
    stuck = _Stuck()
    service = Service(parse_config({"database_url": url}), make_engine(url), components=[stuck])
    stopping = threading.Thread(target=service.stop, args=(0.5,), daemon=True)
    stopping.start()
    stopping.join(30)  # far above the budget: only a stop that waits for the component fails
    stuck.release.set()
    assert stuck.asked.is_set() and not stopping.is_alive()
