"""The HTTP intake log: request bodies appended durably, drained into aggregates.

`POST /v1/events` writes one row per request (one INSERT) and answers; a drain aggregates pending
rows through the collectors' `Ingestor` and marks them consumed in the same transaction as the
aggregates. A row with an idempotency key keeps the key and digest after consumption (its body is
dropped), so a retry of an applied request is still answered as a duplicate.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, LargeBinary, String, text
from sqlalchemy.orm import Mapped, mapped_column

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
