"""Operations dashboard: alerts and their delivery, ingest volume, dead letters, source lag."""

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
    return (
        board.with_panel(timeline)
        .with_panel(events)
        .with_panel(failures)
        .with_panel(events_panel)
        .with_panel(dead)
        .with_panel(lag)
        .build()
    )
