"""`GET /v1/models/{model}/latency` and the SLO route's latency detail, through a running `serve`:
stage timings posted over HTTP, percentiles per stage and the stage that moved between windows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.monitor.app.daemon.conftest import CONFIG, ServerProcess, _serve, auth
from tests.monitor.app.daemon.test_canary import post

LATENCY_CONFIG = CONFIG.replace(
    "    slices: [region]\n", "    slices: [region]\n    slo: {{latency_p95_ms: 40}}\n"
).replace("collect:\n", "collect:\n  window: 1m\n")


@pytest.fixture(scope="module")
def latency_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve(tmp_path_factory.mktemp("serve"), LATENCY_CONFIG)


def events(tag: str, at: datetime, total: float, model: float) -> list[dict[str, Any]]:
    return [
        {
            "request_id": f"{tag}-{i}",
            "model": "fraud",
            "model_version": "1",
            "timestamp": at.isoformat(),
            "features": {"amount": 1.0 + i},
            "prediction": 0.5,
            "metadata": {"region": "eu" if i % 2 else "us"},
            "latency_ms": total,
            "queue_ms": 5.0,
            "model_ms": model,  # the stage name of `model_latency_ms`
            "network_ms": 5.0,
        }
        for i in range(100)
    ]


@pytest.fixture(scope="module")
def posted(latency_server: ServerProcess) -> ServerProcess:
    now = datetime.now(UTC)
    post(latency_server, events("a", now - timedelta(minutes=3), 30.0, 20.0))
    post(latency_server, events("b", now - timedelta(seconds=5), 48.0, 38.0))
    return latency_server


def get(server: ServerProcess, path: str, **params: str) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/models/{path}", params=params, headers=auth("MW_T_READ"))


MOVED = re.compile(r"^p95 \+1[78] ms, of which model \+1[78] ms$")


def test_latency_per_stage_and_the_stage_that_moved(posted: ServerProcess) -> None:
    resp = get(posted, "fraud/latency", since="1h")
    assert resp.status_code == 200, resp.text
    windows = resp.json()["windows"]
    overall = [w for w in windows if w["slice"] is None]
    assert len(overall) == 2 and overall[0]["window_start"] > overall[1]["window_start"]
    newest, oldest = overall
    assert [s["stage"] for s in newest["stages"]] == ["queue", "model", "network"]
    model = newest["stages"][1]
    assert model["n"] == 100 and model["p95"] == pytest.approx(38.0, rel=0.01)
    assert model["p95_share"] == pytest.approx(38 / 48, rel=0.02)
    assert newest["p95"] == pytest.approx(48.0, rel=0.01) and newest["n"] == 100
    assert oldest["change"] is None  # the first window in the range
    change = newest["change"]
    assert change["stage"] == "model" and MOVED.match(change["text"]), change
    eu = get(posted, "fraud/latency", since="1h", slice="region=eu").json()["windows"]
    assert {w["slice"]["region"] for w in eu} == {"eu"} and len(eu) == 2
    assert MOVED.match(eu[0]["change"]["text"])


def test_slo_latency_results_name_the_stage(posted: ServerProcess) -> None:
    results = get(posted, "fraud/slo", since="1h").json()["results"]
    p95 = [r for r in results if r["objective"] == "latency_p95_ms" and r["slice"] is None]
    assert p95[0]["status"] == "breach"
    assert p95[0]["detail"].startswith("p95 +1") and "of which model" in p95[0]["detail"]
    assert "stage p95: model 37.7 ms (79%)" in p95[0]["detail"]  # 38 within 1 %
    assert all(r["detail"] is None for r in results if r["objective"] == "error_rate")


def test_bad_requests_are_one_line_errors(latency_server: ServerProcess) -> None:
    assert get(latency_server, "fraud/latency", since="yesterday").status_code == 422
    assert get(latency_server, "fraud/latency", slice="{bad").status_code == 422
    assert get(latency_server, "nope/latency").status_code == 404
    anonymous = httpx.get(f"{latency_server.url}/v1/models/fraud/latency")
    assert anonymous.status_code == 401
