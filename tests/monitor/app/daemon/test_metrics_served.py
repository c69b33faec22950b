"""What `modelwatch serve` exports, as a real Prometheus and promtool see it."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from dashboards._promboards import PANEL_QUERIES
from guards.registry import optimization_settings, register_version
from monitor.detectors import DriftResult
from monitor.outcomes import OutcomeResult
from monitor.results.store import (
    store_drift_results,
    store_estimated_results,
    store_outcome_results,
)
from monitor.storage import AlertNotification, AlertState, GateRun, transaction, utcnow
from tests.monitor.app.daemon.conftest import CONFIG, ServerProcess, _serve, auth, db_engine
from tests.monitor.app.daemon.test_api_ingest import event
from tests.services.prometheus import PrometheusServer

W = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def _criteria() -> list[dict[str, object]]:
    return [
        {"name": "flip_rate[label]", "slice": {"segment": "high"}, "value": 0.157},
        {"name": "flip_rate[label]", "slice": {"segment": "normal"}, "value": 0.0014},
        {"name": "flip_rate[label]", "slice": None, "value": 0.02},
        {"name": "metric_drop:accuracy[label]", "slice": {"segment": "high"}, "value": 4.0},
    ]


SLO = """\
    slo:
      latency_p95_ms: 50
      error_rate: 0.05
      cost_per_1k: {{hourly_price: 0.7, max: 5}}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The daemon with serving SLOs for `fraud` (the SLO panels' series); the module's tests
    only read what it publishes, so they share it."""
    yield from _serve(
        tmp_path_factory.mktemp("serve"),
        CONFIG.replace("    slices: [region]\n", "    slices: [region]\n" + SLO),
    )


def _seed(tmp_path: Path) -> None:
    engine = db_engine(tmp_path)
    artifact = tmp_path / "fraud-2.onnx"
    artifact.write_bytes(b"onnx")
    settings = optimization_settings(precision="int8", runtime="ort 1.31 CUDA",
                                     meta={"image": "serve:1.4"})  # fmt: skip
    register_version(engine, "fraud", "2", artifact, settings=settings)
    drift = DriftResult("amount", None, "numeric", "psi", 0.3, 0.2, None, 1000, 500, "drift")
    # retired: its newest window is older than the one before the model's newest
    store_drift_results(engine, "fraud", "1", (W - 2 * HOUR, W - HOUR), [drift])
    store_drift_results(engine, "fraud", "2", (W, W + HOUR), [drift])
    outcome = OutcomeResult("accuracy", {"region": "eu"}, 0.81, 0.78, 0.84, 0.9, 0.05, 700, "ok")
    store_outcome_results(engine, "fraud", "2", (W, W + HOUR), [outcome])
    store_estimated_results(engine, "fraud", "2", (W, W + HOUR), _estimated())
    now = utcnow()
    with transaction(engine) as s:
        s.add(_gate_run())
        old = _gate_run()  # gated before scheduler.retention_days (90): not exported
        old.version, old.created_at = "0-old", now - timedelta(days=200)
        s.add(old)
        s.add(_alert(now))
        s.add(_dead_notification(now))


def _estimated() -> list[dict[str, object]]:
    common = {"slice_key": "", "n": 700, "ci_low": None, "ci_high": None, "realized": None}
    accuracy = {
        **common,
        "metric": "accuracy",
        "value": 0.8,
        "ci_low": 0.75,
        "ci_high": 0.85,
        "realized": 0.82,
        "threshold_low": 0.78,
        "threshold_high": None,
        "status": "ok",
    }
    error = {**common, "metric": "reconstruction_error", "value": 1.9, "threshold_low": 1.0,
             "threshold_high": 1.6, "status": "drift"}  # fmt: skip
    return [accuracy, error]


def _gate_run() -> GateRun:
    hashes = {f"{k}_sha256": k[0] * 64 for k in ("reference", "candidate", "golden")}
    doc = {"verdict": "fail", "preset": "int8", "criteria": _criteria()}
    return GateRun(
        model="fraud",
        version="3-int8",
        preset="int8",
        verdict="fail",
        criteria=_criteria(),
        verdict_json=doc,
        providers={},
        timing={},
        **hashes,
    )


def _alert(now: datetime) -> AlertState:
    return AlertState(
        fingerprint="f1",
        rule="feature_drift",
        labels={"model": "fraud"},
        annotations={},
        value=0.3,
        state="firing",
        active_since=now,
        last_active_at=now,
        fired_at=now,
        resolved_at=None,
        muted_by=None,
        updated_at=now,
    )


def _dead_notification(now: datetime) -> AlertNotification:
    return AlertNotification(
        kind="notify",
        receiver="hook",
        group_key="g",
        seq=1,
        idempotency_key="k1",
        payload={},
        status="dead",
        attempts=5,
        next_attempt_at=now,
        created_at=now,
    )


def _exposition(server: ServerProcess, accept: str | None = None) -> httpx.Response:
    headers = {"Accept": accept} if accept else {}
    return httpx.get(f"{server.url}/metrics", headers=headers)


def _published(server: ServerProcess, *needles: str, timeout: float = 60) -> str:
    """Wait until one sample line of /metrics contains every needle.

    A labelled family's `# HELP`/`# TYPE` lines are on /metrics before it has any series, so
    only a sample line says that a series was published.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = _exposition(server).text
        samples = (line for line in text.splitlines() if not line.startswith("#"))
        if any(all(n in line for n in needles) for line in samples):
            return text
        time.sleep(0.5)
    raise AssertionError(f"{needles!r} never published")


@pytest.fixture(scope="module")
def seeded(server: ServerProcess) -> ServerProcess:
    _seed(server.directory)
    httpx.get(f"{server.url}/v1/models", headers=auth("MW_T_READ"))  # one request to count
    body = [event(i, latency_ms=20.0 + i, queue_ms=2.0, model_ms=15.0 + i) for i in range(5)]
    body += [{**event(9), "timestamp": "not a time"}]
    headers = {**auth("MW_T_INGEST"), "Idempotency-Key": "served-1"}
    assert httpx.post(f"{server.url}/v1/events", json=body, headers=headers).status_code == 202
    _published(server, 'slice="segment=normal"')
    # The SLO series come from the ingested events: seconds later than the seeded ones (the
    # first refresh after the drain aggregated them). Wait for a series, not the family name.
    _published(server, "modelwatch_slo_value{", 'objective="error_rate"', 'slice="all"')
    return server


def test_stage_latency_is_published_per_stage(seeded: ServerProcess) -> None:
    # the events' stage timings: one series per stage they reported, none for the others
    text = _published(seeded, "modelwatch_latency_stage_p95_seconds{", 'stage="model"')
    stages = {
        line.split('stage="')[1].split('"')[0]
        for line in text.splitlines()
        if line.startswith("modelwatch_latency_stage_p95_seconds{")
    }
    assert stages == {"model", "queue"}
    assert 'modelwatch_latency_stage_mean_share{model="fraud",stage="queue",version="1"}' in text


def test_promtool_accepts_both_formats(seeded: ServerProcess) -> None:
    plain = _exposition(seeded)
    assert plain.headers["content-type"].startswith("text/plain; version=0.0.4")
    opened = _exposition(seeded, "application/openmetrics-text; version=1.0.0")
    assert opened.headers["content-type"].startswith(OPENMETRICS)
    assert opened.text.rstrip().endswith("# EOF")
    check = subprocess.run(
        ["promtool", "check", "metrics"], input=plain.text, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr


QUERIES = {
    'modelwatch_guard_flip_rate{slice="segment=high"}': 0.157,
    'modelwatch_guard_flip_rate{slice="segment=normal"}': 0.0014,
    'modelwatch_guard_flip_rate{slice="all"}': 0.02,
    'modelwatch_guard_metric_drop{slice="segment=high",metric="accuracy"}': 4.0,
    'modelwatch_outcome_value{metric="accuracy",slice="region=eu"}': 0.81,
    # The daemon's own evaluation may resolve the seeded alert: one alert in some state.
    'sum(modelwatch_alerts{rule="feature_drift"})': 1.0,
    'count(modelwatch_alerts{rule="feature_drift"})': 3.0,
    'modelwatch_outbox_notifications{receiver="hook",status="dead"}': 1.0,
    "modelwatch_build_info": 1.0,
    'count(modelwatch_drift_score{version="2"})': 1.0,
    'count(modelwatch_drift_score{version="1"}) or vector(0)': 0.0,
    'count(modelwatch_guard_verdict{version="0-old"}) or vector(0)': 0.0,
    # Optimization settings as labels of an info-style series; free `meta` is no label.
    'modelwatch_model_version_info{version="2",precision="int8",runtime="ort 1.31 CUDA"}': 1.0,
    'count(modelwatch_model_version_info{image!=""}) or vector(0)': 0.0,
    'modelwatch_slo_threshold{objective="latency_p95_ms",slice="all"}': 50.0,
    'modelwatch_slo_value{objective="error_rate",slice="all"}': 0.0,
    'modelwatch_estimated_value{metric="accuracy",slice="all"}': 0.8,
    'modelwatch_estimated_realized{metric="accuracy",slice="all"}': 0.82,
    'modelwatch_estimated_threshold{metric="reconstruction_error",bound="high"}': 1.6,
}


def test_prometheus_scrapes_every_new_series(seeded: ServerProcess) -> None:
    prom = PrometheusServer([f"127.0.0.1:{seeded.port}"])
    prom.start()
    try:
        prom.wait_for_scrape("modelwatch_build_info", timeout=60)
        got = {q: [float(r["value"][1]) for r in prom.query(q)] for q in QUERIES}
        routes = prom.query("modelwatch_http_request_duration_seconds_count")
    finally:
        prom.stop()
    assert got == {q: [v] for q, v in QUERIES.items()}
    by_route = {(r["metric"]["route"], r["metric"]["status"]) for r in routes}
    assert ("/v1/models", "200") in by_route
    assert all(not r.startswith("/v1/models/") or "{" in r for r, _ in by_route)


def test_every_prometheus_dashboard_panel_query_returns_data(seeded: ServerProcess) -> None:
    prom = PrometheusServer([f"127.0.0.1:{seeded.port}"])
    prom.start()
    empty: list[str] = []
    try:
        prom.wait_for_scrape("modelwatch_build_info", timeout=60)
        for panel, exprs in PANEL_QUERIES.items():
            for expr in exprs:
                # Grafana fills the variables: model fraud, every version.
                promql = expr.replace("$model", "fraud").replace("$version", ".*")
                try:
                    prom.wait_for_scrape(promql, timeout=30)
                except RuntimeError:
                    empty.append(f"{panel}: {promql}")
    finally:
        prom.stop()
    assert empty == []
