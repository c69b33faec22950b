"""Serving statistics merged into `window_serving`: a batch's, in the batch transaction, and
scraped resource samples (`collectors._scrape`), each in place per (model, version, window,
slice) row."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, tuple_, update
from sqlalchemy.orm import Session

from collectors._plan import Plan
from collectors._validate import utc
from monitor.profiles.serving import ServingSummary
from monitor.storage import WindowServing
from monitor.storage.base import utcnow

__all__ = ["merge_serving", "merge_summaries", "merge_summary"]

# (model, version, (window start, window end))
ServingWindow = tuple[str, str, tuple[datetime, datetime]]
# Windows per select of their stored rows.
WINDOWS_PER_SELECT = 500


def merge_serving(session: Session, plan: Plan, window_s: float) -> None:
    """Add each window's (and slice's) serving statistics; windows without any are skipped."""
    windows: dict[ServingWindow, dict[str, ServingSummary]] = {}
    for (model, version, start), window in plan.windows.items():
        if not window.serving.keys() - {"role"}:  # a role alone is no serving statistic
            continue
        batches = {}
        for slice_key, rows in window.slices.items():
            picked = range(len(window)) if rows is None else rows.tolist()
            batches[slice_key] = ServingSummary.of(window.serving, picked)
        windows[(model, version, (utc(start), utc(start + window_s)))] = batches
    merge_summaries(session, windows)


def merge_summary(
    session: Session,
    model: str,
    version: str,
    window: tuple[datetime, datetime],
    batches: dict[str, ServingSummary],
) -> None:
    """Merge each slice's summary into its stored row of one window (inserted if new)."""
    merge_summaries(session, {(model, version, window): batches})


def merge_summaries(
    session: Session, windows: Mapping[ServingWindow, dict[str, ServingSummary]]
) -> None:
    """Merge each window's slice summaries into their stored rows (inserted if new): the rows of
    all windows read in one select (locked, in key order, on PostgreSQL), then one executemany
    insert and one executemany update."""
    table: Any = WindowServing.__table__
    now = utcnow()
    head = (table.c.model, table.c.version, table.c.window_start)
    wanted = sorted((m, v, w[0]) for m, v, w in windows)
    locking = session.get_bind().dialect.name == "postgresql"
    stored: dict[tuple[str, str, datetime, str], Any] = {}
    for i in range(0, len(wanted), WINDOWS_PER_SELECT):
        stmt = select(table).where(tuple_(*head).in_(wanted[i : i + WINDOWS_PER_SELECT]))
        if locking:
            stmt = stmt.order_by(*head, table.c.slice_key).with_for_update()
        for row in session.execute(stmt):
            stored[(row.model, row.version, row.window_start, row.slice_key)] = row
    new: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    for (model, version, (start, end)), batches in windows.items():
        keys = {"model": model, "version": version, "window_start": start}
        for slice_key, batch in batches.items():
            old = stored.get((model, version, start, slice_key))
            if old is None:
                new.append({**keys, "slice_key": slice_key, "window_end": end} | batch.to_row())
                continue
            merged = ServingSummary.from_row(old).merge(batch).to_row()
            keyed = {f"k_{k}": v for k, v in keys.items()} | {"k_slice": slice_key}
            changed.append(keyed | merged)
    if new:
        session.execute(insert(table), [{**row, "updated_at": now} for row in new])
    if changed:
        where = [table.c[k] == bindparam(f"k_{k}") for k in ("model", "version", "window_start")]
        where.append(table.c.slice_key == bindparam("k_slice"))
        values: dict[str, Any] = {c: bindparam(c) for c in changed[0] if not c.startswith("k_")}
        session.execute(update(table).where(*where).values(updated_at=now, **values), changed)
