"""Serving statistics merged into `window_serving`: a batch's, in the batch transaction, and
scraped resource samples (`collectors._scrape`), each in place per (model, version, window,
slice) row."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from collectors._plan import Plan
from collectors._validate import utc
from monitor.profiles.serving import ServingSummary
from monitor.storage import WindowServing
from monitor.storage.base import utcnow

__all__ = ["merge_serving", "merge_summary"]


def merge_serving(session: Session, plan: Plan, window_s: float) -> None:
    """Add each window's (and slice's) serving statistics; windows without any are skipped."""
    for (model, version, start), window in plan.windows.items():
        if not window.serving.keys() - {"role"}:  # a role alone is no serving statistic
            continue
        batches = {}
        for slice_key, rows in window.slices.items():
            picked = range(len(window)) if rows is None else rows.tolist()
            batches[slice_key] = ServingSummary.of(window.serving, picked)
        merge_summary(session, model, version, (utc(start), utc(start + window_s)), batches)


def merge_summary(
    session: Session,
    model: str,
    version: str,
    window: tuple[datetime, datetime],
    batches: dict[str, ServingSummary],
) -> None:
    """Merge each slice's summary into its stored row of one window (inserted if new); the
    window's rows are locked first on PostgreSQL."""
    table: Any = WindowServing.__table__
    now = utcnow()
    head = {"model": model, "version": version, "window_start": window[0]}
    where = [table.c[k] == v for k, v in head.items()]
    stmt = select(table).where(*where)
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    stored = {row.slice_key: row for row in session.execute(stmt)}
    for slice_key, batch in batches.items():
        old = stored.get(slice_key)
        if old is None:
            values = {**head, "slice_key": slice_key, "window_end": window[1]}
            session.execute(insert(table).values(**values, **batch.to_row(), updated_at=now))
            continue
        merged = ServingSummary.from_row(old).merge(batch)
        session.execute(
            update(table)
            .where(*where, table.c.slice_key == slice_key)
            .values(**merged.to_row(), updated_at=now)
        )
