"""Statistical core results: drift_results and outcome_results.

Revision ID: 0002_monitor
Revises: 0003_guards
Create Date: 2026-11-30

Its number is not its place: it runs after 0003_guards (migrations/__init__.py lists the order).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_monitor"
down_revision = "0003_guards"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def _key_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("window_start", TS, nullable=False),
        sa.Column("window_end", TS, nullable=False),
        sa.Column("slice_key", sa.String(500), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "drift_results",
        *_key_columns(),
        sa.Column("column", sa.String(200), nullable=False),
        sa.Column("method", sa.String(50), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("p_value", sa.Float(), nullable=True),
        sa.Column("n_reference", sa.Integer(), nullable=False),
        sa.Column("n_current", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("computed_at", TS, nullable=False),
        sa.CheckConstraint(
            "status IN ('ok', 'drift', 'insufficient_data')",
            name=op.f("ck_drift_results_status_known"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_drift_results")),
        sa.UniqueConstraint(
            "model", "version", "window_start", "slice_key", "column", "method",
            name=op.f("uq_drift_results_key"),
        ),
    )  # fmt: skip
    op.create_table(
        "outcome_results",
        *_key_columns(),
        sa.Column("metric", sa.String(50), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("ci_low", sa.Float(), nullable=True),
        sa.Column("ci_high", sa.Float(), nullable=True),
        sa.Column("baseline_value", sa.Float(), nullable=True),
        sa.Column("tolerance", sa.Float(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("computed_at", TS, nullable=False),
        sa.CheckConstraint(
            "status IN ('ok', 'degraded', 'insufficient_data')",
            name=op.f("ck_outcome_results_status_known"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outcome_results")),
        sa.UniqueConstraint(
            "model", "version", "window_start", "slice_key", "metric",
            name=op.f("uq_outcome_results_key"),
        ),
    )  # fmt: skip


def downgrade() -> None:
    op.drop_table("outcome_results")
    op.drop_table("drift_results")
