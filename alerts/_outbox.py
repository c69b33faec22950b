"""The durable outbox: rows written with the state change that caused them, claimed by workers.

A row is `pending` until a worker claims it (`sending`, with a lease), then `sent`, back to
`pending` with a later `next_attempt_at` after a failure, or `dead` once its attempts or age run
out. A worker that dies mid-send leaves a `sending` row whose lease expires; the row is claimed
again and re-sent with the same idempotency key, so delivery is at-least-once and receivers
drop duplicates by key.

Claiming never hands out a row while an older row of the same group is pending or sending, so
a batch holds at most one row per group and each group's notifications arrive in order. A batch
is claimed by one `UPDATE ... WHERE id IN (SELECT ...) RETURNING` statement: on PostgreSQL the
inner SELECT takes `FOR UPDATE SKIP LOCKED`, so replicas never claim the same row; on SQLite the
statement holds the database's single write lock, so only one worker's claim runs at a time.
Results are recorded for the whole batch in one transaction (:func:`acknowledge`), each row only
if this worker still holds it (same `attempts`, still `sending`).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import and_, exists, func, or_, select, tuple_, update
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


def _claimable(
    row: Any,
    now: datetime,
    kinds: Collection[str],
    receivers: Collection[str] | None,
    other_than: Collection[str],
) -> ColumnElement[bool]:
    earlier = aliased(AlertNotification)
    blocked = exists().where(
        earlier.group_key == row.group_key,
        earlier.id < row.id,
        earlier.status.in_(("pending", "sending")),
    )
    due = or_(
        and_(row.status == "pending", row.next_attempt_at <= now),
        and_(row.status == "sending", row.lease_until <= now),
    )
    conditions = [due, row.kind.in_(list(kinds)), ~blocked]
    if receivers is not None:
        conditions.append(row.receiver.in_(list(receivers)))
    if other_than:
        conditions.append(row.receiver.not_in(list(other_than)))
    return and_(*conditions)


_RETURNED = (
    N.id,
    N.kind,
    N.receiver,
    N.group_key,
    N.idempotency_key,
    N.payload,
    N.attempts,
    N.created_at,
)


def claim(
    engine: Engine,
    now: datetime,
    *,
    lease: timedelta,
    limit: int,
    kinds: Collection[str] = ("notify",),
    receivers: Collection[str] | None = None,
    other_than: Collection[str] = (),
) -> list[Claimed]:
    """Take up to `limit` due rows (at most one per group), oldest first, in one statement;
    only rows for `receivers` when given, and none for a receiver in `other_than`."""
    candidate = aliased(AlertNotification, name="candidate")
    chosen = (
        select(candidate.id)
        .where(_claimable(candidate, now, kinds, receivers, other_than))
        .order_by(candidate.id)
        .limit(limit)
    )
    if engine.dialect.name == "postgresql":
        # Rows another replica is claiming right now are skipped, not waited for.
        chosen = chosen.with_for_update(skip_locked=True, of=candidate)
    statement = (
        update(N)
        .where(N.id.in_(chosen))
        .values(status="sending", lease_until=now + lease, attempts=N.attempts + 1)
        .returning(*_RETURNED)
        .execution_options(synchronize_session=False)
    )
    with transaction(engine) as session:
        rows = session.execute(statement).all()
    return sorted((Claimed(**row._asdict()) for row in rows), key=lambda c: c.id)


Outcome = Literal["sent", "retry", "dead", "released"]


@dataclass(frozen=True)
class Ack:
    """What became of one claimed row.

    sent: delivered at `at`. retry: failed with `error`, due again at `at`. dead: given up
    with `error`. released: never tried (the batch ran out of lease time); due again at `at`
    with its attempt given back (and its last error kept).
    """

    item: Claimed
    outcome: Outcome
    at: datetime
    error: str | None = None


def _ack_values(ack: Ack) -> dict[str, Any]:
    if ack.outcome == "sent":
        return {"status": "sent", "sent_at": ack.at, "last_error": None}
    if ack.outcome == "dead":
        return {"status": "dead", "last_error": ack.error}
    if ack.outcome == "released":
        return {"status": "pending", "next_attempt_at": ack.at}
    return {"status": "pending", "next_attempt_at": ack.at, "last_error": ack.error}


def _alike(acks: Collection[Ack]) -> list[tuple[Outcome, dict[str, Any], list[Ack]]]:
    """Acks that set the same values (a batch's successes, usually), so one UPDATE each."""
    groups: dict[tuple[Any, ...], tuple[Outcome, dict[str, Any], list[Ack]]] = {}
    for ack in acks:
        values = _ack_values(ack)
        key = (ack.outcome, *sorted(values.items()))
        groups.setdefault(key, (ack.outcome, values, []))[2].append(ack)
    return list(groups.values())


def acknowledge(engine: Engine, acks: Collection[Ack]) -> list[Ack]:
    """Record a batch's results in one transaction; returns the acks that were not recorded
    because another worker re-claimed the row after this worker's lease ran out."""
    if not acks:
        return []
    table = N.metadata.tables[N.__tablename__]
    recorded: set[int] = set()
    with transaction(engine) as session:
        for outcome, values, alike in _alike(acks):
            held = tuple_(table.c.id, table.c.attempts).in_(
                [(a.item.id, a.item.attempts) for a in alike]
            )
            if outcome == "released":  # never tried: the claim's attempt is given back
                values = {**values, "attempts": table.c.attempts - 1}
            statement = (
                update(table)
                .where(held, table.c.status == "sending")
                .values(lease_until=None, **values)
                .returning(table.c.id)
            )
            recorded.update(session.scalars(statement))
    return [a for a in acks if a.item.id not in recorded]


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
