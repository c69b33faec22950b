"""The scheduler's thread is supervised like every other component: when APScheduler's own loop
dies (or is stopped), /readyz says so (503), and a fresh scheduler runs the jobs again after the
restart backoff, counted in `modelwatch_component_restarts_total{component="scheduler"}`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from migrations import upgrade
from monitor.app.daemon._service import Service
from monitor.app.daemon.wiring import build_service
from monitor.config import parse_config
from monitor.storage import JobRun, make_engine
from tests.services.net import free_port
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # a daemon per test, and a 5 s restart backoff


class Daemon:
    """`build_service(...).serve_in_background` on a free port: the daemon serve composes,
    in this process so that a test can reach its scheduler's thread. Restarts wait 5 s, so a
    /readyz poll on a loaded machine cannot miss the 503 window."""

    def __init__(self, directory: Path) -> None:
        url = f"sqlite:///{directory / 'mw.db'}"
        self.engine = make_engine(url)
        upgrade(self.engine)
        config = parse_config(
            {
                "database_url": url,
                "models": [{"name": "fraud"}],
                "scheduler": {"evaluate_interval_s": 1, "restart_initial_s": 5},
            },
            env={},
        )
        self.registry = CollectorRegistry()
        self.service: Service = build_service(config, self.engine, self.registry)
        self.url = f"http://127.0.0.1:{free_port()}"
        self.server = self.service.serve_in_background("127.0.0.1", int(self.url.rsplit(":")[-1]))

    def scheduler_check(self) -> tuple[int, str]:
        r = httpx.get(f"{self.url}/readyz", timeout=5)
        return r.status_code, r.json()["checks"]["scheduler"]

    def restarts(self) -> float:
        labels = {"component": "scheduler"}
        return self.registry.get_sample_value("modelwatch_component_restarts_total", labels) or 0

    def evaluations(self) -> int:
        with Session(self.engine) as s:
            stmt = select(func.count()).select_from(JobRun).where(JobRun.job == "evaluate")
            return int(s.scalar(stmt) or 0)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path)
    try:
        yield d
    finally:
        d.service.stop_background(d.server)
        d.engine.dispose()


def _wait_ready(d: Daemon) -> None:
    wait_until(
        lambda: d.scheduler_check() == (200, "ok"),
        "/readyz 200",
        60,
        0.1,
        retry_on=(httpx.TransportError,),
    )


def _died(d: Daemon) -> None:
    wait_until(lambda: d.scheduler_check()[0] == 503, "/readyz 503 for the scheduler", 30)


def _runs_again(d: Daemon) -> None:
    """Restarted (counted), ready again, and evaluate ticks run again."""
    wait_until(lambda: d.restarts() >= 1, "a counted restart", 30)
    _wait_ready(d)
    ran = d.evaluations()
    wait_until(lambda: d.evaluations() > ran, "an evaluate run after the restart", 30)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_scheduler_thread_that_dies_is_restarted(daemon: Daemon) -> None:
    _wait_ready(daemon)
    aps = daemon.service.scheduler._scheduler

    def die() -> float:
        raise RuntimeError("APScheduler's loop broke")

    aps._process_jobs = die
    aps.wakeup()
    _died(daemon)
    _runs_again(daemon)
    assert daemon.service.scheduler._scheduler is not aps


def test_a_scheduler_stopped_under_the_daemon_is_restarted(daemon: Daemon) -> None:
    _wait_ready(daemon)
    daemon.service.scheduler._scheduler.shutdown(wait=False)
    _died(daemon)
    _runs_again(daemon)
