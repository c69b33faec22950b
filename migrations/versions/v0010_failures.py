"""Failures of scheduled-job items; drift results may say a column is `missing` or `new`.

Revision ID: 0010_failures
Revises: 0009_slice_keys
Create Date: 2026-12-01

`job_failures` holds one row per failing item (a window, a model, a signal producer) of a job:
since when, how many times, the last error and when it is retried; a success deletes the row.
Drift results gain two statuses for schema changes: `missing` (a baseline column the window
does not carry) and `new` (a window column the baseline does not have).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_failures"
down_revision = "0009_slice_keys"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
OLD = "status IN ('ok', 'drift', 'insufficient_data')"
NEW = "status IN ('ok', 'drift', 'insufficient_data', 'missing', 'new')"


def upgrade() -> None:
    op.create_table(
        "job_failures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job", sa.String(100), nullable=False),
        sa.Column("item", sa.String(500), nullable=False),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("version", sa.String(100), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("first_failed_at", TS, nullable=False),
        sa.Column("last_failed_at", TS, nullable=False),
        sa.Column("retry_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_failures")),
        sa.UniqueConstraint("job", "item", name=op.f("uq_job_failures_job_item")),
    )
    _status_check(NEW)


def downgrade() -> None:
    op.execute("DELETE FROM drift_results WHERE status IN ('missing', 'new')")
    _status_check(OLD)
    op.drop_table("job_failures")


def _status_check(condition: str) -> None:
    # SQLite rebuilds the table to change a CHECK, and refuses while views name the old one:
    # views are dropped and recreated from their stored SQL around the rebuild.
    bind = op.get_bind()
    views: list[tuple[str, str]] = []
    if bind.dialect.name == "sqlite":
        views = [(str(r[0]), str(r[1])) for r in bind.exec_driver_sql(_SQLITE_VIEWS).all()]
        for name, _ in views:
            op.execute(f'DROP VIEW "{name}"')
    with op.batch_alter_table("drift_results") as batch:
        batch.drop_constraint(op.f("ck_drift_results_status_known"), type_="check")
        batch.create_check_constraint(op.f("ck_drift_results_status_known"), condition)
    for _, sql in views:
        op.execute(sql)


_SQLITE_VIEWS = "SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY rowid"
