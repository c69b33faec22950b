"""Latency per stage: the sketches of queue, preprocess, postprocess and network time.

Revision ID: 0030_latency_stages
Revises: 0026_intake_ids
Create Date: 2026-12-05

Events may carry stage timings (`queue_ms`, `preprocess_ms`, `model_ms`, `postprocess_ms`,
`network_ms`). The model stage already has its column (`window_serving.model_latency`); the
others are kept as one JSON document `{stage: sketch}` in `window_serving.stages`, NULL for the
rows written before (read as no stage timings).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0030_latency_stages"
down_revision = "0026_intake_ids"
branch_labels = None
depends_on = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    # Plain ALTER TABLE ADD COLUMN on both backends (nullable: no table copy on SQLite).
    op.add_column("window_serving", sa.Column("stages", JSON_DOC, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("window_serving") as batch:
        batch.drop_column("stages")
