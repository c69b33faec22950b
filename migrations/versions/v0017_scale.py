"""Room for in-place updates of result rows on PostgreSQL.

Revision ID: 0017_scale
Revises: 0016_slo_results
Create Date: 2026-12-01

A window is re-evaluated whenever it changes (the current window every tick, a whole burst of
windows after a backfill), and every re-evaluation updates its result rows. With pages packed
full, each update writes the row elsewhere and a new entry into every index of the table; with
free room on the page PostgreSQL updates it in place ("HOT": no index entry, no index bloat).
`fillfactor = 50` on `drift_results` and `outcome_results` leaves that room: the upsert of a
1,000-window burst cost a third as much on the server (bench/soak.py). New pages get the room;
existing pages as they are rewritten (`VACUUM FULL` rewrites them at once). SQLite has no such
setting: nothing to do there.
"""

from __future__ import annotations

from alembic import op

revision = "0017_scale"
down_revision = "0016_slo_results"
branch_labels = None
depends_on = None

UPDATED_IN_PLACE = ("drift_results", "outcome_results")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in UPDATED_IN_PLACE:
            op.execute(f"ALTER TABLE {table} SET (fillfactor = 50)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in UPDATED_IN_PLACE:
            op.execute(f"ALTER TABLE {table} RESET (fillfactor)")
