"""Estimated performance and multivariate drift per window as rows, and their dashboard view.

Revision ID: 0018_estimated_results
Revises: 0017_scale
Create Date: 2026-12-01

`estimated_results` holds one row per (model, version, window, slice, metric), written by the
evaluate job for windows whose derived-column profiles or labels changed
(`monitor.estimation._window`): CBPE metrics with their band, threshold and realized value, and
`reconstruction_error` (mean PCA reconstruction error) with its bounds. The view `mw_estimated`
joins the dashboards' contract (`dashboards.views.VIEW_COLUMNS`), slice shown as `region=eu`
or `all`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_estimated_results"
down_revision = "0017_scale"
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


def _view(pg: bool) -> str:
    return f"""SELECT e.window_end AS time, e.window_start, e.model, e.version,
  {_slice("e.slice_key", pg)} AS slice, e.metric, e.value AS estimated, e.ci_low, e.ci_high,
  e.realized, e.threshold_low, e.threshold_high, e.n, e.status,
  CASE WHEN e.status IN ('degraded', 'drift') THEN 1 ELSE 0 END AS alerting
FROM estimated_results e"""


def upgrade() -> None:
    op.create_table(
        "estimated_results",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("window_start", TS, nullable=False),
        sa.Column("window_end", TS, nullable=False),
        sa.Column("slice_key", sa.String(500), nullable=False),
        sa.Column("computed_at", TS, nullable=False),
        sa.Column("metric", sa.String(50), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("ci_low", sa.Float(), nullable=True),
        sa.Column("ci_high", sa.Float(), nullable=True),
        sa.Column("realized", sa.Float(), nullable=True),
        sa.Column("threshold_low", sa.Float(), nullable=True),
        sa.Column("threshold_high", sa.Float(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.CheckConstraint(
            "status IN ('ok', 'degraded', 'drift', 'insufficient_data')",
            name=op.f("ck_estimated_results_status_known"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_estimated_results")),
        sa.UniqueConstraint(
            "model", "version", "window_start", "slice_key", "metric",
            name=op.f("uq_estimated_results_key"),
        ),
    )  # fmt: skip
    op.create_index("ix_estimated_results_computed_at", "estimated_results", ["computed_at"])
    pg = op.get_bind().dialect.name == "postgresql"
    op.execute(f"CREATE VIEW mw_estimated AS\n{_view(pg)}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS mw_estimated")
    op.drop_index("ix_estimated_results_computed_at", table_name="estimated_results")
    op.drop_table("estimated_results")
