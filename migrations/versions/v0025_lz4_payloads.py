"""The other binary columns compressed with lz4 on PostgreSQL, as 0020 set two of them.

Revision ID: 0025_lz4_payloads
Revises: 0024_waiting_batches
Create Date: 2026-12-02

0020 moved window profiles and outcome summaries to lz4. The day merges (`day_profiles`,
`day_outcome_summaries`), baseline profiles, the label join's waiting batches (0024), dead
letters and the intake log are bytea values of the same kind, often past PostgreSQL's TOAST
threshold (~2 KB), still compressed with pglz: an evaluate burst writes ~2,000 day profile rows
per 200 windows, 0.19 s of server CPU with pglz against 0.07 s with lz4 (soak), and the join
writes a batch row per batch. Only values written from now on use lz4; old ones stay readable as
they are. A server before PostgreSQL 14, or one built without lz4, keeps pglz; SQLite has no
such setting. The downgrade restores the default on these columns only.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025_lz4_payloads"
down_revision = "0024_waiting_batches"
branch_labels = None
depends_on = None

COLUMNS = (
    ("day_profiles", "payload"),
    ("baseline_profiles", "payload"),
    ("day_outcome_summaries", "payload"),
    ("waiting_batches", "keys"),
    ("waiting_batches", "body"),
    ("waiting_batches", "used"),
    ("dead_letters", "payload"),
    ("intake_log", "body"),
)


def _lz4(bind: sa.Connection) -> bool:
    """Whether this server compresses with lz4 (14+, built with it: the setting lists it)."""
    if bind.dialect.name != "postgresql":
        return False
    found = bind.execute(
        sa.text(
            "SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression'"
            " AND 'lz4' = ANY(enumvals)"
        )
    ).first()
    return found is not None


def _set(method: str) -> None:
    if not _lz4(op.get_bind()):
        return
    for table, column in COLUMNS:
        op.execute(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" SET COMPRESSION {method}')


def upgrade() -> None:
    _set("lz4")


def downgrade() -> None:
    _set("default")
