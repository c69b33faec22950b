"""Production state against a running daemon (SQLite and PostgreSQL): no GET changes anything,
a rollback reaches only a verified known-good version, and a swapped model file is never gated.

The original symptoms: a read-scope `GET /v1/canary/...` for a model with `canary.action:
rollback` rolled production back, to a version only seen in (fabricated) traffic; and a
registered version's file swapped on disk was gated as if it were the registered one.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from guards.registry import list_models, register_version
from migrations import upgrade
from monitor.storage import (
    AlertSilence,
    GateRun,
    ModelAlias,
    ModelVersion,
    RollbackEvent,
    make_engine,
    transaction,
)
from tests.conftest import run_cli
from tests.monitor.app.daemon.conftest import ReleaseModels, ServerProcess, auth, write_config
from tests.monitor.app.daemon.test_canary import post, traffic

EXTRA = """\
guards:
  latency_batch_sizes: []
  golden_sets:
    fraud:
      path: {golden}
      preset: fp16
      label_column: label
      id_column: id
      features: [{features}]
"""
# Placeholders a GET route's path and required query parameters are filled with.
PATH_VALUES = {"model": "fraud", "version": "2", "canary": "2", "fingerprint": "0" * 16}
REQUIRED_QUERY = {"/v1/canary/{model}/{canary}": {"baseline": "ghost"},
                  "/v1/dead-letters": {"idempotency_key": "k"}}  # fmt: skip
# What production state is: registry, aliases, rollbacks, gate history, silences.
STATE_TABLES = (ModelVersion, ModelAlias, RollbackEvent, GateRun, AlertSilence)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    eng = make_engine(database_url)
    upgrade(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def served(
    engine: Engine, database_url: str, tmp_path: Path, release_models: ReleaseModels
) -> Iterator[ServerProcess]:
    """`serve` with `canary.action: rollback` and the release models' golden set."""
    from tests.monitor.app.daemon.test_canary import CANARY_CONFIG

    features = ", ".join(f"f{i}" for i in range(8))
    extra = EXTRA.format(golden=release_models.golden, features=features)
    config = write_config(tmp_path, database_url, "")
    config.write_text(CANARY_CONFIG.format(url=database_url) + extra)
    proc = ServerProcess(config)
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.terminate()


def state(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    with transaction(engine) as session:
        return {
            t.__tablename__: [tuple(r) for r in session.execute(select(t.__table__)).all()]
            for t in STATE_TABLES
        }


def active(engine: Engine) -> str | None:
    return next(m.active for m in list_models(engine) if m.name == "fraud")


def get_every_route(server: ServerProcess) -> list[tuple[str, int]]:
    """Each GET route of the API's own schema once, with the read token: (path, status)."""
    schema = httpx.get(f"{server.url}/openapi.json", headers=auth("MW_T_READ")).json()
    answers = []
    for template, ops in schema["paths"].items():
        if "get" not in ops:
            continue
        url = template.format(**{k: v for k, v in PATH_VALUES.items() if f"{{{k}}}" in template})
        params = REQUIRED_QUERY.get(template, {})
        resp = httpx.get(f"{server.url}{url}", params=params, headers=auth("MW_T_READ"), timeout=60)
        answers.append((template, resp.status_code))
    return answers


def gate(server: ServerProcess, version: str, body: dict[str, object]) -> httpx.Response:
    url = f"{server.url}/v1/guard/fraud/{version}/run"
    return httpx.post(url, json=body, headers=auth("MW_T_ADMIN"), timeout=120)


def apply(server: ServerProcess, baseline: str, token: str = "MW_T_ADMIN") -> httpx.Response:
    url = f"{server.url}/v1/canary/fraud/2/apply"
    return httpx.post(url, json={"baseline": baseline}, headers=auth(token), timeout=60)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reads_never_act_and_rollbacks_reach_only_verified_known_good(
    served: ServerProcess, engine: Engine, tmp_path: Path, release_models: ReleaseModels
) -> None:
    v1, v2 = tmp_path / "v1.onnx", tmp_path / "v2.onnx"
    shutil.copy(release_models.reference, v1)
    shutil.copy(release_models.fp16, v2)
    register_version(engine, "fraud", "1", v1, activate=True)
    known_good = gate(served, "1", {"reference_version": "1"})
    assert known_good.status_code == 200 and "last-known-good" in known_good.text
    register_version(engine, "fraud", "2", v2, activate=True)  # the canary serves
    post(served, traffic("1", 400, seed=1))
    post(served, traffic("2", 300, shift=0.35, latency=60.0, seed=2))  # a failing canary
    post(served, traffic("ghost", 400, seed=5))  # fabricated: a version nobody registered

    before = state(engine)
    for baseline in ("ghost", "1"):
        read = httpx.get(f"{served.url}/v1/canary/fraud/2", params={"baseline": baseline},
                         headers=auth("MW_T_READ"), timeout=60)  # fmt: skip
        assert read.status_code == 409 and read.json()["verdict"] == "fail", read.text
    answers = get_every_route(served)
    assert {t for t, _ in answers} >= {"/v1/canary/{model}/{canary}", "/v1/models", "/readyz"}
    assert all(code < 500 for _, code in answers), answers
    assert state(engine) == before and active(engine) == "2"  # no GET changed anything

    assert apply(served, "1", token="MW_T_READ").status_code == 403
    ghost = apply(served, "ghost")
    assert ghost.status_code == 404 and "no version 'ghost'" in ghost.json()["detail"]
    assert active(engine) == "2"

    original = v1.read_bytes()
    v1.write_bytes(original[:-64] + bytes(64))  # swapped on disk after registration
    registered, swapped = hashlib.sha256(original).hexdigest(), sha256(v1)
    for refused in (apply(served, "1"), gate(served, "2", {"reference_version": "1"})):
        assert refused.status_code == 409, refused.text
        detail = refused.json()["detail"]
        assert str(v1) in detail and registered in detail and swapped in detail
        assert "\n" not in detail
    assert state(engine) == before  # nothing gated, nothing moved

    v1.write_bytes(original)
    done = apply(served, "1")
    assert done.status_code == 200, done.text
    doc = done.json()
    assert (doc["verdict"], doc["changed"], doc["active"]) == ("fail", True, "1")
    assert doc["action"] == "rolled back fraud from 2 to 1"
    again = apply(served, "1").json()
    assert again["changed"] is False and active(engine) == "1"
    with transaction(engine) as session:
        reasons = session.scalars(select(RollbackEvent.reason)).all()
    assert reasons == ["canary 2 failed against 1"]


def test_activate_refuses_a_swapped_file_while_the_daemon_serves(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    """`models activate` checks the file as rollback does: a version whose file changed after
    registration is refused (exit 2, one line naming the file and both hashes), and the
    running daemon still reports the active version it had."""
    v1, v2 = tmp_path / "v1.onnx", tmp_path / "v2.onnx"
    v1.write_bytes(b"model one, only hashed")
    v2.write_bytes(b"model two, only hashed")
    register_version(engine, "fraud", "1", v1, activate=True)
    register_version(engine, "fraud", "2", v2)
    proc = ServerProcess(write_config(tmp_path, database_url))
    try:
        proc.wait_ready()
        registered = sha256(v2)
        v2.write_bytes(b"model two, swapped on disk")
        cli = ("models", "activate", "--model", "fraud", "--version", "2")
        refused = run_cli(*cli, "--database-url", database_url)
        assert refused.returncode == 2, refused.stderr
        [line] = refused.stderr.strip().splitlines()
        assert str(v2) in line and registered in line and sha256(v2) in line
        listed = httpx.get(f"{proc.url}/v1/models", headers=auth("MW_T_READ"), timeout=10)
        assert [m["active"] for m in listed.json()["models"]] == ["1"], listed.text
        with transaction(engine) as session:
            assert session.scalars(select(RollbackEvent)).all() == []

        v2.write_bytes(b"model two, only hashed")
        done = run_cli(*cli, "--database-url", database_url)
        assert done.returncode == 0, done.stderr
        listed = httpx.get(f"{proc.url}/v1/models", headers=auth("MW_T_READ"), timeout=10)
        assert [m["active"] for m in listed.json()["models"]] == ["2"], listed.text
    finally:
        proc.terminate()


IN_OPEN = 0x20  # <sys/inotify.h>
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then `len` bytes of name)


class Opens:
    """Counts every open of some files by any process (Linux inotify): how often the daemon
    reads a model file is seen, not guessed."""

    def __init__(self, paths: list[Path]) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        self.paths = paths
        self.watches = [libc.inotify_add_watch(self.fd, str(p).encode(), IN_OPEN) for p in paths]
        self.opens = [0] * len(paths)

    def counts(self) -> list[int]:
        with contextlib.suppress(BlockingIOError):
            while data := os.read(self.fd, 65536):
                at = 0
                while at < len(data):
                    wd, mask, _, size = EVENT.unpack_from(data, at)
                    if mask & IN_OPEN:
                        self.opens[self.watches.index(wd)] += 1
                    at += EVENT.size + size
        return self.opens

    def close(self) -> None:
        os.close(self.fd)


def test_a_gate_run_reads_each_model_file_once(
    served: ServerProcess, engine: Engine, tmp_path: Path, release_models: ReleaseModels
) -> None:
    """The API's gate run checks the registered hash of the bytes it loads: each model file is
    read once (hash check, sessions and the recorded hashes), not once per use."""
    v1, v2 = tmp_path / "v1.onnx", tmp_path / "v2.onnx"
    shutil.copy(release_models.reference, v1)
    shutil.copy(release_models.fp16, v2)
    register_version(engine, "fraud", "1", v1, activate=True)
    register_version(engine, "fraud", "2", v2)
    opens = Opens([v1, v2])
    try:
        run = gate(served, "2", {"reference_version": "1"})
        assert run.status_code in (200, 409) and "gate_run_id" in run.json()["run"], run.text
        assert opens.counts() == [1, 1]
    finally:
        opens.close()
    with transaction(engine) as session:
        [stored] = session.execute(select(GateRun.reference_sha256, GateRun.candidate_sha256))
    assert tuple(stored) == (sha256(v1), sha256(v2))
