"""Operations dashboard: alerts and their delivery, ingest volume, dead letters, source lag,
and serving SLOs (latency percentiles, error rate, cost per 1,000 predictions) against their
bounds, from the `slo_results` rows the evaluate job stores (`mw_slo`)."""

from __future__ import annotations

from typing import Any

from grafana_foundation_sdk.models import dashboard as dm

from dashboards.boards.latency import latency_panels
from dashboards.panels import (
    dashboard,
    model_version_variables,
    state_timeline,
    table_panel,
    time_series,
)
from dashboards.views import ALERT_STATE_CODES

UID = "modelwatch-operations"

MODEL = "$__timeFilter(time) AND model = ${model:sqlstring}"

ALERT_TIMELINE = f"""SELECT time, alert AS metric, state_code AS state
FROM mw_alerts
WHERE {MODEL}
ORDER BY time"""

ALERT_EVENTS = f"""SELECT time, alert, state, severity, summary
FROM mw_alerts
WHERE {MODEL}
ORDER BY time DESC
LIMIT 200"""

EVENTS = f"""SELECT $__timeGroupAlias(time, $__interval), version AS metric,
  sum(events) AS events
FROM mw_ingest
WHERE {MODEL}
GROUP BY 1, 2
ORDER BY 1"""

DEAD_LETTERS = """SELECT $__timeGroupAlias(time, $__interval), source || ': ' || reason AS metric,
  count(*) AS dead_letters
FROM mw_dead_letters
WHERE $__timeFilter(time)
GROUP BY 1, 2
ORDER BY 1"""

# Current positions, whatever the time range: a stalled source is exactly the one not updated.
SOURCE_LAG = """SELECT source, partition, lag, watermark, time AS updated_at
FROM mw_source_lag
ORDER BY lag DESC, source, partition"""

DELIVERY_FAILURES = """SELECT $__timeGroupAlias(time, $__interval), receiver AS metric,
  sum(failed) AS failed_notifications
FROM mw_notifications
WHERE $__timeFilter(time)
GROUP BY 1, 2
ORDER BY 1"""


def slo_queries(objectives: tuple[str, ...]) -> list[str]:
    """The whole-window values of `objectives` per version, and their configured bounds."""
    where = f"{MODEL} AND slice = 'all' AND objective IN ({', '.join(map(repr, objectives))})"
    value = f"""SELECT $__timeGroupAlias(time, $__interval), version || ' ' || objective AS metric,
  max(value) AS value
FROM mw_slo
WHERE {where}
GROUP BY 1, 2
ORDER BY 1"""
    bound = f"""SELECT $__timeGroupAlias(time, $__interval), 'SLO ' || objective AS metric,
  max(threshold) AS threshold
FROM mw_slo
WHERE {where} AND threshold IS NOT NULL
GROUP BY 1, 2
ORDER BY 1"""
    return [value, bound]


# Every slice of the newest window with SLO rows: which slice breaches, breaches first.
SLO_SLICES = f"""SELECT time, version, slice, objective, value, threshold, n, status
FROM mw_slo
WHERE {MODEL} AND time = (SELECT max(time) FROM mw_slo WHERE {MODEL})
ORDER BY breached DESC, version, slice, objective
LIMIT 200"""

SLO_LATENCY = slo_queries(("latency_p95_ms", "latency_p99_ms"))
SLO_ERRORS = slo_queries(("error_rate",))
SLO_COST = slo_queries(("cost_per_1k",))


def slo_panels(datasource: dm.DataSourceRef) -> list[Any]:
    """Latency p95/p99, error rate and cost per 1,000 predictions, each against its SLO."""
    return [
        time_series(
            "Latency p95/p99 vs SLO",
            "Serving latency percentiles per version (whole window) and the configured bounds.",
            SLO_LATENCY,
            datasource,
            unit="ms",
        ),
        time_series(
            "Error rate vs SLO",
            "Errored requests over all requests per version, and the configured bound.",
            SLO_ERRORS,
            datasource,
            unit="percentunit",
        ),
        time_series(
            "Cost per 1k predictions",
            "Hourly price x replicas per 1,000 requests at the observed rate, and the bound.",
            SLO_COST,
            datasource,
            unit="currencyUSD",
        ),
        table_panel(
            "SLOs by slice, newest window",
            "Every objective of every slice in the newest window, breaches first.",
            SLO_SLICES,
            datasource,
            12,
        ),
    ]


def build(datasource: dm.DataSourceRef) -> dm.Dashboard:
    """The operations dashboard: alerts, notifications and ingestion views."""
    board = dashboard(UID, "modelwatch / Operations", "Alerts and the health of ingestion.")
    board = board.with_variable(model_version_variables(datasource)[0])
    timeline = state_timeline(
        "Alert timeline",
        "State of every alert over time.",
        ALERT_TIMELINE,
        datasource,
        dict(ALERT_STATE_CODES),
    )
    events = table_panel("Alert events", "State changes, newest first.", ALERT_EVENTS, datasource)
    events_panel = time_series(
        "Events ingested", "Events aggregated per version and interval.", [EVENTS], datasource
    )
    dead = time_series(
        "Dead letters", "Rejected inputs by source and reason.", [DEAD_LETTERS], datasource
    )
    lag = table_panel(
        "Source lag",
        "Per partition or file: messages (Kafka) or bytes (files) not yet consumed, and the "
        "highest event time seen.",
        SOURCE_LAG,
        datasource,
        12,
    )
    failures = time_series(
        "Notification delivery failures",
        "Notifications that failed at least once or were given up (dead), per receiver.",
        [DELIVERY_FAILURES],
        datasource,
    )
    board = (
        board.with_panel(timeline)
        .with_panel(events)
        .with_panel(failures)
        .with_panel(events_panel)
        .with_panel(dead)
        .with_panel(lag)
    )
    for panel in [*slo_panels(datasource), *latency_panels(datasource)]:
        board = board.with_panel(panel)
    return board.build()
