"""Day and week results stored as merged comparisons; room for in-place result updates.

Revision ID: 0017_scale
Revises: 0016_slo_results
Create Date: 2026-12-01

`drift_period_results` and `outcome_period_results` hold one row per (model, version, period
"day"/"week", period start, slice, column and method / metric): a whole day's or week's merged
window profiles (outcome summaries) compared once, written by the evaluate job for the periods
whose windows changed (`monitor.evaluation.period_jobs`). Views `mw_drift_periods` and
`mw_outcome_periods` join the dashboards' contract (`dashboards.views.VIEW_COLUMNS`): the rows
of `mw_drift` / `mw_outcomes` for a period, plus `granularity` ('1d' or '7d', the dashboards'
variable) and `period_end`; `time` is the period's start (so the current, incomplete day or week
is plotted before it ends, at the point Grafana's day or week grouping gives it).

A window is re-evaluated whenever it changes (the current window every tick, a whole burst of
windows after a backfill), and every re-evaluation updates its result rows. With pages packed
full, each update writes the row elsewhere and a new entry into every index of the table; with
free room on the page PostgreSQL updates it in place ("HOT": no index entry, no index bloat).
`fillfactor = 50` on `drift_results` and `outcome_results` leaves that room: the upsert of a
1,000-window burst cost a third as much on the server (bench/soak.py). New pages get the room;
existing pages as they are rewritten (`VACUUM FULL` rewrites them at once). SQLite has no such
setting: nothing to do there.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_scale"
down_revision = "0016_slo_results"
branch_labels = None
depends_on = None

UPDATED_IN_PLACE = ("drift_results", "outcome_results")
TS = sa.DateTime(timezone=True)


def _slice(col: str, pg: bool) -> str:
    """The slice key as `region=eu` ("all" for the whole window), as in 0006's views."""
    if pg:
        pairs = (
            f"(SELECT string_agg(e.key || '=' || e.value, ',' ORDER BY e.key) "
            f"FROM jsonb_each_text(CAST({col} AS jsonb)) AS e)"
        )
    else:  # canonical keys are stored sorted
        pairs = f"(SELECT group_concat(e.key || '=' || e.value, ',') FROM json_each({col}) AS e)"
    return f"CASE WHEN {col} = '' THEN 'all' ELSE {pairs} END"


def _table(table: str, key: list[str], statuses: str, *columns: sa.Column) -> None:  # type: ignore[type-arg]
    op.create_table(
        table,
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("period", sa.String(10), nullable=False),
        sa.Column("period_start", TS, nullable=False),
        sa.Column("period_end", TS, nullable=False),
        sa.Column("slice_key", sa.String(500), nullable=False),
        sa.Column("computed_at", TS, nullable=False),
        *columns,
        sa.CheckConstraint(f"status IN ({statuses})", name=op.f(f"ck_{table}_status_known")),
        sa.CheckConstraint("period IN ('day', 'week')", name=op.f(f"ck_{table}_period_known")),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
        sa.UniqueConstraint(
            "model", "version", "period", "period_start", "slice_key", *key,
            name=op.f(f"uq_{table}_key"),
        ),
    )  # fmt: skip
    op.create_index(f"ix_{table}_computed_at", table, ["computed_at"])


def _tables() -> None:
    _table(
        "drift_period_results",
        ["column", "method"],
        "'ok', 'drift', 'insufficient_data', 'missing', 'new'",
        sa.Column("column", sa.String(200), nullable=False),
        sa.Column("method", sa.String(50), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("threshold_by", sa.String(20), nullable=True),
        sa.Column("p_value", sa.Float(), nullable=True),
        sa.Column("n_reference", sa.Integer(), nullable=False),
        sa.Column("n_current", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
    )
    _table(
        "outcome_period_results",
        ["metric"],
        "'ok', 'degraded', 'insufficient_data'",
        sa.Column("metric", sa.String(50), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("ci_low", sa.Float(), nullable=True),
        sa.Column("ci_high", sa.Float(), nullable=True),
        sa.Column("baseline_value", sa.Float(), nullable=True),
        sa.Column("tolerance", sa.Float(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
    )


def _granularity(alias: str) -> str:
    return f"CASE WHEN {alias}.period = 'day' THEN '1d' ELSE '7d' END AS granularity"


def _drift(pg: bool) -> str:
    return f"""SELECT d.period_start AS time, d.period_end, {_granularity("d")}, d.model,
  d.version, {_slice("d.slice_key", pg)} AS slice, d."column", d.method, d.value, d.threshold,
  d.p_value, d.n_reference, d.n_current, d.status,
  CASE WHEN d.status = 'drift' THEN 1 ELSE 0 END AS drifted
FROM drift_period_results d"""


def _outcomes(pg: bool) -> str:
    return f"""SELECT o.period_start AS time, o.period_end, {_granularity("o")}, o.model,
  o.version, {_slice("o.slice_key", pg)} AS slice, o.metric, o.value, o.ci_low, o.ci_high,
  o.baseline_value, o.tolerance, o.n, o.status,
  CASE WHEN o.status = 'degraded' THEN 1 ELSE 0 END AS degraded
FROM outcome_period_results o"""


def upgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    if pg:
        for table in UPDATED_IN_PLACE:
            op.execute(f"ALTER TABLE {table} SET (fillfactor = 50)")
    _tables()
    op.execute(f"CREATE VIEW mw_drift_periods AS\n{_drift(pg)}")
    op.execute(f"CREATE VIEW mw_outcome_periods AS\n{_outcomes(pg)}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS mw_outcome_periods")
    op.execute("DROP VIEW IF EXISTS mw_drift_periods")
    for table in ("outcome_period_results", "drift_period_results"):
        op.drop_index(f"ix_{table}_computed_at", table_name=table)
        op.drop_table(table)
    if op.get_bind().dialect.name == "postgresql":
        for table in UPDATED_IN_PLACE:
            op.execute(f"ALTER TABLE {table} RESET (fillfactor)")
