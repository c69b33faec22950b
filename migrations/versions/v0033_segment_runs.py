"""History of scheduled weak-segment searches.

Revision ID: 0033_segment_runs
Revises: 0030_releases_views
Create Date: 2026-12-05

`segment_runs` holds one row per scheduled run of a segment check (`segments` in the config):
its mode, status, row count, how many segments it reported and how many of them are new (not
in the check's previous run), and the whole report `GET /v1/models/{model}/segments` serves.
Read newest first per check and per model; deleted by retention after
`scheduler.retention_days`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0033_segment_runs"
down_revision = "0030_releases_views"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "segment_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("check_name", sa.String(100), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("mode", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("n_rows", sa.Integer(), nullable=False),
        sa.Column("n_segments", sa.Integer(), nullable=False),
        sa.Column("n_new", sa.Integer(), nullable=False),
        sa.Column("report", JSON_DOC, nullable=False),
        sa.Column("evaluated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_segment_runs")),
    )
    op.create_index("ix_segment_runs_check", "segment_runs", ["check_name", "evaluated_at"])
    op.create_index("ix_segment_runs_model", "segment_runs", ["model", "evaluated_at"])
    op.create_index("ix_segment_runs_evaluated_at", "segment_runs", ["evaluated_at"])


def downgrade() -> None:
    for index in ("ix_segment_runs_evaluated_at", "ix_segment_runs_model", "ix_segment_runs_check"):
        op.drop_index(index, table_name="segment_runs")
    op.drop_table("segment_runs")
