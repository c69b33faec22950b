"""Resource samples scraped from a Prometheus text endpoint (a tiny HTTP server here): every
series of a configured metric counts, bad samples are skipped, a failing endpoint is one error
naming it, and the config names only resource measures."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from sqlalchemy import create_engine, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import ScrapeError, scrape_resources
from migrations import upgrade
from monitor.config.serving import ResourceScrapeConfig
from monitor.profiles.serving import ServingSummary
from monitor.storage import WindowServing, make_engine

EXPOSITION = b"""\
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0"} 97
DCGM_FI_DEV_GPU_UTIL{gpu="1"} 91
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0"} 61000
DCGM_FI_DEV_FB_USED{gpu="1"} -5
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="chat"} 12
vllm:num_requests_waiting{model_name="chat2"} NaN
"""
NOW = datetime(2026, 1, 1, 0, 30, tzinfo=UTC)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            body, status = (EXPOSITION, 200) if self.path == "/metrics" else (b"{nope", 200)
            if self.path == "/down":
                body, status = b"", 503
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def scraped_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """One migrated SQLite database for the module (a migration per test costs ~1 s)."""
    eng = make_engine(f"sqlite:///{tmp_path_factory.mktemp('scrape') / 'mw.db'}")
    upgrade(eng)
    yield eng
    eng.dispose()


def target(url: str) -> ResourceScrapeConfig:
    return ResourceScrapeConfig(
        url=url, version="2",
        metrics={"gpu_utilization_percent": "DCGM_FI_DEV_GPU_UTIL",
                 "gpu_memory_mb": "DCGM_FI_DEV_FB_USED",
                 "queue_depth": "vllm:num_requests_waiting"},
    )  # fmt: skip


def test_every_series_of_a_metric_is_a_sample_of_the_current_window(
    scraped_db: Engine, endpoint: str
) -> None:
    with httpx.Client() as client:
        for _ in range(2):  # two scrapes of one window merge
            assert scrape_resources(client, scraped_db, "chat", target(f"{endpoint}/metrics"),
                                    3600, NOW) == 4  # fmt: skip
    with Session(scraped_db) as s:
        (row,) = s.scalars(select(WindowServing)).all()
    assert (row.model, row.version, row.slice_key) == ("chat", "2", "")
    assert row.window_start.replace(tzinfo=UTC) == datetime(2026, 1, 1, tzinfo=UTC)
    summary = ServingSummary.from_row(row)
    assert summary.requests == 0  # samples are not requests
    assert {k: v.n for k, v in summary.measures.items()} == {
        "gpu_utilization_percent": 4, "gpu_memory_mb": 2, "queue_depth": 2,
    }  # fmt: skip
    assert summary.measure("gpu_utilization_percent").quantile(1.0) == pytest.approx(97, rel=0.01)


def test_a_failing_endpoint_is_one_error_naming_it(scraped_db: Engine, endpoint: str) -> None:
    with httpx.Client() as client:
        for path in ("/down", "/garbage"):
            with pytest.raises(ScrapeError, match=f"resource endpoint {endpoint}{path}"):
                scrape_resources(client, scraped_db, "chat", target(endpoint + path), 3600, NOW)


def test_only_resource_measures_are_scraped() -> None:
    with pytest.raises(ValidationError, match="'ttft_ms' is not a resource measure"):
        ResourceScrapeConfig(url="http://x/metrics", version="1", metrics={"ttft_ms": "ttft"})
    with pytest.raises(ValidationError, match="url must start with http"):
        ResourceScrapeConfig(url="x", version="1", metrics={"rss_mb": "rss"})


def test_the_daemon_schedules_a_job_per_endpoint() -> None:
    from monitor.app.daemon._scrape_job import scrape_jobs
    from monitor.config import parse_config

    config = parse_config({"models": [{"name": "chat", "resources": [
        {"url": "http://gpu0:9400/metrics", "version": "2", "interval": "30s",
         "metrics": {"gpu_utilization_percent": "DCGM_FI_DEV_GPU_UTIL"}},
    ]}]})  # fmt: skip
    with httpx.Client() as client:
        jobs = scrape_jobs(create_engine("sqlite://"), config, client)
    assert [(j.name, j.interval_s) for j in jobs] == [("scrape chat 2 0", 30.0)]
