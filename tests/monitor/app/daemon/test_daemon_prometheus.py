"""A real Prometheus scrapes a running `modelwatch serve`: events posted over HTTP show up."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.monitor.app.daemon.conftest import ServerProcess, auth
from tests.monitor.app.daemon.test_api_ingest import event
from tests.services.prometheus import PrometheusServer


def test_prometheus_sees_the_daemons_ingest_counters(server: ServerProcess, tmp_path: Path) -> None:
    body = [event(i) for i in range(40)] + [{**event(99), "timestamp": "not a time"}]
    resp = httpx.post(
        f"{server.url}/v1/events",
        json=body,
        timeout=60,
        headers={**auth("MW_T_INGEST"), "Idempotency-Key": "prom-1"},
    )
    assert resp.status_code == 202, resp.text
    prom = PrometheusServer([f"127.0.0.1:{server.port}"])
    prom.start()
    try:
        ingested = prom.wait_for_scrape(
            'modelwatch_events_ingested_total{source="http"} == 40', timeout=60
        )
        dead = prom.wait_for_scrape('modelwatch_dead_letters_total{source="http"}', timeout=60)
    finally:
        prom.stop()
    assert [float(r["value"][1]) for r in ingested] == [40.0]
    assert {r["metric"]["reason"] for r in dead} == {"invalid_timestamp"}
