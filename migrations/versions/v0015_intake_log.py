"""The HTTP intake log (`POST /v1/events` appends, a drain aggregates).

Revision ID: 0015_intake_log
Revises: 0014_lag_index
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from monitor.storage.base import UTCDateTime

revision = "0015_intake_log"
down_revision = "0014_lag_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "intake_log",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("key", sa.String(260), nullable=True),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("events", sa.Integer(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=True),
        sa.Column("received_at", UTCDateTime(), nullable=False),
        sa.Column("consumed_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_intake_log")),
        sa.UniqueConstraint("key", name=op.f("uq_intake_log_key")),
    )
    op.create_index(
        "ix_intake_log_pending",
        "intake_log",
        ["id"],
        postgresql_where=sa.text("consumed_at IS NULL"),
        sqlite_where=sa.text("consumed_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_intake_log_pending", table_name="intake_log")
    op.drop_table("intake_log")
