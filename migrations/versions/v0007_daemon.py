"""Daemon: job runs claimed once per (job, window) across replicas.

Revision ID: 0007_daemon
Revises: 0001_foundation
Create Date: 2026-11-30

Its number is not its place: it runs right after 0001_foundation (migrations/__init__.py lists
the order).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_daemon"
down_revision = "0001_foundation"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "job_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job", sa.String(100), nullable=False),
        sa.Column("window_key", sa.String(100), nullable=False),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("claimed_at", TS, nullable=False),
        sa.Column("finished_at", TS, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_runs")),
        sa.UniqueConstraint("job", "window_key", name=op.f("uq_job_runs_job_window_key")),
    )


def downgrade() -> None:
    op.drop_table("job_runs")
