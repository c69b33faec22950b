"""History of scheduled canary pairs and skew checks.

Revision ID: 0029_canary_skew_runs
Revises: 0028_latency_stages
Create Date: 2026-12-05

`canary_runs` holds one row per scheduled evaluation of a declared canary pair (its verdict, how
many criteria failed over the whole traffic and its slices, the correction used and the whole
report that `GET /v1/canary/{model}/{canary}` serves); `skew_runs` one row per scheduled
training-serving skew check. Both are read newest first per pair or check, and deleted by
retention after `scheduler.retention_days` (their indexes).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0029_canary_skew_runs"
down_revision = "0028_latency_stages"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "canary_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("canary", sa.String(100), nullable=False),
        sa.Column("stable", sa.String(100), nullable=False),
        sa.Column("since", TS, nullable=False),
        sa.Column("until", TS, nullable=False),
        sa.Column("verdict", sa.String(20), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("correction", sa.String(30), nullable=False),
        sa.Column("report", JSON_DOC, nullable=False),
        sa.Column("evaluated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_canary_runs")),
    )
    op.create_index(
        "ix_canary_runs_pair", "canary_runs", ["model", "canary", "stable", "evaluated_at"]
    )
    op.create_table(
        "skew_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("check_name", sa.String(100), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("n_joined", sa.Integer(), nullable=False),
        sa.Column("worst_rate", sa.Float(), nullable=True),
        sa.Column("report", JSON_DOC, nullable=False),
        sa.Column("evaluated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_skew_runs")),
    )
    op.create_index("ix_skew_runs_check", "skew_runs", ["check_name", "evaluated_at"])
    for table in ("canary_runs", "skew_runs"):  # what retention deletes by
        op.create_index(f"ix_{table}_evaluated_at", table, ["evaluated_at"])


def downgrade() -> None:
    for table in ("canary_runs", "skew_runs"):
        op.drop_index(f"ix_{table}_evaluated_at", table_name=table)
    op.drop_index("ix_skew_runs_check", table_name="skew_runs")
    op.drop_table("skew_runs")
    op.drop_index("ix_canary_runs_pair", table_name="canary_runs")
    op.drop_table("canary_runs")
