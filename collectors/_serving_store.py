"""Serving statistics of a batch merged into `window_serving`, in the batch transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from collectors._plan import Plan
from collectors._validate import utc
from monitor.profiles.serving import ServingSummary
from monitor.storage import WindowServing
from monitor.storage.base import utcnow

__all__ = ["merge_serving"]


def merge_serving(session: Session, plan: Plan, window_s: float) -> None:
    """Add each window's (and slice's) serving statistics; windows without any are skipped."""
    table: Any = WindowServing.__table__
    now = utcnow()
    for (model, version, start), window in plan.windows.items():
        if not window.serving.keys() - {"role"}:  # a role alone is no serving statistic
            continue
        head = {"model": model, "version": version, "window_start": utc(start)}
        where = [table.c[k] == v for k, v in head.items()]
        stmt = select(table).where(*where)
        if session.get_bind().dialect.name == "postgresql":
            stmt = stmt.with_for_update()
        stored = {row.slice_key: row for row in session.execute(stmt)}
        for slice_key, rows in window.slices.items():
            picked = range(len(window)) if rows is None else rows.tolist()
            batch = ServingSummary.of(window.serving, picked)
            old = stored.get(slice_key)
            if old is None:
                values = {**head, "slice_key": slice_key, "window_end": utc(start + window_s)}
                session.execute(insert(table).values(**values, **batch.to_row(), updated_at=now))
                continue
            merged = ServingSummary.from_row(old).merge(batch)
            session.execute(
                update(table)
                .where(*where, table.c.slice_key == slice_key)
                .values(**merged.to_row(), updated_at=now)
            )
