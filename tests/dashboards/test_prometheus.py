"""A real Prometheus scrapes the metrics endpoint; the query API returns our series."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from dashboards import MetricsServer, ModelwatchMetrics, serve_metrics
from monitor.errors import ConfigError
from tests.services.prometheus import PrometheusServer


@pytest.fixture
def endpoint(registry: CollectorRegistry) -> Iterator[MetricsServer]:
    server = serve_metrics(registry, "127.0.0.1", 0)
    try:
        yield server
    finally:
        server.close()


def test_metrics_endpoint_serves_the_injected_registry(
    metrics: ModelwatchMetrics, endpoint: MetricsServer
) -> None:
    metrics.record_ingested("fraud", "stream", 3)
    with urllib.request.urlopen(endpoint.url, timeout=5) as resp:
        body = resp.read().decode()
    assert 'modelwatch_events_ingested_total{model="fraud",source="stream"} 3.0' in body


def test_busy_port_is_a_config_error(endpoint: MetricsServer, registry: CollectorRegistry) -> None:
    with pytest.raises(ConfigError, match=f"127.0.0.1:{endpoint.port}"):
        serve_metrics(registry, "127.0.0.1", endpoint.port)


def test_prometheus_scrapes_and_query_api_returns_project_series(
    metrics: ModelwatchMetrics, endpoint: MetricsServer
) -> None:
    metrics.record_ingested("fraud", "stream", 42)
    metrics.set_drift("fraud", "3", "region=eu", "amount", "psi", 0.31, 0.2)
    metrics.set_drift("fraud", "3", "user=alice", "amount", "psi", 0.05, 0.2)
    metrics.set_guard_verdict("fraud", "4-int8", "fail")
    prom = PrometheusServer([f"127.0.0.1:{endpoint.port}"])
    prom.start()
    try:
        ingested = prom.wait_for_scrape('modelwatch_events_ingested_total{model="fraud"}')
        drift = prom.query("modelwatch_drift_score > modelwatch_drift_threshold")
        slices = prom.query('count by (slice) (modelwatch_drift_score{model="fraud"})')
        failing = prom.query('modelwatch_guard_verdict{verdict="fail"} == 1')
    finally:
        prom.stop()
    assert [float(r["value"][1]) for r in ingested] == [42.0]
    assert ingested[0]["metric"]["job"] == "modelwatch"
    assert [(r["metric"]["slice"], float(r["value"][1])) for r in drift] == [("region=eu", 0.31)]
    assert {r["metric"]["slice"] for r in slices} == {"region=eu", "other"}
    assert [r["metric"]["version"] for r in failing] == ["4-int8"]


def test_asgi_app_serves_the_registry_for_the_daemon(
    metrics: ModelwatchMetrics, registry: CollectorRegistry
) -> None:
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from dashboards import metrics_asgi_app

    app = FastAPI()
    app.mount("/metrics", metrics_asgi_app(registry))
    metrics.set_drifted_columns("fraud", "3", '{"region": "eu"}', 4)
    body = TestClient(app).get("/metrics/").text
    assert 'modelwatch_drifted_columns{model="fraud",slice="region=eu",version="3"} 4.0' in body
