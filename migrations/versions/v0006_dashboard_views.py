"""Dashboard views: the stable SQL contract Grafana's panels query (see dashboards/views.py).

Revision ID: 0006_dashboard_views
Revises: 0004_collectors
Create Date: 2026-11-30

Views are written per dialect where PostgreSQL and SQLite differ (JSON access). The SQL is
frozen here, as migrations must be; `dashboards.views.VIEW_COLUMNS` states the columns and a
test checks both agree on both backends. Slice keys are shown as `region=eu` (`all` for the
whole window), the same form as the Prometheus `slice` label.
"""

from __future__ import annotations

from collections.abc import Callable

from alembic import op

revision = "0006_dashboard_views"
down_revision = "0004_collectors"
branch_labels = None
depends_on = None


def _json(expr: str, key: str, pg: bool) -> str:
    """Text of a top-level JSON member."""
    return f"({expr} ->> '{key}')" if pg else f"json_extract({expr}, '$.{key}')"


def _slice(col: str, pg: bool) -> str:
    if pg:
        pairs = (
            f"(SELECT string_agg(e.key || '=' || e.value, ',' ORDER BY e.key) "
            f"FROM jsonb_each_text(CAST({col} AS jsonb)) AS e)"
        )
    else:  # canonical keys are stored sorted
        pairs = f"(SELECT group_concat(e.key || '=' || e.value, ',') FROM json_each({col}) AS e)"
    return f"CASE WHEN {col} = '' THEN 'all' ELSE {pairs} END"


def _versions(pg: bool) -> str:
    return """SELECT v.created_at AS time, m.name AS model, v.version AS version
FROM model_versions v JOIN models m ON m.id = v.model_id"""


def _drift(pg: bool) -> str:
    return f"""SELECT d.window_end AS time, d.window_start, d.model, d.version,
  {_slice("d.slice_key", pg)} AS slice, d."column", d.method, d.value, d.threshold, d.p_value,
  d.n_reference, d.n_current, d.status, CASE WHEN d.status = 'drift' THEN 1 ELSE 0 END AS drifted
FROM drift_results d"""


def _outcomes(pg: bool) -> str:
    return f"""SELECT o.window_end AS time, o.window_start, o.model, o.version,
  {_slice("o.slice_key", pg)} AS slice, o.metric, o.value, o.ci_low, o.ci_high,
  o.baseline_value, o.tolerance, o.n, o.status,
  CASE WHEN o.status = 'degraded' THEN 1 ELSE 0 END AS degraded
FROM outcome_results o"""


def _gate_runs(pg: bool) -> str:
    if pg:
        crit = "jsonb_array_elements(g.criteria) AS c"
        name, status = "(c ->> 'name')", "(c ->> 'status')"
        value = "CAST(c ->> 'value' AS double precision)"
        overall = "jsonb_typeof(c -> 'slice') IS DISTINCT FROM 'object'"
        lat = "jsonb_each(g.verdict_json -> 'latency' -> '{}') AS e"
        p95, batch = "CAST(e.value ->> 'p95_ms' AS double precision)", "CAST(e.key AS integer)"
        total = "(SELECT sum(CAST(t.value AS double precision)) FROM jsonb_each_text(g.timing) t)"
        provider = "(g.providers -> 'candidate' ->> 0)"
    else:
        crit = "json_each(g.criteria) AS c"
        name, status = "json_extract(c.value, '$.name')", "json_extract(c.value, '$.status')"
        value = "json_extract(c.value, '$.value')"
        overall = "json_type(c.value, '$.slice') IS NOT 'object'"
        lat = "json_each(g.verdict_json, '$.latency.{}') AS e"
        p95, batch = "json_extract(e.value, '$.p95_ms')", "CAST(e.key AS INTEGER)"
        total = "(SELECT sum(t.value) FROM json_each(g.timing) AS t)"
        provider = "json_extract(g.providers, '$.candidate[0]')"

    def latency(side: str) -> str:
        # p95 at the smallest measured batch size: the serving-latency view of a run.
        return f"(SELECT {p95} FROM {lat.format(side)} ORDER BY {batch} LIMIT 1)"

    return f"""SELECT g.created_at AS time, g.model, g.version, g.preset, g.verdict,
  CASE WHEN g.verdict = 'pass' THEN 1 ELSE 0 END AS passed,
  (SELECT {"string_agg" if pg else "group_concat"}({name}, ', ') FROM {crit}
    WHERE {status} <> 'pass') AS decided_by,
  (SELECT max({value}) FROM {crit} WHERE {name} LIKE 'flip_rate[%' AND {overall}) AS flip_rate,
  {latency("reference")} AS reference_latency_ms,
  {latency("candidate")} AS candidate_latency_ms,
  {total} AS duration_s, {provider} AS providers
FROM gate_runs g"""


def _alerts(pg: bool) -> str:
    column = _json("a.labels", "column", pg)
    common = (
        f"{_json('a.labels', 'model', pg)} AS model, "
        f"a.rule || coalesce(' ' || {column}, '') AS alert"
    )
    tail = (
        f"{_json('a.labels', 'severity', pg)} AS severity, "
        f"{_json('a.annotations', 'summary', pg)} AS summary FROM alert_states a"
    )
    # Each alert's current episode: pending (when it did not fire at once), firing, resolved.
    return "\nUNION ALL\n".join(
        [
            f"SELECT a.active_since AS time, {common}, 'pending' AS state, 1 AS state_code, "
            f"{tail} WHERE a.fired_at IS NULL OR a.fired_at > a.active_since",
            f"SELECT a.fired_at, {common}, 'firing', 2, {tail} WHERE a.fired_at IS NOT NULL",
            f"SELECT a.resolved_at, {common}, 'resolved', 0, {tail} "
            "WHERE a.resolved_at IS NOT NULL",
        ]
    )


def _notifications(pg: bool) -> str:
    return """SELECT n.created_at AS time, n.receiver, n.kind, n.status, n.attempts,
  CASE WHEN n.status = 'dead' OR n.last_error IS NOT NULL THEN 1 ELSE 0 END AS failed,
  n.last_error, n.sent_at
FROM alert_notifications n"""


def _ingest(pg: bool) -> str:
    return """SELECT w.window_start AS time, w.window_end, w.model, w.version, w.events
FROM window_counts w WHERE w.slice_key = ''"""


def _dead_letters(pg: bool) -> str:
    return """SELECT d.created_at AS time, d.source, d.reason, d.payload_size
FROM dead_letters d"""


def _source_lag(pg: bool) -> str:
    return """SELECT p.updated_at AS time, p.source, p.key AS partition,
  CASE WHEN p.end_offset > p."offset" THEN p.end_offset - p."offset" ELSE 0 END AS lag,
  p.watermark
FROM source_positions p"""


VIEWS: dict[str, Callable[[bool], str]] = {
    "mw_versions": _versions,
    "mw_drift": _drift,
    "mw_outcomes": _outcomes,
    "mw_gate_runs": _gate_runs,
    "mw_alerts": _alerts,
    "mw_notifications": _notifications,
    "mw_ingest": _ingest,
    "mw_dead_letters": _dead_letters,
    "mw_source_lag": _source_lag,
}


def upgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    for name, select in VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS\n{select(pg)}")


def downgrade() -> None:
    for name in reversed(list(VIEWS)):
        op.execute(f"DROP VIEW IF EXISTS {name}")
