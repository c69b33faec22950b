"""A partial index for the `ingest_lag` signal and the consumer-lag gauge (every tick).

Revision ID: 0014_lag_index
Revises: 0013_canary_serving
Create Date: 2026-12-01

`source_positions` holds one row per Kafka partition or file, but also one per HTTP
idempotency key (fully consumed: end_offset = offset), so it grows with ingest history. Lag is
the sum of `end_offset - offset` over the rows that are behind; this index holds only those
rows, with the columns the sum reads, so the per-tick sum reads the lagging partitions and never
the keys.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_lag_index"
down_revision = "0013_canary_serving"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_source_positions_lag",
        "source_positions",
        ["source", "end_offset", "offset"],
        postgresql_where=sa.text('end_offset > "offset"'),
        sqlite_where=sa.text('end_offset > "offset"'),
    )


def downgrade() -> None:
    op.drop_index("ix_source_positions_lag", table_name="source_positions")
