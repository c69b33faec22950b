"""Drift results say which threshold strategy set their threshold.

Revision ID: 0008_thresholds
Revises: 0006_dashboard_views
Create Date: 2026-12-01

`threshold_by` is "constant", "reference" or "floor" (see monitor/detectors/variability.py);
NULL on rows written before this revision. The reference variability itself is stored in the
baseline's existing `settings` JSON document, so it needs no schema change.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_thresholds"
down_revision = "0006_dashboard_views"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("drift_results", sa.Column("threshold_by", sa.String(20), nullable=True))


def downgrade() -> None:
    op.drop_column("drift_results", "threshold_by")
