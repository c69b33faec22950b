"""Guards: gate run history and rollback events.

Revision ID: 0003_guards
Revises: 0005_alerts
Create Date: 2026-11-30

Its number is not its place: it runs after 0005_alerts (migrations/__init__.py lists the order).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0003_guards"
down_revision = "0005_alerts"
branch_labels = None
depends_on = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "gate_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("reference_sha256", sa.String(64), nullable=False),
        sa.Column("candidate_sha256", sa.String(64), nullable=False),
        sa.Column("golden_sha256", sa.String(64), nullable=False),
        sa.Column("preset", sa.String(50), nullable=False),
        sa.Column("verdict", sa.String(20), nullable=False),
        sa.Column("criteria", JSON_DOC, nullable=False),
        sa.Column("verdict_json", JSON_DOC, nullable=False),
        sa.Column("providers", JSON_DOC, nullable=False),
        sa.Column("timing", JSON_DOC, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gate_runs")),
    )
    op.create_index("ix_gate_runs_model_version", "gate_runs", ["model", "version", "created_at"])
    op.create_table(
        "rollback_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("from_version", sa.String(100), nullable=False),
        sa.Column("to_version", sa.String(100), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("gate_run_id", sa.Integer(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["gate_run_id"],
            ["gate_runs.id"],
            ondelete="SET NULL",
            name=op.f("fk_rollback_events_gate_run_id_gate_runs"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rollback_events")),
    )
    op.create_index(op.f("ix_rollback_events_model"), "rollback_events", ["model"])
    op.create_index(op.f("ix_rollback_events_gate_run_id"), "rollback_events", ["gate_run_id"])


def downgrade() -> None:
    op.drop_table("rollback_events")
    op.drop_table("gate_runs")
