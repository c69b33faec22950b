"""Canary analysis: optimization settings on model versions, serving statistics per window.

Revision ID: 0013_canary_serving
Revises: 0012_last_event_index
Create Date: 2026-12-01

`model_versions.settings` records how a version was optimized (precision, quantization,
batching, runtime, free key=value). `window_serving` holds, per (model, version, window, slice),
the request and error counts, the mergeable log-scale latency sketches (end to end and inference
only) and the per-feature sums of absolute attributions: what canary analysis, serving SLOs and
attribution drift read.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0013_canary_serving"
down_revision = "0012_last_event_index"
branch_labels = None
depends_on = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    # Plain ALTER TABLE (no batch copy on SQLite: the dashboard views read model_versions).
    op.add_column(
        "model_versions", sa.Column("settings", JSON_DOC, nullable=False, server_default="{}")
    )
    op.create_table(
        "window_serving",
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("window_start", TS, nullable=False),
        sa.Column("slice_key", sa.String(500), nullable=False),
        sa.Column("window_end", TS, nullable=False),
        sa.Column("requests", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.Column("latency", JSON_DOC, nullable=False),
        sa.Column("model_latency", JSON_DOC, nullable=False),
        sa.Column("attributions", JSON_DOC, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint(
            "model", "version", "window_start", "slice_key", name=op.f("pk_window_serving")
        ),
    )
    op.create_index("ix_window_serving_updated_at", "window_serving", ["updated_at"])


def downgrade() -> None:
    op.drop_index("ix_window_serving_updated_at", table_name="window_serving")
    op.drop_table("window_serving")
    op.drop_column("model_versions", "settings")
