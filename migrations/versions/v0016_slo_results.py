"""Serving SLO results as rows, and the dashboard views of SLOs and optimization settings.

Revision ID: 0016_slo_results
Revises: 0015_intake_log
Create Date: 2026-12-01

`slo_results` holds one row per (model, version, window, slice, objective), written by the
evaluate job for the windows that changed (`monitor.slo.evaluate.store_window_slo`). Two views join
the dashboards' contract (`dashboards.views.VIEW_COLUMNS`): `mw_slo` (SLO results, slice shown as
`region=eu` or `all`) and `mw_model_settings` (each version's optimization settings with its
newest gate verdict).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_slo_results"
down_revision = "0015_intake_log"
branch_labels = None
depends_on = None

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


def _slo(pg: bool) -> str:
    return f"""SELECT s.window_end AS time, s.window_start, s.model, s.version,
  {_slice("s.slice_key", pg)} AS slice, s.objective, s.value, s.threshold, s.n, s.status,
  CASE WHEN s.status = 'breach' THEN 1 ELSE 0 END AS breached
FROM slo_results s"""


def _settings(pg: bool) -> str:
    def member(key: str) -> str:
        return f"(v.settings ->> '{key}')" if pg else f"json_extract(v.settings, '$.{key}')"

    meta = "CAST(v.settings -> 'meta' AS text)" if pg else "json_extract(v.settings, '$.meta')"
    newest = (
        "(SELECT g.{} FROM gate_runs g WHERE g.model = m.name AND g.version = v.version "
        "ORDER BY g.created_at DESC, g.id DESC LIMIT 1)"
    )
    return f"""SELECT v.created_at AS time, m.name AS model, v.version,
  {member("precision")} AS precision, {member("quantization")} AS quantization,
  {member("batching")} AS batching, {member("runtime")} AS runtime, {meta} AS meta,
  v.created_at AS registered_at, {newest.format("verdict")} AS verdict,
  {newest.format("created_at")} AS gated_at
FROM model_versions v JOIN models m ON m.id = v.model_id"""


def upgrade() -> None:
    op.create_table(
        "slo_results",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("window_start", TS, nullable=False),
        sa.Column("window_end", TS, nullable=False),
        sa.Column("slice_key", sa.String(500), nullable=False),
        sa.Column("computed_at", TS, nullable=False),
        sa.Column("objective", sa.String(50), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.CheckConstraint(
            "status IN ('ok', 'breach', 'insufficient_data')",
            name=op.f("ck_slo_results_status_known"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_slo_results")),
        sa.UniqueConstraint(
            "model", "version", "window_start", "slice_key", "objective",
            name=op.f("uq_slo_results_key"),
        ),
    )  # fmt: skip
    op.create_index("ix_slo_results_computed_at", "slo_results", ["computed_at"])
    pg = op.get_bind().dialect.name == "postgresql"
    op.execute(f"CREATE VIEW mw_slo AS\n{_slo(pg)}")
    op.execute(f"CREATE VIEW mw_model_settings AS\n{_settings(pg)}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS mw_model_settings")
    op.execute("DROP VIEW IF EXISTS mw_slo")
    op.drop_index("ix_slo_results_computed_at", table_name="slo_results")
    op.drop_table("slo_results")
