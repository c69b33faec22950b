"""Resource samples scraped from a replica's Prometheus text endpoint (`models[].resources`).

Each configured metric's sample values (every series of it: one per GPU of a DCGM exporter,
say) become values of a resource measure (`monitor.common.measures`) of the version's current
window, whole-window row, merged into `window_serving.measures` beside what events carry. A
sample that is negative or not finite is skipped and counted in the log line; a failed request
or an unparsable body raises ScrapeError naming the endpoint (its URL redacted), which the
daemon records as a failure of the scrape's job and tries again at the next interval.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from datetime import datetime

import httpx
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import Engine

from collectors._serving_store import merge_summary
from monitor.common.redact import scrub
from monitor.config.serving import ResourceScrapeConfig
from monitor.errors import ModelwatchError
from monitor.profiles.serving import LatencySketch, ServingSummary
from monitor.storage import transaction
from monitor.summaries import window_of

__all__ = ["MAX_SCRAPE_BYTES", "ScrapeError", "parse_samples", "scrape_resources"]

log = logging.getLogger(__name__)
MAX_SCRAPE_BYTES = 8 * 1024 * 1024  # an exposition larger than this is refused


class ScrapeError(ModelwatchError, ConnectionError):
    """A resource endpoint could not be read or parsed."""


def parse_samples(text: str, metrics: Mapping[str, str]) -> tuple[dict[str, list[float]], int]:
    """Each measure's sample values in an exposition (`metrics`: measure → metric name), and
    how many samples were skipped as negative or not finite. ValueError for a bad body."""
    wanted = {metric: measure for measure, metric in metrics.items()}
    out: dict[str, list[float]] = {}
    skipped = 0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            measure = wanted.get(sample.name)
            if measure is None:
                continue
            if not math.isfinite(sample.value) or sample.value < 0:
                skipped += 1
                continue
            out.setdefault(measure, []).append(float(sample.value))
    return out, skipped


def scrape_resources(
    client: httpx.Client,
    engine: Engine,
    model: str,
    cfg: ResourceScrapeConfig,
    window_s: float,
    now: datetime,
) -> int:
    """Scrape `cfg.url` once and merge its samples into the window holding `now`; the number
    of samples stored. ScrapeError when the endpoint fails."""
    where = scrub(cfg.url)
    try:
        resp = client.get(cfg.url, timeout=cfg.timeout.total_seconds())
        resp.raise_for_status()
        if len(resp.content) > MAX_SCRAPE_BYTES:
            raise ScrapeError(f"resource endpoint {where}: body over {MAX_SCRAPE_BYTES} bytes")
        samples, skipped = parse_samples(resp.text, cfg.metrics)
    except (httpx.HTTPError, ValueError) as exc:
        detail = scrub(f"{type(exc).__name__}: {exc}")[:200]
        raise ScrapeError(f"resource endpoint {where}: {detail}") from None
    if skipped:
        log.warning("resource endpoint %s: %d negative or non-finite samples skipped", where,
                    skipped)  # fmt: skip
    if not samples:
        return 0
    summary = ServingSummary(measures={m: LatencySketch.of(v) for m, v in samples.items()})
    start = window_of(now, window_s)
    end = datetime.fromtimestamp(start.timestamp() + window_s, start.tzinfo)
    with transaction(engine) as s:
        merge_summary(s, model, cfg.version, (start, end), {"": summary})
    return sum(map(len, samples.values()))
