"""The daemon's resource scrapes: one job per configured endpoint (`models[].resources`).

Each job reads its endpoint every `interval` and merges the samples into the version's current
window (`collectors.scrape_resources`). A failing endpoint fails its own job only (recorded in
`modelwatch_job_failures_total{job="scrape <model> <version> <n>"}`), never another's.
"""

from __future__ import annotations

import functools
from datetime import datetime

import httpx
from sqlalchemy.engine import Engine

from collectors import scrape_resources
from monitor.app.daemon._scheduler import JobSpec
from monitor.config import Config
from monitor.config.serving import ResourceScrapeConfig


def scrape_jobs(engine: Engine, config: Config, client: httpx.Client) -> list[JobSpec]:
    """A job per resource endpoint of every model, at the endpoint's interval."""
    window_s = config.collect.window.total_seconds()
    return [
        JobSpec(
            f"scrape {model.name} {target.version} {i}",
            functools.partial(_scrape, client, engine, model.name, target, window_s),
            target.interval.total_seconds(),
        )
        for model in config.models
        for i, target in enumerate(model.resources)
    ]


def _scrape(
    client: httpx.Client,
    engine: Engine,
    model: str,
    target: ResourceScrapeConfig,
    window_s: float,
    now: datetime,
) -> int:
    return scrape_resources(client, engine, model, target, window_s, now)
