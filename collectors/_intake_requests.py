"""What became of one HTTP intake request: consumed by the drain yet, and its dead letters.

`POST /v1/events` answers before its events are validated, so the drain tags each dead letter its
batch writes with the request it came from (:func:`trace_dead_letters`, inside the batch's
transaction: a dead letter exists exactly when it is tagged). The API then answers, by
Idempotency-Key or intake row, which events of a request were rejected: their index in the
request, reason, field and detail.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.storage import DeadLetter, IntakeEntry

# A rejection's detail starts with the field it is about: "timestamp: has no UTC offset".
_FIELD = re.compile(r"^([A-Za-z_$][\w.$\[\]-]*): ")


@dataclass(frozen=True)
class RequestSpan:
    """One intake request's events in a drain batch: offsets [start, start + events)."""

    intake_id: int
    key: str | None
    start: int
    events: int


@dataclass(frozen=True)
class RequestState:
    """An intake request as stored: its row (None once purged), events, and whether consumed."""

    intake_id: int | None
    events: int | None
    consumed: bool


@dataclass(frozen=True)
class RequestDeadLetter:
    """One rejected event of a request: its index in the request, reason and the field named."""

    id: int
    index: int | None
    reason: str
    field: str | None
    detail: str
    source: str
    created_at: datetime


def stored_key(namespace: str, key: str | None) -> str | None:
    """The intake log's unique key for an Idempotency-Key in a namespace (`idem`, `labels`)."""
    return None if key is None else f"{namespace}:{key}"


def field_of(detail: str) -> str | None:
    """The field a rejection's detail names first (None when it names none)."""
    match = _FIELD.match(detail)
    return match.group(1) if match else None


def trace_dead_letters(
    session: Session, source: str, drain_key: str, spans: Sequence[RequestSpan]
) -> int:
    """Tag the dead letters just written at `drain_key`'s offsets with their request and index
    (one indexed read; an update only when the batch has dead letters). Returns those tagged."""
    if not spans:
        return 0
    low, high = spans[0].start, spans[-1].start + spans[-1].events
    table: Any = DeadLetter.__table__
    found = session.execute(
        select(table.c.id, table.c.offset).where(
            table.c.key == drain_key,
            table.c.offset >= low,
            table.c.offset < high,
            table.c.source == source,
            table.c.intake_id.is_(None),
        )
    ).all()
    if not found:
        return 0
    starts = [span.start for span in spans]
    rows = []
    for dead_id, offset in found:
        span = spans[bisect.bisect_right(starts, offset) - 1]
        index = offset - span.start
        rows.append({"b_id": dead_id, "i_id": span.intake_id, "i_key": span.key, "i_ix": index})
    stmt = (
        update(table)
        .where(table.c.id == bindparam("b_id"))
        .values(
            intake_id=bindparam("i_id"),
            intake_key=bindparam("i_key"),
            intake_index=bindparam("i_ix"),
        )
    )
    session.execute(stmt, rows)
    return len(rows)


def request_state(engine: Engine, intake_id: int) -> RequestState:
    """Whether the drain consumed intake row `intake_id` (a consumed keyless row is deleted)."""
    with Session(engine) as session:
        row = session.execute(
            select(IntakeEntry.events, IntakeEntry.consumed_at).where(IntakeEntry.id == intake_id)
        ).first()
    if row is None:
        return RequestState(intake_id, None, True)
    return RequestState(intake_id, int(row.events), row.consumed_at is not None)


def keyed_request_state(engine: Engine, key: str) -> RequestState | None:
    """The stored request with this intake key (None: never seen, or its row was purged)."""
    with Session(engine) as session:
        row = session.execute(
            select(IntakeEntry.id, IntakeEntry.events, IntakeEntry.consumed_at).where(
                IntakeEntry.key == key
            )
        ).first()
    if row is None:
        return None
    return RequestState(int(row.id), int(row.events), row.consumed_at is not None)


def count_dead_letters(engine: Engine, intake_id: int) -> int:
    """How many events of intake row `intake_id` became dead letters."""
    with Session(engine) as session:
        stmt = select(func.count()).where(DeadLetter.intake_id == intake_id)
        return int(session.scalar(stmt) or 0)


def request_dead_letters(
    engine: Engine,
    *,
    intake_id: int | None = None,
    key: str | None = None,
    after: tuple[int, int] | None = None,
    limit: int = 10,
) -> list[RequestDeadLetter]:
    """A request's dead letters by event index (then id), after the (index, id) `after`,
    selected by intake row or by stored key (which outlives the row)."""
    column = DeadLetter.intake_id == intake_id if key is None else DeadLetter.intake_key == key
    query = select(DeadLetter).where(column)
    if after is not None:
        index, last = after
        later = (DeadLetter.intake_index == index) & (DeadLetter.id > last)
        query = query.where((DeadLetter.intake_index > index) | later)
    query = query.order_by(DeadLetter.intake_index, DeadLetter.id).limit(limit)
    with Session(engine) as session:
        return [_dead(row) for row in session.scalars(query)]


def _dead(row: DeadLetter) -> RequestDeadLetter:
    return RequestDeadLetter(
        id=row.id,
        index=row.intake_index,
        reason=row.reason,
        field=field_of(row.detail),
        detail=row.detail,
        source=row.source,
        created_at=row.created_at,
    )
