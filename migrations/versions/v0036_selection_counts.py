"""Selection counts: each window's and slice's scored predictions and positive predictions.

Revision ID: 0036_selection_counts
Revises: 0035_partitions
Create Date: 2026-12-05

Demographic parity compares the groups' selection rates over all predictions of a window, not
only those whose label arrived. `window_counts` gains `scored` (predictions with a usable
score) and `selected` (those predicting the positive class), added at ingest for models with
`fairness`; rows written before hold 0 (no predictions counted).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0036_selection_counts"
down_revision = "0035_partitions"
branch_labels = None
depends_on = None

COLUMNS = ("scored", "selected")


def upgrade() -> None:
    # Plain ADD COLUMN (a constant default): no table rebuild under the views reading it.
    for name in COLUMNS:
        op.add_column(
            "window_counts", sa.Column(name, sa.BigInteger(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    for name in reversed(COLUMNS):
        op.drop_column("window_counts", name)
