"""Operations dashboard: alert timeline, ingest rate, lag and dead letters."""

from __future__ import annotations

from grafana_foundation_sdk.models import dashboard as dm

from dashboards.panels import (
    dashboard,
    model_version_variables,
    state_timeline,
    table_panel,
    time_series,
)
from dashboards.views import ALERT_STATE_CODES

UID = "modelwatch-operations"

MODEL = "$__timeFilter(time) AND model = '$model'"

ALERT_TIMELINE = f"""SELECT time, alert AS metric, state_code AS state
FROM mw_alerts
WHERE {MODEL}
ORDER BY time"""

ALERT_EVENTS = f"""SELECT time, alert, state, severity, summary
FROM mw_alerts
WHERE {MODEL}
ORDER BY time DESC
LIMIT 200"""

INGEST_RATE = f"""SELECT $__timeGroupAlias(time, $__interval), source AS metric,
  sum(events) / ($__interval_ms / 1000.0) AS events_per_second
FROM mw_ingest
WHERE {MODEL}
GROUP BY 1, 2
ORDER BY 1"""

DEAD_LETTERS = f"""SELECT $__timeGroupAlias(time, $__interval), source AS metric,
  sum(dead_letters) AS dead_letters
FROM mw_ingest
WHERE {MODEL}
GROUP BY 1, 2
ORDER BY 1"""

LAG = f"""SELECT $__timeGroupAlias(time, $__interval), source AS metric,
  max(lag_seconds) AS lag_seconds
FROM mw_ingest
WHERE {MODEL} AND lag_seconds IS NOT NULL
GROUP BY 1, 2
ORDER BY 1"""


def build(datasource: dm.DataSourceRef) -> dm.Dashboard:
    """The operations dashboard, reading `mw_alerts` and `mw_ingest`."""
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
    rate = time_series(
        "Ingest rate", "Accepted events per second by source.", [INGEST_RATE], datasource, "ops"
    )
    dead = time_series(
        "Dead letters", "Rejected events per interval by source.", [DEAD_LETTERS], datasource
    )
    lag = time_series("Ingest lag", "How far event time trails ingestion.", [LAG], datasource, "s")
    return (
        board.with_panel(timeline)
        .with_panel(events)
        .with_panel(rate)
        .with_panel(dead)
        .with_panel(lag)
        .build()
    )
