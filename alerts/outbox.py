"""The durable outbox: rows written with the state change that caused them, claimed by workers.

A row is `pending` until a worker claims it (`sending`, with a lease), then `sent`, back to
`pending` with a later `next_attempt_at` after a failure, or `dead` once its attempts or age run
out. A worker that dies mid-send leaves a `sending` row whose lease expires; the row is claimed
again and re-sent with the same idempotency key, so delivery is at-least-once and receivers
drop duplicates by key.

Claiming never hands out a row while an older row of the same group is pending or sending, so
each group's notifications arrive in order. On PostgreSQL, replicas claim with
`FOR UPDATE SKIP LOCKED`; on SQLite (one writer at a time) each row is taken by a conditional
UPDATE that only one worker can win.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, func, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, aliased
from sqlalchemy.sql.elements import ColumnElement

from monitor.storage import AlertNotification, transaction

N = AlertNotification


@dataclass(frozen=True)
class Claimed:
    """A row this worker holds until its lease ends."""

    id: int
    kind: str
    receiver: str
    group_key: str
    idempotency_key: str
    payload: dict[str, Any]
    attempts: int
    created_at: datetime


def enqueue(
    session: Session,
    *,
    kind: str,
    receiver: str,
    group_key: str,
    seq: int,
    payload: dict[str, Any],
    now: datetime,
) -> AlertNotification:
    """Add a pending row in the caller's transaction; its idempotency key is new and random."""
    row = AlertNotification(
        kind=kind,
        receiver=receiver,
        group_key=group_key,
        seq=seq,
        idempotency_key=uuid.uuid4().hex,
        payload=payload,
        status="pending",
        attempts=0,
        next_attempt_at=now,
        created_at=now,
    )
    session.add(row)
    return row


def _claimable(now: datetime, kinds: Collection[str]) -> ColumnElement[bool]:
    earlier = aliased(AlertNotification)
    blocked = exists().where(
        earlier.group_key == N.group_key,
        earlier.id < N.id,
        earlier.status.in_(("pending", "sending")),
    )
    due = or_(
        and_(N.status == "pending", N.next_attempt_at <= now),
        and_(N.status == "sending", N.lease_until <= now),
    )
    return and_(due, N.kind.in_(list(kinds)), ~blocked)


def _to_claimed(row: AlertNotification) -> Claimed:
    return Claimed(
        id=row.id,
        kind=row.kind,
        receiver=row.receiver,
        group_key=row.group_key,
        idempotency_key=row.idempotency_key,
        payload=dict(row.payload),
        attempts=row.attempts,
        created_at=row.created_at,
    )


def claim(
    engine: Engine,
    now: datetime,
    *,
    lease: timedelta,
    limit: int,
    kinds: Collection[str] = ("notify",),
) -> list[Claimed]:
    """Take up to `limit` due rows (at most one per group), oldest first."""
    if engine.dialect.name == "postgresql":
        return _claim_skip_locked(engine, now, lease, limit, kinds)
    return _claim_conditional(engine, now, lease, limit, kinds)


def _claim_skip_locked(
    engine: Engine, now: datetime, lease: timedelta, limit: int, kinds: Collection[str]
) -> list[Claimed]:
    query = (
        select(N)
        .where(_claimable(now, kinds))
        .order_by(N.id)
        .limit(limit)
        .with_for_update(skip_locked=True, of=N)
    )
    with transaction(engine) as session:
        rows = session.scalars(query).all()
        for row in rows:
            row.status, row.lease_until, row.attempts = "sending", now + lease, row.attempts + 1
        session.flush()
        return [_to_claimed(r) for r in rows]


def _claim_conditional(
    engine: Engine, now: datetime, lease: timedelta, limit: int, kinds: Collection[str]
) -> list[Claimed]:
    with transaction(engine) as session:
        candidates = session.scalars(
            select(N).where(_claimable(now, kinds)).order_by(N.id).limit(limit)
        ).all()
    won: list[Claimed] = []
    for cand in candidates:
        # A fresh transaction per row: it sees other workers' commits and only one can win.
        with transaction(engine) as session:
            result = session.execute(
                update(N)
                .where(N.id == cand.id, N.attempts == cand.attempts, _claimable(now, kinds))
                .values(status="sending", lease_until=now + lease, attempts=N.attempts + 1)
                .execution_options(synchronize_session=False)
            )
            if getattr(result, "rowcount", 0) == 1:
                won.append(replace(_to_claimed(cand), attempts=cand.attempts + 1))
    return won


def _finish(engine: Engine, item: Claimed, **values: Any) -> bool:
    """Update a claimed row unless another worker re-claimed it after our lease ran out."""
    with transaction(engine) as session:
        result = session.execute(
            update(N)
            .where(N.id == item.id, N.status == "sending", N.attempts == item.attempts)
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        return bool(getattr(result, "rowcount", 0) == 1)


def mark_sent(engine: Engine, item: Claimed, now: datetime) -> bool:
    """Record a delivery."""
    return _finish(engine, item, status="sent", sent_at=now, lease_until=None, last_error=None)


def mark_retry(engine: Engine, item: Claimed, at: datetime, error: str) -> bool:
    """Put the row back to be tried again at `at`."""
    return _finish(
        engine, item, status="pending", next_attempt_at=at, lease_until=None, last_error=error
    )


def mark_dead(engine: Engine, item: Claimed, error: str) -> bool:
    """Give up on the row; it stays visible with its last error."""
    return _finish(engine, item, status="dead", lease_until=None, last_error=error)


def backoff(attempts: int, initial: timedelta, maximum: timedelta, rng: random.Random) -> timedelta:
    """Exponential backoff with equal jitter: half the capped delay plus a random half."""
    capped = min(maximum.total_seconds(), initial.total_seconds() * 2 ** max(attempts - 1, 0))
    return timedelta(seconds=capped * (0.5 + 0.5 * rng.random()))


def status_counts(engine: Engine) -> dict[str, int]:
    """Rows per status (pending, sending, sent, dead); `dead` is what to alert on."""
    with transaction(engine) as session:
        rows = session.execute(select(N.status, func.count()).group_by(N.status)).all()
    counts = {s: 0 for s in ("pending", "sending", "sent", "dead")}
    counts.update({status: int(n) for status, n in rows})
    return counts
