"""Scale: change markers for the evaluate job, and mergeable outcome summaries.

Revision ID: 0011_scale
Revises: 0010_failures
Create Date: 2026-12-01

`window_changes` says which windows changed since they were evaluated (monitor/storage/_changes.py)
so a tick needs no scan of history; `outcome_summaries` holds per (model, version, window, slice)
the sufficient statistics of outcome metrics (monitor/outcomes/summary.py).

Existing deployments move over without losing work: windows whose profiles changed after their
last drift evaluation are marked pending, and every model with joined predictions gets a one-off
"backfill" marker; the daemon then rebuilds that model's summaries from its stored joined rows
(only the daemon knows each model's task, threshold, slices and window size).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

from monitor.storage.base import UTCDateTime

revision = "0011_scale"
down_revision = "0010_failures"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "window_changes",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("window_start", TS, nullable=False),
        sa.Column("window_end", TS, nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("pending", sa.Boolean(), nullable=False),
        sa.Column("changed_at", TS, nullable=False),
        sa.PrimaryKeyConstraint(
            "model", "kind", "version", "window_start", name=op.f("pk_window_changes")
        ),
    )
    op.create_index("ix_window_changes_pending", "window_changes", ["model", "kind", "pending"])
    op.create_table(
        "outcome_summaries",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("window_start", TS, nullable=False),
        sa.Column("slice_key", sa.String(length=500), nullable=False),
        sa.Column("window_end", TS, nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint(
            "model", "version", "window_start", "slice_key", name=op.f("pk_outcome_summaries")
        ),
    )
    _mark_existing()


def _mark_existing() -> None:
    conn = op.get_bind()
    # Typed, so timestamps are read and written in the stored format of each backend.
    profiles = sa.table(
        "window_profiles",
        *_cols("model", "version"),
        *_ts("window_start", "window_end", "updated_at"),
    )
    drift = sa.table(
        "drift_results", *_cols("model", "version"), *_ts("window_start", "computed_at")
    )
    joined = sa.table("labeled_predictions", *_cols("model"))
    changes = sa.table(
        "window_changes",
        *_cols("model", "kind", "version"),
        *_ts("window_start", "window_end", "changed_at"),
        sa.column("seq", sa.BigInteger()),
        sa.column("pending", sa.Boolean()),
    )
    key = (drift.c.model, drift.c.version, drift.c.window_start)
    done = dict(
        ((m, v, s), at)
        for m, v, s, at in conn.execute(
            sa.select(*key, sa.func.max(drift.c.computed_at)).group_by(*key)
        )
    )
    key = (profiles.c.model, profiles.c.version, profiles.c.window_start)
    windows = sa.select(
        *key, sa.func.max(profiles.c.window_end), sa.func.max(profiles.c.updated_at)
    ).group_by(*key)
    now = datetime.now(UTC)
    rows: list[dict[str, Any]] = [
        _row(m, "drift", v, start, end, now)
        for m, v, start, end, updated in conn.execute(windows)
        if (m, v, start) not in done or done[(m, v, start)] < updated
    ]
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    for (model,) in conn.execute(sa.select(joined.c.model).distinct()):
        rows.append(_row(model, "backfill", "", epoch, epoch, now))
    if rows:
        conn.execute(sa.insert(changes), rows)


def _cols(*names: str) -> list[sa.ColumnClause[Any]]:
    return [sa.column(n, sa.String()) for n in names]


def _ts(*names: str) -> list[sa.ColumnClause[Any]]:
    return [sa.column(n, UTCDateTime()) for n in names]


def _row(
    model: str, kind: str, version: str, start: Any, end: Any, now: datetime
) -> dict[str, Any]:
    return {
        "model": model,
        "kind": kind,
        "version": version,
        "window_start": start,
        "window_end": end,
        "seq": 1,
        "pending": True,
        "changed_at": now,
    }


def downgrade() -> None:
    op.drop_table("outcome_summaries")
    op.drop_index("ix_window_changes_pending", table_name="window_changes")
    op.drop_table("window_changes")
