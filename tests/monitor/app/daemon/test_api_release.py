"""Gate verdicts, gate runs and rollback over HTTP, against a real server and real ONNX models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from guards.registry import list_models, register_version
from monitor.storage import GateRun, RollbackEvent, transaction
from tests.conftest import run_cli
from tests.monitor.app.daemon.conftest import (
    ReleaseModels,
    ServerProcess,
    auth,
    db_engine,
    write_config,
)

# The configured golden set runs at fp16 tolerances; a request may ask for fp32's.
FP16_RUN: dict[str, object] = {}
STRICT_RUN = {"preset": "fp32"}


def _golden_config(golden: Path) -> str:
    return f"""\
guards:
  latency_batch_sizes: []
  golden_sets:
    fraud:
      path: {golden}
      preset: fp16
      label_column: label
      id_column: id
      features: [{", ".join(f"f{i}" for i in range(8))}]
"""


@pytest.fixture
def server(tmp_path: Path, release_models: ReleaseModels) -> Iterator[ServerProcess]:
    """A server whose `guards.golden_sets.fraud` is the release models' golden set."""
    url = f"sqlite:///{tmp_path / 'mw.db'}"
    run_cli("db", "upgrade", "--database-url", url)
    proc = ServerProcess(write_config(tmp_path, url, _golden_config(release_models.golden)))
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.terminate()


def _run(server: ServerProcess, version: str, body: dict[str, object]) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/guard/fraud/{version}/run",
        json=body,
        headers=auth("MW_T_ADMIN"),
        timeout=120,
    )


def _register_reference_and_fp16(tmp_path: Path, models: ReleaseModels) -> Engine:
    """Version 1 (the reference, active) and version 2 (its float16 build)."""
    engine = db_engine(tmp_path)
    register_version(engine, "fraud", "1", models.reference, activate=True)
    register_version(engine, "fraud", "2", models.fp16)
    return engine


def test_gate_endpoint_404_then_200_after_pass_then_409_after_fail(
    server: ServerProcess, tmp_path: Path, release_models: ReleaseModels
) -> None:
    engine = _register_reference_and_fp16(tmp_path, release_models)
    gate = f"{server.url}/v1/gate/fraud/2"

    before = httpx.get(gate, headers=auth("MW_T_READ"))
    assert before.status_code == 404
    assert before.json() == {
        "error": "not_found",
        "detail": "no gate run recorded for model 'fraud' version '2'",
    }

    passed = _run(server, "2", {**FP16_RUN, "golden": "fraud"})
    assert passed.status_code == 200, passed.text
    body = passed.json()
    assert body["verdict"] == "pass"
    # The reference is the active version's artifact (no last-known-good yet).
    assert body["run"]["reference"] == str(release_models.reference.resolve())
    assert body["run"]["action"] == "registry unchanged (not active)"
    got = httpx.get(gate, headers=auth("MW_T_READ"))
    assert got.status_code == 200 and got.json()["verdict"] == "pass"

    failed = _run(server, "2", STRICT_RUN)
    assert failed.status_code == 409, failed.text
    failing = [c["name"] for c in failed.json()["criteria"] if c["status"] == "fail"]
    assert "allclose[probabilities]" in failing
    latest = httpx.get(gate, headers=auth("MW_T_READ"))
    assert latest.status_code == 409
    assert latest.json()["verdict"] == "fail" and latest.json()["criteria"]
    relaxed = httpx.get(gate, params={"strict": "false"}, headers=auth("MW_T_READ"))
    assert relaxed.status_code == 200 and relaxed.json()["verdict"] == "fail"
    with transaction(engine) as s:
        assert s.scalar(select(func.count()).select_from(GateRun)) == 2


def test_failed_gate_run_of_active_version_rolls_back(
    server: ServerProcess, tmp_path: Path, release_models: ReleaseModels
) -> None:
    engine = db_engine(tmp_path)
    register_version(engine, "fraud", "1", release_models.reference, activate=True)
    # Version 1 against itself passes while active: it becomes last-known-good.
    own = _run(server, "1", {**FP16_RUN, "reference_version": "1"})
    assert own.status_code == 200 and "last-known-good" in own.json()["run"]["action"]
    register_version(engine, "fraud", "2", release_models.fp16, auto_rollback=True, activate=True)

    failed = _run(server, "2", STRICT_RUN)
    assert failed.status_code == 409
    assert failed.json()["run"]["action"] == "rolled back fraud from 2 to 1"
    assert list_models(engine)[0].active == "1"


def test_gate_run_errors_name_the_problem(
    server: ServerProcess, tmp_path: Path, release_models: ReleaseModels
) -> None:
    engine = db_engine(tmp_path)
    unknown = _run(server, "1", {})
    assert unknown.status_code == 404 and "no model 'fraud'" in unknown.json()["detail"]
    register_version(engine, "fraud", "1", release_models.reference, activate=True)
    alone = _run(server, "1", {})
    assert alone.status_code == 409 and "pass `reference_version`" in alone.json()["detail"]
    not_configured = _run(server, "1", {"golden": "churn", "reference_version": "1"})
    assert not_configured.status_code == 422
    assert not_configured.json()["detail"] == (
        "golden: no golden set named 'churn' in guards.golden_sets; configured: fraud"
    )
    typo = _run(server, "1", {"goldn": "x"})
    assert typo.status_code == 422 and typo.json()["detail"].startswith("body.goldn")
    bad_preset = _run(server, "1", {"preset": "int4"})
    assert (
        bad_preset.status_code == 422 and bad_preset.json()["errors"][0]["field"] == "body.preset"
    )


def test_gate_run_refuses_paths_without_touching_them(
    server: ServerProcess, tmp_path: Path, release_models: ReleaseModels
) -> None:
    engine = _register_reference_and_fp16(tmp_path, release_models)
    secret = tmp_path / "private.csv"
    secret.write_text("f0,label\n1,0\n")
    golden_answers = set()
    for path in (secret, tmp_path / "absent.csv", release_models.golden, "../golden.parquet"):
        for key in ("golden", "reference"):
            refused = _run(server, "2", {key: str(path)})
            assert refused.status_code == 422, refused.text
            assert refused.json()["errors"][0]["field"] == f"body.{key}"
            assert str(path) not in refused.text or key == "golden"
            if key == "golden":
                # Existing, absent and readable files get the same answer: no existence oracle.
                golden_answers.add(refused.text.replace(str(path), "PATH"))
    assert len(golden_answers) == 1
    assert "not a path" in golden_answers.pop()
    with transaction(engine) as s:
        assert s.scalar(select(func.count()).select_from(GateRun)) == 0


def test_gate_scopes(server: ServerProcess) -> None:
    url = f"{server.url}/v1/guard/fraud/1/run"
    assert httpx.post(url, json={}).status_code == 401
    for token in ("MW_T_READ", "MW_T_INGEST"):
        assert httpx.post(url, json={}, headers=auth(token)).status_code == 403
    gate = f"{server.url}/v1/gate/fraud/1"
    assert httpx.get(gate).status_code == 401
    assert httpx.get(gate, headers=auth("MW_T_INGEST")).status_code == 403


def test_rollback_moves_active_and_is_idempotent(
    server: ServerProcess, tmp_path: Path, release_models: ReleaseModels
) -> None:
    engine = db_engine(tmp_path)
    url = f"{server.url}/v1/models/fraud/rollback"
    register_version(engine, "fraud", "1", release_models.reference, activate=True)
    register_version(engine, "fraud", "2", release_models.fp16, activate=True)

    body = {"to": "1", "reason": "canary errors"}
    assert httpx.post(url, json=body, headers=auth("MW_T_READ")).status_code == 403
    never_gated = httpx.post(url, json=body, headers=auth("MW_T_ADMIN"))
    assert never_gated.status_code == 409 and "never gated" in never_gated.json()["detail"]
    assert _run(server, "1", {**FP16_RUN, "reference_version": "1"}).status_code == 200
    first = httpx.post(url, json=body, headers=auth("MW_T_ADMIN"))
    assert first.status_code == 200, first.text
    assert first.json()["active"] == "1" and first.json()["changed"] is True
    assert first.json()["from_version"] == "2"
    again = httpx.post(url, json=body, headers=auth("MW_T_ADMIN"))
    assert again.status_code == 200
    assert again.json() == {
        "model": "fraud", "active": "1", "changed": False, "from_version": None, "event_id": None
    }  # fmt: skip
    models = httpx.get(f"{server.url}/v1/models", headers=auth("MW_T_READ")).json()["models"]
    assert models[0]["active"] == "1"
    with transaction(engine) as s:
        reasons = s.scalars(select(RollbackEvent.reason)).all()
    assert reasons == ["canary errors"]


def test_rollback_errors(
    server: ServerProcess, tmp_path: Path, release_models: ReleaseModels
) -> None:
    url = f"{server.url}/v1/models/fraud/rollback"
    admin = auth("MW_T_ADMIN")
    unknown = httpx.post(url, json={"to": None, "reason": "x"}, headers=admin)
    assert unknown.status_code == 404
    register_version(db_engine(tmp_path), "fraud", "1", release_models.reference, activate=True)
    no_lkg = httpx.post(url, json={"reason": "x"}, headers=admin)
    assert no_lkg.status_code == 409 and no_lkg.json()["error"] == "conflict"
    bad_version = httpx.post(url, json={"to": "9"}, headers=admin)
    assert bad_version.status_code == 404 and "known: 1" in bad_version.json()["detail"]
    empty_reason = httpx.post(url, json={"reason": ""}, headers=admin)
    assert empty_reason.status_code == 422 and empty_reason.json()["detail"].startswith(
        "body.reason"
    )


def test_gate_run_uses_the_configured_golden_set(
    server: ServerProcess, tmp_path: Path, release_models: ReleaseModels
) -> None:
    _register_reference_and_fp16(tmp_path, release_models)
    passed = _run(server, "2", {})
    assert passed.status_code == 200, passed.text
    assert passed.json()["preset"] == "fp16"
    assert passed.json()["run"]["golden"] == "fraud"
    # A request's own keys override the configured ones.
    strict = _run(server, "2", {"preset": "fp32"})
    assert strict.status_code == 409 and strict.json()["preset"] == "fp32"
