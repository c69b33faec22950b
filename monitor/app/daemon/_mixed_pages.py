"""One keyset-paged list over several result tables (`/metrics?kind=all`).

Rows of every table come in one order: newest window first, then version, slice key, the
table's rank (its place in the mapping given) and id. A cursor names the last row's position in
that order, so each table is read from there with its own index, `limit + 1` rows at most.
Without a window (`window_start`) or `since`, the newest window of any of the tables is listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import false, select, true
from sqlalchemy.orm import Session

from monitor.app.daemon._paging import Page, decode_cursor, page_of
from monitor.storage import newest

CURSOR = "mixed"


def mixed_page(
    session: Session, conds: Mapping[Any, list[Any]], window_start: datetime | None,
    since: datetime | None, cursor: str | None, limit: int,
) -> Page[Any]:  # fmt: skip
    """Rows of the tables (`conds`: table -> its filter conditions, in rank order)."""
    if window_start is None and since is None:
        found = [newest(session, t.window_start, c) for t, c in conds.items()]
        known = [n for n in found if n is not None]
        if not known:
            return Page([], None)
        window_start = max(known)
    after = decode_cursor(CURSOR, cursor, (datetime, str, str, int, int))
    rows: list[tuple[int, Any]] = []
    for rank, (t, where) in enumerate(conds.items()):
        window = t.window_start == window_start if window_start else t.window_start >= since
        where = [*where, window]
        if after is not None:
            where.append(_after(t, rank, *after))
        order = (t.window_start.desc(), t.version, t.slice_key, t.id)
        rows += [(rank, r) for r in session.scalars(
            select(t).where(*where).order_by(*order).limit(limit + 1))]  # fmt: skip
    rows.sort(key=lambda x: (-x[1].window_start.timestamp(), *_key(x)[1:]))
    page = page_of(CURSOR, rows[: limit + 1], limit, _key)
    return Page([r for _, r in page.items], page.next_cursor)


def _key(item: tuple[int, Any]) -> tuple[Any, ...]:
    rank, row = item
    return (row.window_start, row.version, row.slice_key, rank, row.id)


def _after(
    table: Any, rank: int, start: datetime, version: str, slice_key: str, after_rank: int,
    row_id: int,
) -> Any:  # fmt: skip
    """Rows of `table` (of rank `rank`) after a position in the mixed order."""
    tie = true() if rank > after_rank else (table.id > row_id) if rank == after_rank else false()
    same = (table.window_start == start) & (
        (table.version > version)
        | ((table.version == version) & (table.slice_key > slice_key))
        | ((table.version == version) & (table.slice_key == slice_key) & tie)
    )
    return (table.window_start < start) | same
