"""Fairness results per protected attribute and group, and their dashboard view.

Revision ID: 0032_fairness
Revises: 0031_work_queue
Create Date: 2026-12-05

`fairness_results` holds one row per (model, version, window, attribute, slice, metric), written
by the evaluate job beside a window's outcome metrics (`monitor.fairness`): the comparisons of an
attribute's groups (slice_key "") and each group's rates and calibration (slice_key
`{"gender":"f"}`). The view `mw_fairness` joins the dashboards' contract
(`dashboards.views.VIEW_COLUMNS`), slice shown as `gender=f` or `all`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032_fairness"
down_revision = "0031_work_queue"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def _slice(col: str, pg: bool) -> str:
    """The slice key as `gender=f` ("all" for the comparison of the groups), as in 0016."""
    if pg:
        pairs = (
            f"(SELECT string_agg(e.key || '=' || e.value, ',' ORDER BY e.key) "
            f"FROM jsonb_each_text(CAST({col} AS jsonb)) AS e)"
        )
    else:
        pairs = f"(SELECT group_concat(e.key || '=' || e.value, ',') FROM json_each({col}) AS e)"
    return f"CASE WHEN {col} = '' THEN 'all' ELSE {pairs} END"


def _fairness(pg: bool) -> str:
    return f"""SELECT f.window_end AS time, f.window_start, f.model, f.version, f.attribute,
  {_slice("f.slice_key", pg)} AS slice, f.metric, f.value, f.ci_low, f.ci_high, f.threshold,
  f.n, f.status, f.reason, CASE WHEN f.status = 'violation' THEN 1 ELSE 0 END AS violated
FROM fairness_results f"""


def upgrade() -> None:
    op.create_table(
        "fairness_results",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("window_start", TS, nullable=False),
        sa.Column("window_end", TS, nullable=False),
        sa.Column("slice_key", sa.String(500), nullable=False),
        sa.Column("computed_at", TS, nullable=False),
        sa.Column("attribute", sa.String(200), nullable=False),
        sa.Column("metric", sa.String(50), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("ci_low", sa.Float(), nullable=True),
        sa.Column("ci_high", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("reason", sa.String(500), nullable=True),
        sa.CheckConstraint(
            "status IN ('ok', 'violation', 'insufficient_data')",
            name=op.f("ck_fairness_results_status_known"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fairness_results")),
        sa.UniqueConstraint(
            "model", "version", "window_start", "attribute", "slice_key", "metric",
            name=op.f("uq_fairness_results_key"),
        ),
    )  # fmt: skip
    op.create_index("ix_fairness_results_computed_at", "fairness_results", ["computed_at"])
    pg = op.get_bind().dialect.name == "postgresql"
    op.execute(f"CREATE VIEW mw_fairness AS\n{_fairness(pg)}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS mw_fairness")
    op.drop_index("ix_fairness_results_computed_at", table_name="fairness_results")
    op.drop_table("fairness_results")
