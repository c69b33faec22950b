"""Collectors: window profiles and counts, source positions, dead letters, counters, label join.

Revision ID: 0004_collectors
Revises: 0002_monitor
Create Date: 2026-11-30

Its number is not its place: it runs after 0002_monitor (migrations/__init__.py lists the order).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0004_collectors"
down_revision = "0002_monitor"
branch_labels = None
depends_on = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "dead_letters",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=200), nullable=False),
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("offset", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.String(length=50), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("payload_size", sa.BigInteger(), nullable=False),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dead_letters")),
    )
    op.create_index("ix_dead_letters_source_created_at", "dead_letters", ["source", "created_at"])

    op.create_table(
        "ingest_counters",
        sa.Column("source", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=20), nullable=False),
        sa.Column("events", sa.BigInteger(), nullable=False),
        sa.Column("labels", sa.BigInteger(), nullable=False),
        sa.Column("dead_letters", sa.BigInteger(), nullable=False),
        sa.Column("late", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("source", name=op.f("pk_ingest_counters")),
    )
    op.create_table(
        "labeled_predictions",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("request_id", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("ts", TS, nullable=False),
        sa.Column("prediction", JSON_DOC, nullable=False),
        sa.Column("label", JSON_DOC, nullable=False),
        sa.Column("slice_values", JSON_DOC, nullable=False),
        sa.Column("joined_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("model", "request_id", name=op.f("pk_labeled_predictions")),
    )
    op.create_index(
        "ix_labeled_predictions_model_version_ts", "labeled_predictions", ["model", "version", "ts"]
    )

    op.create_table(
        "pending_labels",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("request_id", sa.String(length=200), nullable=False),
        sa.Column("label", JSON_DOC, nullable=False),
        sa.Column("ts", TS, nullable=False),
        sa.PrimaryKeyConstraint("model", "request_id", name=op.f("pk_pending_labels")),
    )
    op.create_index("ix_pending_labels_model_ts", "pending_labels", ["model", "ts"])

    op.create_table(
        "pending_predictions",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("request_id", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("ts", TS, nullable=False),
        sa.Column("prediction", JSON_DOC, nullable=False),
        sa.Column("slice_values", JSON_DOC, nullable=False),
        sa.PrimaryKeyConstraint("model", "request_id", name=op.f("pk_pending_predictions")),
    )
    op.create_index("ix_pending_predictions_model_ts", "pending_predictions", ["model", "ts"])

    op.create_table(
        "source_positions",
        sa.Column("source", sa.String(length=200), nullable=False),
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("offset", sa.BigInteger(), nullable=False),
        sa.Column("end_offset", sa.BigInteger(), nullable=False),
        sa.Column("watermark", TS, nullable=True),
        sa.Column("detail", JSON_DOC, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("source", "key", name=op.f("pk_source_positions")),
    )
    op.create_table(
        "window_counts",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("window_start", TS, nullable=False),
        sa.Column("slice_key", sa.String(length=500), nullable=False),
        sa.Column("window_end", TS, nullable=False),
        sa.Column("events", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint(
            "model", "version", "window_start", "slice_key", name=op.f("pk_window_counts")
        ),
    )
    op.create_table(
        "window_profiles",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("window_start", TS, nullable=False),
        sa.Column("slice_key", sa.String(length=500), nullable=False),
        sa.Column("column", sa.String(length=200), nullable=False),
        sa.Column("window_end", TS, nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint(
            "model",
            "version",
            "window_start",
            "slice_key",
            "column",
            name=op.f("pk_window_profiles"),
        ),
    )
    op.create_table(
        "pending_halves",
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("pair_id", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("ts", TS, nullable=False),
        sa.Column("body", JSON_DOC, nullable=False),
        sa.PrimaryKeyConstraint("source", "pair_id", "kind", name=op.f("pk_pending_halves")),
    )
    op.create_index("ix_pending_halves_source_ts", "pending_halves", ["source", "ts"])


def downgrade() -> None:
    op.drop_index("ix_pending_halves_source_ts", table_name="pending_halves")
    op.drop_table("pending_halves")
    op.drop_table("window_profiles")
    op.drop_table("window_counts")
    op.drop_table("source_positions")
    op.drop_index("ix_pending_predictions_model_ts", table_name="pending_predictions")
    op.drop_table("pending_predictions")
    op.drop_index("ix_pending_labels_model_ts", table_name="pending_labels")
    op.drop_table("pending_labels")
    op.drop_index("ix_labeled_predictions_model_version_ts", table_name="labeled_predictions")
    op.drop_table("labeled_predictions")
    op.drop_table("ingest_counters")
    op.drop_index("ix_dead_letters_source_created_at", table_name="dead_letters")
    op.drop_table("dead_letters")
