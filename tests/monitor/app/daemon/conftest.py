"""A real `modelwatch serve` process on a free loopback port."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from migrations import upgrade
from monitor.storage import JobRun, make_engine
from tests.conftest import REPO
from tests.services.net import free_port
from tests.waiting import wait_until

TOKENS = {
    "MW_T_READ": "read-secret-123",
    "MW_T_INGEST": "ingest-secret-456",
    "MW_T_ADMIN": "admin-secret-789",
}

CONFIG = """\
database_url: {url}
models:
  - name: fraud
    slices: [region]
api:
  tokens:
    - {{name: dash, scopes: [read], token_env: MW_T_READ}}
    - {{name: collector, scopes: [ingest], token_env: MW_T_INGEST}}
    - {{name: ops, scopes: [admin], token_env: MW_T_ADMIN}}
  max_body_bytes: 65536
scheduler:
  evaluate_interval_s: 1
collect:
  keep_joined_rows: true  # some tests read the raw joined rows
"""


class ServerProcess:
    """`python -m monitor serve` as a user would start it."""

    def __init__(
        self,
        config: Path,
        env: dict[str, str] | None = None,
        log: Path | None = None,
        args: tuple[str, ...] = (),
    ) -> None:
        """`log`: write the server's output there (a long run would fill a pipe nobody reads);
        `args`: more `serve` options (e.g. `--log-level debug`)."""
        self.port = free_port()
        self.directory = config.parent  # its database and config (`db_engine(directory)`)
        self.log = log
        out = log.open("w") if log is not None else subprocess.PIPE
        self.url = f"http://127.0.0.1:{self.port}"
        full_env = {**os.environ, **TOKENS, **(env or {}), "PYTHONPATH": str(REPO)}
        full_env.pop("MODELWATCH_DATABASE_URL", None)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "monitor",
                "serve",
                "--config",
                str(config),
                "--port",
                str(self.port),
                *args,
            ],
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT if log is not None else subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group, as under a service manager
        )

    def wait_ready(self, timeout: float = 60) -> None:
        def healthy() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.communicate()[1]}")
            return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200

        wait_until(healthy, "/healthz", timeout, 0.2, retry_on=(httpx.TransportError,))

    def child(self, name: str) -> int | None:
        """The pid of serve's child process called `name` (`/proc/<pid>/comm`, as our workers
        name themselves: `monitor.common.children.name_process`); None while there is none."""
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            try:
                pids = (task / "children").read_text().split()
            except OSError:  # a thread of serve ended while its children were listed
                continue
            for pid in pids:
                try:
                    if Path(f"/proc/{pid}/comm").read_text().strip() == name:
                        return int(pid)
                except OSError:  # exited meanwhile
                    continue
        return None

    def terminate(self, timeout: float = 15, group: bool = False) -> int:
        """SIGTERM to serve (`group`: to its whole process group, as systemd's default
        `KillMode=control-group` and container runtimes send it); its exit status, or the
        SIGKILL's after `timeout` seconds."""
        if self.proc.poll() is None:
            if group:
                os.killpg(self.proc.pid, signal.SIGTERM)
            else:
                self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            with contextlib.suppress(ProcessLookupError):  # no child outlives a test
                os.killpg(self.proc.pid, signal.SIGKILL)


def migrated_url(backend: str, directory: Path, request: pytest.FixtureRequest) -> str:
    """An empty database migrated to head: a file in `directory` (`sqlite`) or a new database
    on the session's cluster (`postgresql`)."""
    if backend != "sqlite":  # a copy of the session's migrated template (`pg_head`)
        head = request.getfixturevalue("pg_head")
        return str(request.getfixturevalue("postgres").create_database(template=head))
    url = f"sqlite:///{directory / 'mw.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    return url


def write_config(tmp_path: Path, url: str, extra: str = "") -> Path:
    path = tmp_path / "mw.yaml"
    path.write_text(CONFIG.format(url=url) + extra)
    return path


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    yield from _serve(tmp_path, CONFIG)


@pytest.fixture
def idle_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server whose evaluation job has run once (at start) and will not run again soon."""
    yield from _idle(tmp_path)


# A `serve` start costs seconds of CPU (the interpreter, imports, migrations): a module whose
# tests only read what the server holds, or write what no other test of the module reads,
# shares one. Each xdist worker that runs tests of the module starts its own.
@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """`server`, shared by the tests of one module (its files: `module_server.directory`)."""
    yield from _serve(tmp_path_factory.mktemp("serve"), CONFIG)


@pytest.fixture(scope="module")
def module_idle_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """`idle_server`, shared by the tests of one module."""
    yield from _idle(tmp_path_factory.mktemp("serve"))


def _idle(directory: Path) -> Iterator[ServerProcess]:
    config = CONFIG.replace("evaluate_interval_s: 1", "evaluate_interval_s: 3600")
    for proc in _serve(directory, config):
        engine = db_engine(directory)
        wait_until(partial(_evaluated, engine), "the first evaluation", timeout=30)
        engine.dispose()
        yield proc


def _evaluated(engine: Engine) -> bool:
    with Session(engine) as session:
        done = select(JobRun).where(JobRun.job == "evaluate", JobRun.status != "running")
        return session.execute(done).first() is not None


def _serve(tmp_path: Path, config: str) -> Iterator[ServerProcess]:
    url = f"sqlite:///{tmp_path / 'mw.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    path = tmp_path / "mw.yaml"
    path.write_text(config.format(url=url))
    proc = ServerProcess(path)
    proc.wait_ready()
    yield proc
    proc.terminate()


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


_keys = itertools.count()


def post_until_drained(
    base: str, body: Any, endpoint: str = "events", key: str | None = None, timeout: float = 90
) -> httpx.Response:
    """POST `body` with the ingest token and `?wait=10` until the drain has consumed it (200).

    With an Idempotency-Key (`key`), a request the drain did not consume within one wait (10 s
    at most: a just-started drain on a busy machine) is posted again with the same key and
    waited for again, as a client would; keyless (`key` None), one wait must do."""
    headers = auth("MW_T_INGEST") | ({"Idempotency-Key": key} if key is not None else {})

    def answered() -> httpx.Response | None:
        resp = httpx.post(
            f"{base}/v1/{endpoint}", json=body, headers=headers, params={"wait": 10}, timeout=60
        )
        return resp if resp.status_code != 202 or key is None else None

    resp = wait_until(answered, "the drain's result", timeout=timeout)
    assert resp is not None and resp.status_code == 200, resp and resp.text
    return resp


def post_drained(
    base: str, body: Any, endpoint: str = "events", keyed: bool = True
) -> dict[str, Any]:
    """What the drain made of `body` (`post_until_drained`'s `result`), posted with a fresh
    Idempotency-Key (`keyed`) or without one."""
    key = f"drained-{os.getpid()}-{next(_keys)}" if keyed else None
    result: dict[str, Any] = post_until_drained(base, body, endpoint, key).json()["result"]
    return result


@dataclass(frozen=True)
class ReleaseModels:
    """A small fraud classifier, its float16 build and a labelled golden set."""

    reference: Path
    fp16: Path
    golden: Path


@pytest.fixture(scope="session")
def release_models(tmp_path_factory: pytest.TempPathFactory) -> ReleaseModels:
    from monitor.app.demo import _models as builders

    directory = tmp_path_factory.mktemp("release")
    ref = builders.save(builders.fraud_classifier(), directory / "fraud_fp32.onnx")
    fp16 = builders.to_float16(ref, directory / "fraud_fp16.onnx")
    golden = directory / "golden.parquet"
    builders.fraud_golden(n=1500, reference=ref).to_parquet(golden)
    return ReleaseModels(ref, fp16, golden)


def db_engine(tmp_path: Path) -> Engine:
    """An engine on the `server` fixture's database."""
    return make_engine(f"sqlite:///{tmp_path / 'mw.db'}")
