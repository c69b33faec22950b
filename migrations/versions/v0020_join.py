"""Large summary payloads compressed with lz4 on PostgreSQL.

Revision ID: 0020_join
Revises: 0019_intake_dead_letters
Create Date: 2026-12-01

Window profiles and outcome summaries are rewritten whole by every batch that touches their
window (read, merged, written back), and their payloads run to tens of kilobytes, so
PostgreSQL TOAST-compresses them on every write. Its default method (pglz) cost the label join
about a third of its database CPU (bench/README.md); lz4 is several times faster at a similar
ratio. Set only where the server supports it (PostgreSQL 14+ built with lz4); elsewhere, and
on SQLite, nothing changes. Payloads already stored keep their compression until rewritten.
"""

from __future__ import annotations

from alembic import op

revision = "0020_join"
down_revision = "0019_intake_dead_letters"
branch_labels = None
depends_on = None

COLUMNS = (("window_profiles", "payload"), ("outcome_summaries", "payload"))


def _set_compression(method: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, column in COLUMNS:
        # EXECUTE defers parsing, so a server without the syntax (before 14) or without lz4
        # lands in the handler instead of failing the migration.
        op.execute(
            f"""DO $$ BEGIN
  EXECUTE 'ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {method}';
EXCEPTION WHEN syntax_error OR feature_not_supported OR invalid_parameter_value THEN NULL;
END $$"""
        )


def upgrade() -> None:
    _set_compression("lz4")


def downgrade() -> None:
    _set_compression("default")
