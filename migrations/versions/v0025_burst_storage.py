"""Cheaper writes of an evaluate burst on PostgreSQL: lz4 for the other binary columns, and
day and week results updated in place.

Revision ID: 0025_burst_storage
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

`drift_period_results` and `outcome_period_results` are rewritten like window results (the
current day and week at every tick that changes one of their windows, each day of a burst) but
were left packed full and indexed on `computed_at`, the column every rewrite changes: no update
could be "HOT" (in place, no new index entries; see 0017), so each wrote a new entry into all
three indexes (~60 us a row against ~24 for window results in the soak). As 0017 did for
window results: `fillfactor = 50`, and no `computed_at` index (retention scans these tables by
age, as it does `drift_results`: a day or a week is one row per slice, column and method).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025_burst_storage"
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


PERIOD_TABLES = ("drift_period_results", "outcome_period_results")


def upgrade() -> None:
    _set("lz4")
    for table in PERIOD_TABLES:
        op.drop_index(f"ix_{table}_computed_at", table_name=table)
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"ALTER TABLE {table} SET (fillfactor = 50)")


def downgrade() -> None:
    for table in PERIOD_TABLES:
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"ALTER TABLE {table} RESET (fillfactor)")
        op.create_index(f"ix_{table}_computed_at", table, ["computed_at"])
    _set("default")
