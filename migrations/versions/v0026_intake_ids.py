"""Intake row ids are never reused (SQLite), so a request's result is its own.

Revision ID: 0026_intake_ids
Revises: 0025_burst_storage
Create Date: 2026-12-05

`POST /v1/events?wait=` and the dead letters of a request find the request by its intake row id
(`dead_letters.intake_id`). The drain deletes a consumed request without an Idempotency-Key, and
SQLite gives a new row the highest id plus one, so the next request could get the id of a
consumed one and be answered with that one's dead letters. `AUTOINCREMENT` makes SQLite never
reuse an id: the table is rebuilt with it, and its counter starts past every id a row or a dead
letter ever held. PostgreSQL's identity sequence never reuses an id: nothing to do there.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from monitor.storage.base import UTCDateTime

revision = "0026_intake_ids"
down_revision = "0025_burst_storage"
branch_labels = None
depends_on = None

_COPY = "id, key, kind, sha256, events, body, received_at, consumed_at"


def _rebuild(autoincrement: bool) -> None:
    """Recreate `intake_log` on SQLite, with or without AUTOINCREMENT, keeping its rows."""
    op.drop_index("ix_intake_log_pending", table_name="intake_log")
    op.drop_index("ix_intake_log_consumed_at", table_name="intake_log")
    op.rename_table("intake_log", "intake_log_old")
    op.create_table(
        "intake_log",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key", sa.String(260), nullable=True),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("events", sa.Integer(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=True),
        sa.Column("received_at", UTCDateTime(), nullable=False),
        sa.Column("consumed_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_intake_log")),
        sa.UniqueConstraint("key", name=op.f("uq_intake_log_key")),
        sqlite_autoincrement=autoincrement,
    )
    op.execute(f"INSERT INTO intake_log ({_COPY}) SELECT {_COPY} FROM intake_log_old")
    op.drop_table("intake_log_old")
    op.create_index(
        "ix_intake_log_pending",
        "intake_log",
        ["id"],
        sqlite_where=sa.text("consumed_at IS NULL"),
    )
    op.create_index("ix_intake_log_consumed_at", "intake_log", ["consumed_at"])


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    _rebuild(autoincrement=True)
    # Past every id a request ever had: dead letters still name consumed (deleted) ones.
    op.execute(
        "INSERT INTO sqlite_sequence (name, seq) SELECT 'intake_log', 0 "
        "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'intake_log')"
    )
    op.execute(
        "UPDATE sqlite_sequence SET seq = max(seq, "
        "(SELECT coalesce(max(id), 0) FROM intake_log), "
        "(SELECT coalesce(max(intake_id), 0) FROM dead_letters)) WHERE name = 'intake_log'"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    _rebuild(autoincrement=False)
