"""Latency per stage on the operations dashboard, from the `mw_latency` view (migration 0028):
each stage's p95 over time beside the total's, and the newest window's breakdown per slice with
each stage's share of p95 (stage p95 / total p95; percentiles do not add, so the shares need not
sum to 1: monitor/slo/breakdown.py explains them). Then latency beside utilisation (`mw_measures`,
migration 0034): end-to-end p95 and the p95 of GPU and CPU utilisation on one panel (percent on
the right axis), so a rise of latency with a saturated GPU reads off one panel, and time to
first token / per output token of generative models."""

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


TOTAL_P95 = f"""SELECT $__timeGroupAlias(time, $__interval), version || ' latency p95' AS metric,
  max(p95) AS p95
FROM mw_latency
WHERE {MODEL} AND slice = 'all' AND stage = 'total'
GROUP BY 1, 2
ORDER BY 1"""


def _measure_p95(measures: tuple[str, ...]) -> str:
    """p95 per version of some measures over time (whole windows), named `<version> <stem>`."""
    names = ", ".join(f"'{m}'" for m in measures)
    return f"""SELECT $__timeGroupAlias(time, $__interval), version || ' ' || measure || ' p95'
  AS metric, max(p95) AS p95
FROM mw_measures
WHERE {MODEL} AND slice = 'all' AND measure IN ({names})
GROUP BY 1, 2
ORDER BY 1"""


UTILISATION_P95 = _measure_p95(("gpu_utilization_percent", "cpu_percent"))
TOKEN_TIMES_P95 = _measure_p95(("ttft_ms", "tpot_ms"))


def _utilisation(datasource: dm.DataSourceRef) -> Any:
    """Latency (ms, left axis) and utilisation (query B: percent, right axis) on one panel."""
    right = [
        dm.DynamicConfigValue(id_val="unit", value="percent"),
        dm.DynamicConfigValue(id_val="custom.axisPlacement", value="right"),
    ]
    return time_series(
        "Latency p95 beside utilisation",
        "End-to-end p95 per version (ms, left) and the p95 of the GPU and CPU utilisation its "
        "events reported (percent, right): latency rising with a saturated GPU is capacity, "
        "not the model.",
        [TOTAL_P95, UTILISATION_P95],
        datasource,
        unit="ms",
    ).override_by_query("B", right)


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
        _utilisation(datasource),
        time_series(
            "Time to first token and per output token, p95",
            "Generative models: p95 per version of the time to first token (prefill and "
            "queueing) and of the time per output token after it (decoding).",
            [TOKEN_TIMES_P95],
            datasource,
            unit="ms",
        ),
    ]
