"""The gate verdict as Argo Rollouts and Flagger read it: the requests they send, the status
codes and the jsonPath fields the analysis template and webhooks of docs/how-to/canary.md use."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import httpx
import pytest

from monitor.storage import GateRun, transaction, utcnow
from tests.monitor.app.daemon.conftest import TOKENS, ServerProcess, auth, db_engine

HASHES = {"reference_sha256": "a" * 64, "candidate_sha256": "b" * 64, "golden_sha256": "c" * 64}


def _gate_run(directory: Path, version: str, verdict: str, age: timedelta) -> int:
    criteria = [{"name": "flip_rate", "value": 0.01, "threshold": 0.02, "passed": True}]
    doc = {"verdict": verdict, "preset": "fp16", "criteria": criteria}
    with transaction(db_engine(directory)) as session:
        run = GateRun(
            model="fraud",
            version=version,
            preset="fp16",
            verdict=verdict,
            criteria=criteria,
            verdict_json=doc,
            providers={},
            timing={},
            created_at=utcnow() - age,
            **HASHES,
        )
        session.add(run)
        session.flush()
        return run.id


@pytest.fixture(scope="module")
def gated(module_server: ServerProcess) -> ServerProcess:
    """fraud 2 passed a minute ago, 3 failed, 4 passed two days ago, 5 was never gated.

    Shared by the module: every test only reads verdicts (Flagger's POST reads too)."""
    directory = module_server.directory
    _gate_run(directory, "2", "fail", timedelta(hours=1))  # superseded by the newer pass
    _gate_run(directory, "2", "pass", timedelta(minutes=1))
    _gate_run(directory, "3", "fail", timedelta(minutes=1))
    _gate_run(directory, "4", "pass", timedelta(days=2))
    return module_server


def _argo(server: ServerProcess, version: str, **params: str) -> httpx.Response:
    """Argo Rollouts' web provider: a GET with the headers of the AnalysisTemplate."""
    url = f"{server.url}/v1/gate/fraud/{version}"
    headers = {**auth("MW_T_READ"), "Content-Type": "application/json"}
    return httpx.get(url, params={"strict": "false", **params}, headers=headers)


def test_verdict_body_names_model_version_run_time_and_artifacts(gated: ServerProcess) -> None:
    resp = httpx.get(f"{gated.url}/v1/gate/fraud/2", headers=auth("MW_T_READ"))
    assert resp.status_code == 200
    body = resp.json()
    assert (body["model"], body["version"], body["verdict"]) == ("fraud", "2", "pass")
    assert isinstance(body["gate_run_id"], int) and body["stale"] is False
    assert body["artifacts"] == HASHES
    assert body["criteria"][0]["name"] == "flip_rate" and body["preset"] == "fp16"
    created = body["created_at"]
    assert utcnow() - timedelta(minutes=5) < datetime.fromisoformat(created) < utcnow()


@pytest.mark.parametrize(
    ("version", "params", "status", "verdict"),
    [
        ("2", {}, 200, "pass"),
        ("3", {}, 409, "fail"),
        ("4", {}, 200, "pass"),
        ("4", {"max_age": "1h"}, 409, "pass"),  # stale: the body says so
        ("2", {"max_age": "1h"}, 200, "pass"),
    ],
)
def test_strict_answers(
    gated: ServerProcess, version: str, params: dict[str, str], status: int, verdict: str
) -> None:
    url = f"{gated.url}/v1/gate/fraud/{version}"
    resp = httpx.get(url, params=params, headers=auth("MW_T_READ"))
    assert resp.status_code == status
    assert resp.json()["verdict"] == verdict
    assert resp.json()["stale"] is (params != {} and version == "4")


def test_never_gated_strict_is_404(gated: ServerProcess) -> None:
    resp = httpx.get(f"{gated.url}/v1/gate/fraud/5", headers=auth("MW_T_READ"))
    assert resp.status_code == 404 and resp.json()["error"] == "not_found"


@pytest.mark.parametrize(
    ("version", "params", "verdict", "run"),
    [
        ("2", {}, "pass", True),
        ("3", {}, "fail", True),
        ("4", {"max_age": "1h"}, "inconclusive", True),
        ("5", {}, "inconclusive", False),
    ],
)
def test_argo_web_provider_always_gets_200_and_reads_verdict(
    gated: ServerProcess, version: str, params: dict[str, str], verdict: str, run: bool
) -> None:
    resp = _argo(gated, version, **params)
    # Argo counts a non-2xx as a measurement error; `{$.verdict}` decides instead.
    assert resp.status_code == 200
    assert resp.json()["verdict"] == verdict
    assert (resp.json()["gate_run_id"] is not None) is run


def test_bad_max_age_is_422(gated: ServerProcess) -> None:
    resp = httpx.get(
        f"{gated.url}/v1/gate/fraud/2", params={"max_age": "soon"}, headers=auth("MW_T_READ")
    )
    assert resp.status_code == 422 and resp.json()["detail"].startswith("max_age:")


def _flagger(server: ServerProcess, metadata: dict[str, str], **headers: str) -> httpx.Response:
    """Flagger's webhook POST, as its docs show it (name, namespace, phase, checksum, type)."""
    payload = {
        "name": "fraud-scorer",
        "namespace": "ml",
        "phase": "Progressing",
        "checksum": "85d557f47b",
        "type": "confirm-promotion",
        "metadata": metadata,
    }
    return httpx.post(f"{server.url}/v1/flagger/gate", json=payload, headers=headers)


@pytest.mark.parametrize(
    ("version", "extra", "status"),
    [("2", {}, 200), ("3", {}, 409), ("4", {"max_age": "1h"}, 409), ("5", {}, 404)],
)
def test_flagger_webhook_promotes_only_a_fresh_pass(
    gated: ServerProcess, version: str, extra: dict[str, str], status: int
) -> None:
    meta = {"model": "fraud", "version": version, **extra}
    resp = _flagger(gated, meta, **auth("MW_T_READ"))
    assert resp.status_code == status, resp.text
    if status != 404:
        assert resp.json()["version"] == version


def test_flagger_token_may_come_in_metadata(gated: ServerProcess) -> None:
    meta = {"model": "fraud", "version": "2", "token": TOKENS["MW_T_READ"]}
    assert _flagger(gated, meta).status_code == 200
    assert _flagger(gated, {**meta, "token": "wrong"}).status_code == 401
    assert _flagger(gated, {"model": "fraud", "version": "2"}).status_code == 401
    ingest_only = {**meta, "token": TOKENS["MW_T_INGEST"]}
    assert _flagger(gated, ingest_only).status_code == 403


def test_flagger_model_defaults_to_the_canary_name_and_version_is_required(
    gated: ServerProcess,
) -> None:
    unknown = _flagger(gated, {"version": "2"}, **auth("MW_T_READ"))
    assert unknown.status_code == 404 and "'fraud-scorer'" in unknown.json()["detail"]
    missing = _flagger(gated, {"model": "fraud"}, **auth("MW_T_READ"))
    assert missing.status_code == 422 and missing.json()["detail"].startswith("metadata.version")
