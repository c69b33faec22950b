"""Merged day summaries: a week is a merge of 7 stored days, not of 168 windows.

Revision ID: 0021_day_summaries
Revises: 0020_join
Create Date: 2026-12-01

`day_profiles`, `day_counts` and `day_outcome_summaries` hold, per (model, version, day, slice
[, column]), the day's window profiles, event counts and outcome summaries merged. The evaluate
job writes them with the day's results (`monitor.evaluation.periods`) and merges a week's 7 stored
days, so the current week can be evaluated every tick (it was at most hourly: a 168-window merge).

Existing deployments move over: every day that has windows is marked changed (`drift_day` and
`outcome_day` markers in `window_changes`), so the daemon stores its merged summaries (and its
results again) on its first ticks; weeks are evaluated from stored days once theirs are.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from alembic import op

from monitor.storage.base import UTCDateTime

revision = "0021_day_summaries"
down_revision = "0020_join"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
DAY = 86400
# kind of the day marker, table whose windows say a day has data
SOURCES = (("drift_day", "window_counts"), ("outcome_day", "outcome_summaries"))


def _key(*columns: sa.Column) -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("day_start", TS, nullable=False),
        sa.Column("slice_key", sa.String(500), nullable=False),
        *columns,
    ]


def upgrade() -> None:
    head = ("model", "version", "day_start", "slice_key")
    op.create_table(
        "day_profiles",
        *_key(sa.Column("column", sa.String(200), nullable=False)),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint(*head, "column", name=op.f("pk_day_profiles")),
    )
    op.create_table(
        "day_counts",
        *_key(),
        sa.Column("events", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint(*head, name=op.f("pk_day_counts")),
    )
    op.create_table(
        "day_outcome_summaries",
        *_key(),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint(*head, name=op.f("pk_day_outcome_summaries")),
    )
    _mark_existing_days()


def _mark_existing_days() -> None:
    conn = op.get_bind()
    changes = sa.table(
        "window_changes",
        *(sa.column(n, sa.String()) for n in ("model", "kind", "version")),
        *(sa.column(n, UTCDateTime()) for n in ("window_start", "window_end", "changed_at")),
        sa.column("seq", sa.BigInteger()),
        sa.column("pending", sa.Boolean()),
    )
    kinds = [kind for kind, _ in SOURCES]
    where = changes.c.kind.in_(kinds)
    seqs = {
        (m, k, v, s): seq
        for m, k, v, s, seq in conn.execute(
            sa.select(changes.c.model, changes.c.kind, changes.c.version,
                      changes.c.window_start, changes.c.seq).where(where)
        )
    }  # fmt: skip
    now = datetime.now(UTC)
    rows: dict[tuple[str, str, str, datetime], dict[str, Any]] = {}
    for kind, source in SOURCES:
        windows = sa.table(source, sa.column("model"), sa.column("version"),
                           sa.column("window_start", UTCDateTime()))  # fmt: skip
        stmt = sa.select(windows.c.model, windows.c.version, windows.c.window_start).distinct()
        for model, version, start in conn.execute(stmt):
            day = datetime.fromtimestamp(start.timestamp() // DAY * DAY, UTC)
            key = (model, kind, version, day)
            rows[key] = {"model": model, "kind": kind, "version": version, "window_start": day}
            rows[key] |= {"window_end": day + timedelta(days=1), "changed_at": now}
            rows[key] |= {"seq": seqs.get(key, 0) + 1, "pending": True}
    conn.execute(sa.delete(changes).where(where))
    if rows:
        conn.execute(sa.insert(changes), list(rows.values()))


def downgrade() -> None:
    for table in ("day_outcome_summaries", "day_counts", "day_profiles"):
        op.drop_table(table)
