"""Shared fixtures: databases on both backends, CLI runner; test-lane markers applied here.

Markers come from what a test uses, so a new test gets them without remembering to:
`pg` (PostgreSQL), `kafka` (the Kafka broker), `services` (any external service: PostgreSQL,
Kafka, Prometheus, Alertmanager) and `slow` (a `modelwatch serve` subprocess). A test uses a
service when it requests a fixture listed in FIXTURE_MARKS (directly or through another fixture),
runs the PostgreSQL half of `database_url`, or its module imports a class listed in CLASS_MARKS.
`./dev test --fast` deselects `slow` and `services`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from migrations import upgrade
from monitor.storage import make_engine
from tests.services.alertmanager import AlertmanagerServer
from tests.services.kafka import KafkaBroker
from tests.services.postgres import PostgresServer
from tests.services.prometheus import PrometheusServer

REPO = Path(__file__).resolve().parent.parent

PG = ("pg", "services")
KAFKA = ("kafka", "services")
FIXTURE_MARKS: dict[str, tuple[str, ...]] = {
    "postgres": PG,
    "own_postgres": PG,
    "kafka": KAFKA,
    "alertmanager": ("services",),
    "server": ("slow",),
    "idle_server": ("slow",),
}
CLASS_MARKS: dict[type, tuple[str, ...]] = {
    PostgresServer: PG,
    KafkaBroker: KAFKA,
    PrometheusServer: ("services",),
    AlertmanagerServer: ("services",),
}


def lane_marks(item: pytest.Item) -> set[str]:
    """The lane markers a test earns from its fixtures, parameters and module imports."""
    names = set(getattr(item, "fixturenames", ()))
    marks = {mark for name in names & FIXTURE_MARKS.keys() for mark in FIXTURE_MARKS[name]}
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("database_url") == "postgresql":
        marks.update(PG)
    module = vars(getattr(item, "module", None) or object)
    for cls, extra in CLASS_MARKS.items():
        if any(value is cls for value in module.values()):
            marks.update(extra)
    if "postgres" in item.keywords:  # the old explicit marker, still accepted
        marks.update(PG)
    return marks


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for mark in sorted(lane_marks(item)):
            item.add_marker(mark)


def _cluster() -> Iterator[PostgresServer]:
    server = PostgresServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL cluster for the session; a missing server fails, never skips."""
    yield from _cluster()


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster of one test alone: it may be stopped and started again."""
    yield from _cluster()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database URL, once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'modelwatch.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database()


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """An engine on a database migrated to head, once per backend."""
    eng = make_engine(database_url)
    upgrade(eng)
    try:
        yield eng
    finally:
        eng.dispose()


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    """A migrated SQLite engine, for tests where the backend does not matter."""
    eng = make_engine(f"sqlite:///{tmp_path / 'modelwatch.db'}")
    upgrade(eng)
    try:
        yield eng
    finally:
        eng.dispose()


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `modelwatch ARGS` in a subprocess, as a user would, against this checkout."""
    full_env = {k: v for k, v in os.environ.items() if k != "MODELWATCH_DATABASE_URL"}
    full_env.update(env or {})
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), full_env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
