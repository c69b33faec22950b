"""The failing window's start of a job failure, stored: item names are never parsed.

Revision ID: 0022_failure_windows
Revises: 0021_day_summaries
Create Date: 2026-12-01

`job_failures.window_start` (nullable, UTC) is the start of the failing window when the item is
one window (`<kind> <model>/<version> <start>`: drift, outcomes, slo, estimate). The evaluate
job reads it to retry a failing window's SLO evaluation and to hold back the days and weeks of
a failing window; it parsed item names before, which broke on model names with spaces.

Existing rows whose item has that form (given their model and version columns) get their
start; others (periods, baselines, components, purges...) stay NULL.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from alembic import op

from monitor.storage.base import UTCDateTime

revision = "0022_failure_windows"
down_revision = "0021_day_summaries"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("job_failures", sa.Column("window_start", sa.DateTime(timezone=True)))
    conn = op.get_bind()
    failures = sa.table(
        "job_failures",
        sa.column("id", sa.Integer()),
        *(sa.column(n, sa.String()) for n in ("item", "model", "version")),
        sa.column("window_start", UTCDateTime()),
    )
    stmt = sa.select(failures.c.id, failures.c.item, failures.c.model, failures.c.version)
    starts = [
        {"row_id": row_id, "start": start}
        for row_id, item, model, version in conn.execute(stmt)
        if (start := _window_start(item, model, version)) is not None
    ]
    if starts:
        update = (
            sa.update(failures)
            .where(failures.c.id == sa.bindparam("row_id"))
            .values(window_start=sa.bindparam("start"))
        )
        conn.execute(update, starts)


def _window_start(item: str, model: str | None, version: str | None) -> datetime | None:
    """The start in `<kind> <model>/<version> <start>` (model and version as stored), or None."""
    if model is None or version is None:
        return None
    kind, _, rest = item.partition(" ")
    head = f"{model}/{version} "
    if not kind or not rest.startswith(head):
        return None
    try:
        start = datetime.fromisoformat(rest[len(head) :])
    except ValueError:  # a period ("day <start>") or another item of the model
        return None
    return start if start.tzinfo is not None else None


def downgrade() -> None:
    # Plain DROP COLUMN (SQLite >= 3.35), as 0019: a batch copy would break views on the table.
    op.drop_column("job_failures", "window_start")
