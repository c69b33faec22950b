"""Dead letters of HTTP ingest point back at the request they came from.

Revision ID: 0019_intake_dead_letters
Revises: 0018_estimated_results
Create Date: 2026-12-01

`POST /v1/events` answers before its events are validated (the intake drain does that), so a
dead letter of the HTTP source records the intake request it came from: `intake_id` (the
`intake_log` row), `intake_key` (its stored Idempotency-Key, kept after the row is purged) and
`intake_index` (the event's index in the request). `GET /v1/dead-letters?idempotency_key=` and
`POST /v1/events?wait=` read them by key or row. The drain finds the dead letters its batch just
wrote by (key, offset), hence that index. The retention job deletes consumed intake rows older
than `collect.http_dedup_window` by `consumed_at`, hence `ix_intake_log_consumed_at`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_intake_dead_letters"
down_revision = "0018_estimated_results"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("dead_letters", sa.Column("intake_id", sa.BigInteger(), nullable=True))
    op.add_column("dead_letters", sa.Column("intake_key", sa.String(260), nullable=True))
    op.add_column("dead_letters", sa.Column("intake_index", sa.Integer(), nullable=True))
    op.create_index("ix_dead_letters_key_offset", "dead_letters", ["key", "offset"])
    op.create_index("ix_dead_letters_intake_id", "dead_letters", ["intake_id", "intake_index"])
    op.create_index("ix_dead_letters_intake_key", "dead_letters", ["intake_key", "intake_index"])
    op.create_index("ix_intake_log_consumed_at", "intake_log", ["consumed_at"])


def downgrade() -> None:
    op.drop_index("ix_intake_log_consumed_at", table_name="intake_log")
    op.drop_index("ix_dead_letters_intake_key", table_name="dead_letters")
    op.drop_index("ix_dead_letters_intake_id", table_name="dead_letters")
    op.drop_index("ix_dead_letters_key_offset", table_name="dead_letters")
    # Plain DROP COLUMN (SQLite >= 3.35): a batch copy of the table would break the views on it.
    for column in ("intake_index", "intake_key", "intake_id"):
        op.drop_column("dead_letters", column)
