"""Shared fixtures: databases on both backends, CLI runner; test-lane markers applied here.

Markers come from what a test uses, so a new test gets them without remembering to:
`pg` (PostgreSQL), `kafka` (the Kafka broker), `services` (any external service: PostgreSQL,
Kafka, Prometheus, Alertmanager) and `slow` (a `modelwatch serve` subprocess). A test uses one
when it requests a fixture listed in FIXTURE_MARKS (directly or through another fixture), runs
the PostgreSQL half of `database_url`, or its module imports a class in CLASS_MARKS or
SLOW_CLASSES. `./dev test --fast` deselects `slow` and `services`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import inspect
from sqlalchemy.engine import Engine

from migrations import upgrade
from monitor.app.cli.main import main
from monitor.storage import make_engine
from tests.properties import load_profile
from tests.services.alertmanager import AlertmanagerServer
from tests.services.kafka import KafkaBroker
from tests.services.postgres import PostgresServer
from tests.services.prometheus import PrometheusServer

# A test's own requests (`httpx.get(url)`, ...) to a `serve` or a service wait up to 30 s, not
# httpx's 5: on a loaded machine (CI, four workers on two cores) a just-started `serve` once took
# longer to answer a DELETE, and the test failed on its client, not on what it checks. A test
# that means a deadline passes its own `timeout`; clients the product makes are untouched.
for _call in (httpx.request, httpx.stream, httpx.get, httpx.options, httpx.head, httpx.post,
              httpx.put, httpx.patch, httpx.delete):  # fmt: skip
    if _call.__kwdefaults__ is not None and "timeout" in _call.__kwdefaults__:
        _call.__kwdefaults__["timeout"] = httpx.Timeout(30.0)

REPO = Path(__file__).resolve().parent.parent
load_profile()

PG = ("pg", "services")
KAFKA = ("kafka", "services")
FIXTURE_MARKS: dict[str, tuple[str, ...]] = {
    "postgres": PG,
    "own_postgres": PG,
    "kafka": KAFKA,
    "alertmanager": ("services",),
    "server": ("slow",),
    "idle_server": ("slow",),
    "module_server": ("slow",),
    "module_idle_server": ("slow",),
}
CLASS_MARKS: dict[type, tuple[str, ...]] = {
    PostgresServer: PG,
    KafkaBroker: KAFKA,
    PrometheusServer: ("services",),
    AlertmanagerServer: ("services",),
}
# A module that starts `modelwatch serve` itself: imported lazily (tests.monitor.app.daemon
# imports this file).
SLOW_CLASSES = ("ServerProcess",)


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
    if any(getattr(value, "__qualname__", None) in SLOW_CLASSES for value in module.values()):
        marks.add("slow")
    if "postgres" in item.keywords:  # the old explicit marker, still accepted
        marks.update(PG)
    return marks


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for mark in sorted(lane_marks(item)):
            item.add_marker(mark)
    # The long ones first (a `serve` process, a service, an oracle): on parallel workers a long
    # test picked up last would run alone at the end. Stable, so modules stay together.
    items.sort(key=_cost_rank)


def _cost_rank(item: pytest.Item) -> int:
    if item.get_closest_marker("slow"):
        return 0
    if item.get_closest_marker("services") or item.get_closest_marker("nannyml"):
        return 1
    return 2


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
    """An empty database URL, once per backend (on PostgreSQL already at head when the test
    also uses `engine`)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'modelwatch.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    head = request.getfixturevalue("pg_head") if "engine" in request.fixturenames else None
    return server.create_database(template=head)


@pytest.fixture(scope="session")
def pg_head(postgres: PostgresServer) -> str:
    """A database migrated to head once per session; `engine`'s databases are copies of it,
    several times cheaper than running every migration again."""
    url = postgres.create_database()
    template = make_engine(url)
    upgrade(template)
    template.dispose()  # a template is copied only while nobody is connected to it
    return url.rsplit("/", 1)[1]


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """An engine on a database migrated to head, once per backend."""
    eng = make_engine(database_url)
    if not inspect(eng).has_table("alembic_version"):  # else a copy of `pg_head`
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
    """Run `modelwatch ARGS` in this process, as a user would see it: exit status, stdout, stderr.

    Through the same `main` as the console script (so exit 2 and one-line errors are what a user
    gets), with click's CliRunner capturing the streams: no interpreter start, no re-import of
    pandas and friends per call. A command that must run as its own process (a daemon, a signal,
    a crash, the `python -m monitor` entry point itself) uses `run_cli_process`. `timeout` only
    applies there; an in-process command cannot be cut off.
    """
    del timeout
    environ: dict[str, str | None] = {"MODELWATCH_DATABASE_URL": None, **(env or {})}
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    runner = CliRunner()
    with contextlib.chdir(cwd or Path.cwd()), runner.isolation(env=environ) as (out, err, _):
        try:
            code = _exit_code(main, list(args))
        finally:  # what a command sets up for its own process must not outlive it here
            root.handlers[:], root.level = saved
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
        return subprocess.CompletedProcess(
            ["modelwatch", *args], code, out.getvalue().decode(), err.getvalue().decode()
        )


def _exit_code(entry: Callable[[list[str]], object], argv: list[str]) -> int:
    """Call the CLI's entry point; a traceback lands on stderr and exits 1, as in a process."""
    try:
        entry(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception:
        traceback.print_exc(file=sys.stderr)
        return 1
    return 0


def run_cli_process(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `modelwatch ARGS` in a subprocess (`python -m monitor`), against this checkout."""
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
