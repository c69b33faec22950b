"""Alerts: alert state, notification groups, the notification outbox, silences.

Revision ID: 0005_alerts
Revises: 0007_daemon
Create Date: 2026-11-30

Its number is not its place: it runs after 0007_daemon (migrations/__init__.py lists the order).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005_alerts"
down_revision = "0007_daemon"
branch_labels = None
depends_on = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "alert_states",
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.Column("rule", sa.String(200), nullable=False),
        sa.Column("labels", JSON_DOC, nullable=False),
        sa.Column("annotations", JSON_DOC, nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("active_since", TS, nullable=False),
        sa.Column("last_active_at", TS, nullable=False),
        sa.Column("fired_at", TS, nullable=True),
        sa.Column("resolved_at", TS, nullable=True),
        sa.Column("muted_by", sa.String(64), nullable=True),
        sa.Column("updated_at", TS, nullable=False),
        sa.CheckConstraint(
            "state IN ('pending', 'firing', 'resolved')", name=op.f("ck_alert_states_state_known")
        ),
        sa.PrimaryKeyConstraint("fingerprint", name=op.f("pk_alert_states")),
    )
    op.create_index(op.f("ix_alert_states_rule"), "alert_states", ["rule"])
    op.create_table(
        "alert_groups",
        sa.Column("group_key", sa.String(64), nullable=False),
        sa.Column("receiver", sa.String(200), nullable=False),
        sa.Column("rule", sa.String(200), nullable=False),
        sa.Column("group_labels", JSON_DOC, nullable=False),
        sa.Column("waiting_since", TS, nullable=True),
        sa.Column("last_flush_at", TS, nullable=True),
        sa.Column("notified", JSON_DOC, nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("group_key", name=op.f("pk_alert_groups")),
    )
    op.create_table(
        "alert_notifications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("receiver", sa.String(200), nullable=False),
        sa.Column("group_key", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("idempotency_key", sa.String(64), nullable=False),
        sa.Column("payload", JSON_DOC, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", TS, nullable=False),
        sa.Column("lease_until", TS, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("sent_at", TS, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'sending', 'sent', 'dead')",
            name=op.f("ck_alert_notifications_status_known"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_notifications")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_alert_notifications_idempotency_key")),
    )
    op.create_index(op.f("ix_alert_notifications_group_key"), "alert_notifications", ["group_key"])
    op.create_index(
        "ix_alert_notifications_status_due", "alert_notifications", ["status", "next_attempt_at"]
    )
    op.create_table(
        "alert_silences",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("matchers", JSON_DOC, nullable=False),
        sa.Column("author", sa.String(200), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("starts_at", TS, nullable=False),
        sa.Column("ends_at", TS, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_silences")),
    )


def downgrade() -> None:
    op.drop_table("alert_silences")
    op.drop_table("alert_notifications")
    op.drop_table("alert_groups")
    op.drop_table("alert_states")
