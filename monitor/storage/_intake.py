"""The HTTP intake log: request bodies appended durably, drained into aggregates.

`POST /v1/events` writes one row per request (one INSERT) and answers; a drain aggregates pending
rows through the collectors' `Ingestor` and marks them consumed in the same transaction as the
aggregates. A row with an idempotency key keeps the key and digest after consumption (its body is
dropped), so a retry of an applied request is still answered as a duplicate.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import BigInteger, Index, Integer, LargeBinary, String, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage._engine import session_factory
from monitor.storage.base import Base, UTCDateTime, utcnow


class IntakeEntry(Base):
    """One HTTP request's body, pending until the drain consumes it (then `body` is NULL)."""

    __tablename__ = "intake_log"
    __table_args__ = (
        Index(
            "ix_intake_log_pending",
            "id",
            postgresql_where=text("consumed_at IS NULL"),
            sqlite_where=text("consumed_at IS NULL"),
        ),
        # Retention deletes consumed rows past collect.http_dedup_window by this.
        Index("ix_intake_log_consumed_at", "consumed_at"),
        # Ids never reused (SQLite would reuse the highest deleted one, and the drain deletes
        # consumed keyless rows): a request's id names its dead letters and nobody else's.
        {"sqlite_autoincrement": True},
    )

    # INTEGER AUTOINCREMENT on SQLite, BIGSERIAL-like identity on PostgreSQL: never reused.
    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    # "<namespace>:<Idempotency-Key>"; NULL for a request without one (it counts every time).
    key: Mapped[str | None] = mapped_column(String(260), unique=True)
    # How the body splits into events: "events", "cloudevents", "cloudevents-batch".
    kind: Mapped[str] = mapped_column(String(40))
    sha256: Mapped[str] = mapped_column(String(64))
    events: Mapped[int] = mapped_column(Integer)
    body: Mapped[bytes | None] = mapped_column(LargeBinary)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    consumed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


def oldest_pending(engine: Engine) -> datetime | None:
    """When the oldest request still pending in the intake log was received (None: none)."""
    entry = IntakeEntry.__table__.c
    stmt = select(entry.received_at).where(entry.consumed_at.is_(None)).order_by(entry.id).limit(1)
    with session_factory(engine)() as s:
        found: datetime | None = s.scalar(stmt)
    return found


def intake_settled(engine: Engine, settle_s: float, max_lag_s: float) -> datetime | None:
    """The latest window end whose events the intake has all aggregated: a window's events
    arrive up to `settle_s` after its end (`scheduler.tick_offset_s`: clients queue and batch),
    so a window is complete once no request received before its end + `settle_s` is pending.
    A drain behind by more than `max_lag_s` (`collect.http_max_lag`, `/readyz` unready) holds
    no window longer: evaluated on what is aggregated, it is re-marked by the rest. None:
    nothing is pending (every ended window is complete as far as the intake knows)."""
    oldest = oldest_pending(engine)
    if oldest is None:
        return None
    return max(oldest - timedelta(seconds=settle_s), utcnow() - timedelta(seconds=max_lag_s))
