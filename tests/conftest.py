"""Shared fixtures: databases on both backends, CLI runner."""

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
from tests.services.postgres import PostgresServer

REPO = Path(__file__).resolve().parent.parent


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
