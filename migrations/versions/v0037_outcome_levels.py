"""Outcome levels: the one-sided level each outcome result's `degraded` decision tested at.

Revision ID: 0037_outcome_levels
Revises: 0036_selection_counts
Create Date: 2026-12-06

Outcome results are decided across one evaluation (`outcomes.correction: family`, Holm): each
interval is tested at a stricter one-sided level than its reported 95% one. `outcome_results`
and `outcome_period_results` gain `level`, that level (0.025 per result; null without a
verdict); rows written before hold null.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0037_outcome_levels"
down_revision = "0036_selection_counts"
branch_labels = None
depends_on = None

TABLES = ("outcome_results", "outcome_period_results")


def upgrade() -> None:
    # A nullable ADD COLUMN: no table rebuild under the views reading these tables.
    for table in TABLES:
        op.add_column(table, sa.Column("level", sa.Float(), nullable=True))


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_column(table, "level")
