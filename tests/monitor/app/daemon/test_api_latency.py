"""`GET /v1/models/{model}/latency` and the SLO route's latency detail, through a running `serve`:
stage timings posted over HTTP, percentiles per stage and the stage that moved between windows.

Measures end to end on the same server: a generative model's events with OpenTelemetry GenAI
names and GPU samples; TTFT percentiles and GPU utilisation beside latency, the TTFT and GPU
memory SLOs, the Prometheus gauges named after the OTel metrics, and tokens on a model that is
not generative rejected with a reason."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from monitor.app.daemon._ingest_api import Event
from monitor.common.measures import MEASURES
from tests.monitor.app.daemon.conftest import CONFIG, ServerProcess, _serve, auth, post_drained
from tests.monitor.app.daemon.test_canary import post

# `chat`: a generative model, for test_measures_served.py (which shares this server)
CHAT = """\
  - name: chat
    generative: true
    slo: {{min_events: 50, measures: {{ttft_p95_ms: 400, gpu_memory_max_mb: 70000}}}}
"""
LATENCY_CONFIG = CONFIG.replace(
    "    slices: [region]\n", "    slices: [region]\n    slo: {{latency_p95_ms: 40}}\n" + CHAT
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


@pytest.fixture(scope="module")
def served(latency_server: ServerProcess) -> ServerProcess:
    server = latency_server
    now = datetime.now(UTC).isoformat()

    def chat(i: int) -> dict[str, Any]:
        return {
            "request_id": f"c{i}", "model": "chat", "model_version": "1", "timestamp": now,
            "features": {"prompt_chars": 100.0 + i}, "prediction": "ok", "latency_ms": 900.0,
            "gen_ai.server.time_to_first_token": 0.25 if i < 90 else 0.6,  # seconds
            "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 120,
            "gpu_utilization_percent": 97.0, "DCGM_FI_DEV_FB_USED": 60_000,
        }  # fmt: skip

    post(server, [chat(i) for i in range(100)])
    return server


def test_ttft_and_gpu_beside_latency_slos_and_metrics(served: ServerProcess) -> None:
    windows = get(served, "chat/latency", since="1h").json()["windows"]
    measures = {m["measure"]: m for m in windows[0]["measures"]}
    assert measures["ttft_ms"]["n"] == 100
    assert measures["ttft_ms"]["p50"] == pytest.approx(250, rel=0.01)
    assert measures["ttft_ms"]["p95"] == pytest.approx(600, rel=0.01)
    assert measures["gpu_utilization_percent"]["p95"] == pytest.approx(97, rel=0.01)
    assert measures["tokens_per_s"]["p50"] == pytest.approx(120 / 0.9, rel=0.01)  # derived
    slo = {r["objective"]: r for r in get(served, "chat/slo", since="1h").json()[
        "results"] if r["slice"] is None}  # fmt: skip
    assert slo["ttft_p95_ms"]["status"] == "breach" and slo["ttft_p95_ms"]["threshold"] == 400
    assert slo["gpu_memory_max_mb"]["status"] == "ok"
    wanted = 'gen_ai_server_time_to_first_token_seconds{model="chat",quantile="0.5"'
    deadline = time.monotonic() + 60  # published on the next evaluation tick (every second)
    while wanted not in (text := httpx.get(f"{served.url}/metrics").text):
        assert time.monotonic() < deadline, "no measure metric published"
        time.sleep(0.5)
    line = next(x for x in text.splitlines() if x.startswith(wanted))
    assert float(line.split()[-1]) == pytest.approx(0.25, rel=0.01)  # seconds, as OTel's
    assert "modelwatch_resource_gpu_memory_megabytes{" in text
    assert "gen_ai_usage_output_tokens{" in text


def test_tokens_on_a_model_not_generative_are_a_dead_letter(served: ServerProcess) -> None:
    bad = {"request_id": "f1", "model": "fraud", "model_version": "1", "timestamp": time.time(),
           "features": {"amount": 1.0}, "prediction": 0.5, "output_tokens": 10}  # fmt: skip
    result = post_drained(served.url, [bad])
    assert result["valid"] == 0 and result["dead_letters"] == 1, result
    (dead,) = result["first_dead_letters"]
    assert (dead["reason"], dead["detail"]) == (
        "not_generative", "output_tokens: a generative measure, but the model is not declared "
        "generative",
    )  # fmt: skip


def test_the_ingest_schema_documents_every_measure() -> None:
    assert set(MEASURES) <= set(Event.model_fields)
