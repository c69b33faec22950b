"""Waiting halves of paired inputs (request/response CloudEvents), inside the batch transaction.

A half whose counterpart has not arrived is stored in `pending_halves` with the batch; when the
counterpart comes (in a later batch, possibly after a restart) the pair becomes events and the
stored half is deleted in that batch's transaction. Halves older than the label horizon (event
time, against the newest half of the batch) are deleted unpaired.
"""

from __future__ import annotations

from sqlalchemy import delete, insert
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors._base import Half
from collectors._plan import Plan
from collectors._validate import utc
from monitor.storage import PendingHalf


def stored_half(engine: Engine, source: str, pair_id: str, kind: str) -> Half | None:
    """The stored half `kind` of `pair_id`, if one waits."""
    with Session(engine) as session:
        row = session.get(PendingHalf, (source, pair_id, kind))
        return None if row is None else Half(row.pair_id, row.kind, row.ts.timestamp(), row.body)


def store_halves(session: Session, source: str, plan: Plan, horizon_s: float) -> None:
    """Delete the halves this batch paired, store the ones still waiting, expire old ones."""
    gone = list(plan.used_halves) + list(plan.open_halves)
    for pair_id, kind in gone:
        session.execute(
            delete(PendingHalf).where(
                PendingHalf.source == source,
                PendingHalf.pair_id == pair_id,
                PendingHalf.kind == kind,
            )
        )
    rows = [
        {"source": source, "pair_id": h.pair_id, "kind": h.kind, "ts": utc(h.ts), "body": h.body}
        for h in plan.open_halves.values()
    ]
    if rows:
        session.execute(insert(PendingHalf), rows)
        newest = max(h.ts for h in plan.open_halves.values())
        session.execute(
            delete(PendingHalf).where(
                PendingHalf.source == source, PendingHalf.ts < utc(max(newest - horizon_s, 0.0))
            )
        )
