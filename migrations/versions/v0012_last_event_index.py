"""An index for "when did this model last get an event" (the `no_data` signal, every tick).

Revision ID: 0012_last_event_index
Revises: 0011_scale
Create Date: 2026-12-01

`no_data` asks, per model, for the newest `window_counts.updated_at`; without this index that is
a scan of every window of every model on each alert tick (and retention's delete by age scans
too).
"""

from __future__ import annotations

from alembic import op

revision = "0012_last_event_index"
down_revision = "0011_scale"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_window_counts_model_updated_at", "window_counts", ["model", "updated_at"])


def downgrade() -> None:
    op.drop_index("ix_window_counts_model_updated_at", table_name="window_counts")
