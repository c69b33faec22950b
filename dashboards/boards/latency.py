"""Latency per stage on the operations dashboard, from the `mw_latency` view (migration 0028):
each stage's p95 over time beside the total's, and the newest window's breakdown per slice with
each stage's share of p95 (stage p95 / total p95; percentiles do not add, so the shares need not
sum to 1: monitor/slo/breakdown.py explains them)."""

from __future__ import annotations

from typing import Any

from grafana_foundation_sdk.models import dashboard as dm

from dashboards.panels import table_panel, time_series

MODEL = "$__timeFilter(time) AND model = ${model:sqlstring}"

STAGE_P95 = f"""SELECT $__timeGroupAlias(time, $__interval), version || ' ' || stage AS metric,
  max(p95) AS p95
FROM mw_latency
WHERE {MODEL} AND slice = 'all'
GROUP BY 1, 2
ORDER BY 1"""

# The newest window with latency: each slice's stages next to its total, slowest stage first.
NEWEST = f"""SELECT s.time, s.version, s.slice, s.stage, s.n, s.p50, s.p95, s.p99,
  s.p95 / NULLIF(t.p95, 0) AS p95_share
FROM mw_latency s
JOIN mw_latency t ON t.model = s.model AND t.version = s.version
  AND t.window_start = s.window_start AND t.slice = s.slice AND t.stage = 'total'
WHERE s.time = (SELECT max(time) FROM mw_latency WHERE {MODEL})
  AND s.model = ${{model:sqlstring}} AND s.stage <> 'total'
ORDER BY s.version, s.slice, s.p95 DESC
LIMIT 200"""


def latency_panels(datasource: dm.DataSourceRef) -> list[Any]:
    """p95 per stage over time, and the newest window's breakdown by slice."""
    return [
        time_series(
            "Latency p95 by stage",
            "Each stage's p95 per version (whole window) beside the end-to-end p95 (`total`): "
            "the stage that follows the total is where the time went.",
            [STAGE_P95],
            datasource,
            unit="ms",
        ),
        table_panel(
            "Latency by stage, newest window",
            "p50/p95/p99 of each stage per version and slice, and its p95 over the total p95 "
            "(shares need not add up: the slowest requests of one stage are not another's).",
            NEWEST,
            datasource,
            12,
        ),
    ]
