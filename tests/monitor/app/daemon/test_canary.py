"""Live canary analysis through a running `serve`: stable and canary traffic over HTTP, the
verdict from `GET /v1/canary/...` and from `modelwatch canary`; the read never rolls back."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from guards.registry import activate, list_models, register_version
from tests.conftest import run_cli
from tests.monitor.app.daemon.conftest import CONFIG, TOKENS, ServerProcess, auth, db_engine

CANARY_CONFIG = CONFIG.replace(
    "    slices: [region]\n",
    "    slices: [region]\n    canary: {{action: rollback}}\n    slo: {{latency_p95_ms: 80}}\n",
)


@pytest.fixture
def canary_server(tmp_path: Path) -> Iterator[ServerProcess]:
    from tests.monitor.app.daemon.conftest import _serve

    yield from _serve(tmp_path, CANARY_CONFIG)


def traffic(version: str, n: int, shift: float = 0.0, latency: float = 20.0,
            seed: int = 1) -> list[dict[str, Any]]:  # fmt: skip
    rng = random.Random(seed)
    now = datetime.now(UTC) - timedelta(seconds=5)
    return [
        {
            "request_id": f"{version}-{i}",
            "model": "fraud",
            "model_version": version,
            "timestamp": (now - timedelta(seconds=rng.uniform(0, 60))).isoformat(),
            "features": {"amount": rng.lognormvariate(3, 1), "country": rng.choice(["de", "fr"])},
            "prediction": min(1.0, rng.betavariate(2, 5) + shift),
            "metadata": {"region": rng.choice(["eu", "us"])},
            "latency_ms": rng.lognormvariate(0, 0.2) * latency,
            "error": "timeout" if rng.random() < 0.01 else None,
        }
        for i in range(n)
    ]


def post(server: ServerProcess, events: list[dict[str, Any]]) -> None:
    for start in range(0, len(events), 200):
        resp = httpx.post(f"{server.url}/v1/events", json=events[start : start + 200],
                          headers=auth("MW_T_INGEST"), timeout=60)  # fmt: skip
        assert resp.status_code == 202, resp.text
        assert resp.json()["queued"] == len(events[start : start + 200])
    drained(server)


def drained(server: ServerProcess, timeout: float = 60) -> None:
    """Wait until the intake drain has aggregated every queued request."""
    deadline = time.monotonic() + timeout
    while httpx.get(f"{server.url}/readyz").json()["intake"]["backlog_requests"]:
        assert time.monotonic() < deadline, "the intake backlog never drained"
        time.sleep(0.2)


def verdict(server: ServerProcess, canary: str, **params: str) -> httpx.Response:
    return httpx.get(
        f"{server.url}/v1/canary/fraud/{canary}",
        params={"baseline": "1", **params},
        headers=auth("MW_T_READ"),
        timeout=60,
    )


def test_canary_verdicts_over_http_and_cli(canary_server: ServerProcess, tmp_path: Path) -> None:
    post(canary_server, traffic("1", 1500, seed=1))
    post(canary_server, traffic("2", 600, shift=0.35, latency=60.0, seed=2))  # bad canary
    post(canary_server, traffic("3", 600, seed=3))  # same as stable
    post(canary_server, traffic("4", 20, seed=4))  # too little traffic
    artifact = tmp_path / "model.onnx"
    artifact.write_bytes(b"not read by canary analysis")
    engine = db_engine(tmp_path)
    register_version(engine, "fraud", "1", artifact, activate=True)
    register_version(engine, "fraud", "2", artifact, settings={"precision": "fp16"})
    activate(engine, "fraud", "2")  # the canary is serving
    listed = httpx.get(f"{canary_server.url}/v1/models", headers=auth("MW_T_READ")).json()
    assert listed["models"][0]["settings"] == {"1": {}, "2": {"precision": "fp16"}}

    bad = verdict(canary_server, "2")
    assert bad.status_code == 409, bad.text
    doc = bad.json()
    assert set(doc) == {"model", "canary", "baseline", "since", "verdict", "criteria"}
    assert (doc["model"], doc["canary"], doc["baseline"], doc["verdict"]) == (
        "fraud",
        "2",
        "1",
        "fail",
    )
    failed = {c["name"] for c in doc["criteria"] if c["status"] == "fail"}
    assert {"prediction", "latency_p95"} <= failed
    assert "feature:amount" not in failed  # inputs did not move
    p95 = next(c for c in doc["criteria"] if c["name"] == "latency_p95")
    assert p95["canary"] > 2 * p95["baseline"] and p95["n_canary"] == 600
    assert set(p95) == {
        "name",
        "status",
        "canary",
        "baseline",
        "threshold",
        "n_canary",
        "n_baseline",
    }
    # A read changes nothing, whatever canary.action says; the admin POST carries it out, and
    # only to a known-good stable (version 1 was never gated).
    assert list_models(engine)[0].active == "2"
    apply = f"{canary_server.url}/v1/canary/fraud/2/apply"
    read = httpx.post(apply, json={"baseline": "1"}, headers=auth("MW_T_READ"), timeout=60)
    assert read.status_code == 403
    refused = httpx.post(apply, json={"baseline": "1"}, headers=auth("MW_T_ADMIN"), timeout=60)
    assert refused.status_code == 409 and "not a rollback target" in refused.json()["detail"]
    assert list_models(engine)[0].active == "2"

    good = verdict(canary_server, "3")
    assert good.status_code == 200, good.text
    assert good.json()["verdict"] == "pass"
    assert all(c["status"] == "ok" for c in good.json()["criteria"])

    small = verdict(canary_server, "4")
    assert small.status_code == 409 and small.json()["verdict"] == "inconclusive"
    assert {c["status"] for c in small.json()["criteria"]} == {"insufficient_data"}
    assert verdict(canary_server, "4", strict="false").status_code == 200

    slo = httpx.get(f"{canary_server.url}/v1/models/fraud/slo", headers=auth("MW_T_READ"))
    assert slo.status_code == 200, slo.text
    p95 = {(r["version"], r["slice"] and r["slice"]["region"]): r
           for r in slo.json()["results"] if r["objective"] == "latency_p95_ms"}  # fmt: skip
    assert {k[1] for k in p95} == {None, "eu", "us"}  # per window and slice
    assert p95[("1", None)]["status"] == "ok" and p95[("1", None)]["threshold"] == 80
    assert p95[("2", None)]["value"] > 2 * p95[("1", None)]["value"]
    assert p95[("4", None)]["status"] == "insufficient_data"  # 20 requests
    wanted = (
        'modelwatch_slo_value{model="fraud",objective="latency_p95_ms",slice="all",version="1"}'
    )
    deadline = time.monotonic() + 60  # published on the next evaluation tick (every second)
    while wanted not in (text := httpx.get(f"{canary_server.url}/metrics").text):
        assert time.monotonic() < deadline, "no SLO metric published"
        time.sleep(0.5)
    assert 'modelwatch_slo_threshold{model="fraud",objective="latency_p95_ms"' in text

    db = ["--database-url", f"sqlite:///{tmp_path / 'mw.db'}"]
    cfg = ["--config", str(tmp_path / "mw.yaml")]
    out = tmp_path / "canary.json"
    cli_bad = run_cli("canary", "fraud", "2", "--baseline", "1", "--json", str(out), *cfg, *db,
                      env=TOKENS)  # fmt: skip
    assert cli_bad.returncode == 1, cli_bad.stderr
    assert "FAIL" in cli_bad.stdout and "latency_p95" in cli_bad.stdout
    assert "canary 2 settings: fp16" in cli_bad.stdout
    assert json.loads(out.read_text())["verdict"] == "fail"
    cli_good = run_cli("canary", "fraud", "3", "--baseline", "1", "--json", "-", *cfg, *db,
                       env=TOKENS)  # fmt: skip
    assert cli_good.returncode == 0 and json.loads(cli_good.stdout)["verdict"] == "pass"
    cli_small = run_cli("canary", "fraud", "4", "--baseline", "1", *cfg, *db, env=TOKENS)
    assert cli_small.returncode == 3 and "INCONCLUSIVE" in cli_small.stdout
    # `--apply` carries out canary.action like the admin POST, with the same refusal.
    cli_apply = run_cli("canary", "fraud", "2", "--baseline", "1", "--apply", *cfg, *db,
                        env=TOKENS)  # fmt: skip
    assert cli_apply.returncode == 2 and "never gated" in cli_apply.stderr
    assert list_models(engine)[0].active == "2"


def test_bad_canary_requests_are_one_line_errors(
    canary_server: ServerProcess, tmp_path: Path
) -> None:
    post(canary_server, traffic("1", 50))
    unknown = verdict(canary_server, "2", since="soon")
    assert unknown.status_code == 422 and "since: 'soon'" in unknown.json()["detail"]
    no_model = httpx.get(f"{canary_server.url}/v1/canary/ghost/2", params={"baseline": "1"},
                         headers=auth("MW_T_READ"), timeout=30)  # fmt: skip
    assert no_model.status_code == 404 and "no model 'ghost'" in no_model.json()["detail"]
    same = verdict(canary_server, "1")
    assert same.status_code == 422 and "both version '1'" in same.json()["detail"]
    missing = httpx.get(f"{canary_server.url}/v1/canary/fraud/2", headers=auth("MW_T_READ"))
    assert missing.status_code == 422
    assert httpx.get(f"{canary_server.url}/v1/canary/fraud/2?baseline=1").status_code == 401
    cli = run_cli("canary", "fraud", "2", "--baseline", "9",
                  "--database-url", f"sqlite:///{tmp_path / 'mw.db'}")  # fmt: skip
    assert cli.returncode == 2 and "version '9' has no windows" in cli.stderr
    assert "Traceback" not in cli.stderr
