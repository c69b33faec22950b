"""Change tracking: which (model, version, window) changed since it was last evaluated.

Ingest and the label join upsert a row per changed window in their own transaction, bumping its
`seq` and setting `pending`. The evaluate job reads the pending rows of a model (an index lookup,
whatever the history), evaluates them, then clears `pending` only where `seq` is still the value
it read: a change that lands while a window is being evaluated keeps it pending, and a crash
between "evaluated" and "consumed" leaves it pending, so it is evaluated again (results are
upserts), never lost. A row stays after it is consumed (one per window, removed by retention),
so `seq` never restarts and a stale consumer cannot clear a newer change.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Index,
    String,
    and_,
    bindparam,
    case,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Mapped, Session, mapped_column

from monitor.storage._engine import session_factory, transaction
from monitor.storage.base import Base, UTCDateTime, utcnow

# What changed: "drift" = the window's profiles, "outcome" = its joined labels, "backfill" = a
# model's outcome summaries must be rebuilt from stored joined rows (set by migration 0011),
# "estimate" = its derived-column profiles or its labels (`monitor.estimation`).
CHANGE_KINDS = ("drift", "outcome", "backfill", "estimate")


class WindowChange(Base):
    """One window's change marker of one kind: evaluate it while `pending`."""

    __tablename__ = "window_changes"
    __table_args__ = (Index("ix_window_changes_pending", "model", "kind", "pending"),)

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    kind: Mapped[str] = mapped_column(String(20), primary_key=True)
    version: Mapped[str] = mapped_column(String(100), primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    window_end: Mapped[datetime] = mapped_column(UTCDateTime)
    seq: Mapped[int] = mapped_column(BigInteger)
    pending: Mapped[bool] = mapped_column(Boolean)
    # When the marker last became pending: the oldest change not yet evaluated (a change to a
    # pending marker keeps it), so an open day re-evaluated at most every so often knows how
    # long its change has waited (`monitor.evaluation.period_jobs`).
    changed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


@dataclass(frozen=True)
class Change:
    """A pending change as read: the window and the `seq` that consuming it must match."""

    model: str
    version: str
    start: datetime
    end: datetime
    seq: int
    # When the marker became pending (see `WindowChange.changed_at`); None where not read.
    changed_at: datetime | None = field(default=None, compare=False)

    def due(self, now: datetime, interval: timedelta, settled: datetime | None = None) -> bool:
        """Whether to evaluate it at `now` when open windows or periods are re-evaluated at most
        once per `interval`: an ended one once its events are all aggregated (its end not after
        `settled`, `intake_settled`; None: at once), an open one once it has been pending that
        long (`models_pending` asks the same of the stored rows)."""
        if self.end <= now:
            return settled is None or self.end <= settled
        if not interval or self.changed_at is None:
            return True
        return now - self.changed_at >= interval


def mark_changed(
    session: Session,
    kind: str | Sequence[str],
    windows: Iterable[tuple[str, str, datetime, datetime]],
    now: datetime | None = None,
) -> None:
    """Mark (model, version, start, end) windows changed for `kind` (or each of several kinds,
    in one statement), inside the caller's transaction."""
    rows = _mark_rows(kind, windows, now or utcnow())
    if rows:
        session.execute(_mark_statement(session.get_bind().dialect.name), rows)


def mark_read(
    session: Session,
    kind: str,
    windows: Iterable[tuple[str, str, datetime, datetime]],
    now: datetime | None = None,
) -> list[Change]:
    """`mark_changed` for one kind, returning the marked changes as `pending_kinds` would read
    them (their new `seq`), so the caller needs no second read."""
    rows = _mark_rows(kind, windows, now or utcnow())
    if not rows:
        return []
    stmt = _mark_statement(session.get_bind().dialect.name).returning(*_READ)
    # One statement per row: a tick marks a day and a week per version, seldom more.
    return [_change(session.execute(stmt, row).one()) for row in rows]


def _mark_rows(
    kind: str | Sequence[str], windows: Iterable[tuple[str, str, datetime, datetime]], now: datetime
) -> list[dict[str, Any]]:
    kinds = [kind] if isinstance(kind, str) else sorted(set(kind))
    marked = set(windows)
    return [
        {"model": m, "kind": k, "version": v, "window_start": s, "window_end": e}
        | {"seq": 1, "pending": True, "changed_at": now}
        # Sorted in key order, so concurrent transactions lock rows in one order (no deadlock).
        for m, k, v, s, e in sorted((m, k, v, s, e) for m, v, s, e in marked for k in kinds)
    ]


@cache
def _mark_statement(dialect: str) -> Any:
    """The marking upsert, built once per dialect (building it costs more than running it)."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(WindowChange)
    return stmt.on_conflict_do_update(
        index_elements=["model", "kind", "version", "window_start"],
        set_={
            "seq": WindowChange.seq + 1,
            "pending": True,
            "changed_at": case(
                (WindowChange.pending.is_(True), WindowChange.changed_at),
                else_=stmt.excluded.changed_at,
            ),
        },
    )


_READ = (
    WindowChange.model,
    WindowChange.kind,
    WindowChange.version,
    WindowChange.window_start,
    WindowChange.window_end,
    WindowChange.seq,
    WindowChange.changed_at,
)


def _change(row: Any) -> Change:
    model, _kind, version, start, end, seq, changed_at = row
    return Change(model, version, start, end, int(seq), changed_at)


def pending_changes(engine: Engine, model: str, kind: str) -> list[Change]:
    """The model's pending changes of `kind`, oldest window first."""
    stmt = (
        select(
            WindowChange.version,
            WindowChange.window_start,
            WindowChange.window_end,
            WindowChange.seq,
        )
        .where(
            WindowChange.model == model,
            WindowChange.kind == kind,
            WindowChange.pending.is_(True),
        )
        .order_by(WindowChange.window_start, WindowChange.version)
    )
    with session_factory(engine)() as s:
        return [Change(model, v, start, end, int(seq)) for v, start, end, seq in s.execute(stmt)]


def pending_kinds(
    target: Engine | Session, model: str, kinds: Sequence[str]
) -> dict[str, list[Change]]:
    """The model's pending changes of each of `kinds` (oldest window first), in one query: the
    evaluate job's one read per model and tick instead of one per kind (in the caller's
    session when given one)."""
    stmt = (
        select(*_READ)
        .where(
            WindowChange.model == model,
            WindowChange.kind.in_(kinds),
            WindowChange.pending.is_(True),
        )
        .order_by(WindowChange.window_start, WindowChange.version)
    )
    found: dict[str, list[Change]] = {kind: [] for kind in kinds}
    if isinstance(target, Session):
        rows = target.execute(stmt).all()
    else:
        with session_factory(target)() as s:
            rows = s.execute(stmt).all()
    for row in rows:
        found[row[1]].append(_change(row))
    return found


def consume_changes(target: Engine | Session, kind: str, changes: Sequence[Change]) -> None:
    """Clear `pending` of changes whose `seq` is still the one read (see the module docstring);
    in the caller's transaction when given a Session (results and markers commit together)."""
    if not changes:
        return
    table: Any = WindowChange.__table__
    stmt = (
        update(table)
        .where(
            and_(
                table.c.model == bindparam("k_model"),
                table.c.kind == kind,
                table.c.version == bindparam("k_version"),
                table.c.window_start == bindparam("k_start"),
                table.c.seq == bindparam("k_seq"),
            )
        )
        .values(pending=False)
    )
    params = [
        {"k_model": c.model, "k_version": c.version, "k_start": c.start, "k_seq": c.seq}
        for c in changes
    ]
    if isinstance(target, Session):
        target.execute(stmt, params)
        return
    with transaction(target) as s:
        s.execute(stmt, params)


def models_pending(
    engine: Engine,
    models: Sequence[str],
    kinds: Sequence[str],
    now: datetime | None = None,
    paced: Sequence[tuple[Sequence[str], float]] = (),
    settled: tuple[Sequence[str], datetime] | None = None,
) -> set[str]:
    """Of `models`, those with a pending change of one of `kinds`: one query, each (model, kind)
    a lookup of the pending index (`ix_window_changes_pending`), whatever the history.

    `paced`: (kinds, interval_s) pairs; a pending change of those kinds counts only once its
    window ended by `now` or it has been pending `interval_s` (an open window, day or week
    waits for its interval: `monitor.evaluation`). `settled`: (kinds, time); an ended window
    of those kinds counts only once it ended by that time (its events are all aggregated:
    `intake_settled`)."""
    if not models or not kinds:
        return set()
    due: Any = WindowChange.kind.in_(sorted(set(kinds)))
    at = now or utcnow()
    for paced_kinds, interval_s in paced:
        if interval_s <= 0:
            continue
        waited = at - timedelta(seconds=interval_s)
        due = and_(
            due,
            or_(
                WindowChange.kind.not_in(sorted(set(paced_kinds))),
                WindowChange.window_end <= at,
                WindowChange.changed_at <= waited,
            ),
        )
    if settled is not None:
        settled_kinds, settled_at = settled
        due = and_(
            due,
            or_(
                WindowChange.kind.not_in(sorted(set(settled_kinds))),
                WindowChange.window_end > at,
                WindowChange.window_end <= settled_at,
            ),
        )
    stmt = (
        select(WindowChange.model)
        .where(WindowChange.model.in_(sorted(set(models))), WindowChange.pending.is_(True), due)
        .distinct()
    )
    with session_factory(engine)() as s:
        return set(s.scalars(stmt))
