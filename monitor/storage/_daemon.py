"""Daemon bookkeeping: one row per scheduled job run, the cross-replica lease."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base, UTCDateTime, utcnow


class JobRun(Base):
    """A (job, window) claimed by one replica; the unique key makes each run happen once."""

    __tablename__ = "job_runs"
    __table_args__ = (UniqueConstraint("job", "window_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job: Mapped[str] = mapped_column(String(100))
    window_key: Mapped[str] = mapped_column(String(100))
    holder: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20), default="running")
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    error: Mapped[str | None] = mapped_column(Text)


class JobFailure(Base):
    """One item of a scheduled job (a window, a model, a signal producer) that keeps failing.

    The row exists while the item fails: it says since when, how often and with what error,
    and when the item is next retried (exponential backoff). Success deletes it.
    """

    __tablename__ = "job_failures"
    __table_args__ = (UniqueConstraint("job", "item"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job: Mapped[str] = mapped_column(String(100))
    # What failed, e.g. "drift fraud/3 2026-12-01T10:00:00+00:00"; bounded, never a query.
    item: Mapped[str] = mapped_column(String(500))
    model: Mapped[str | None] = mapped_column(String(200))
    version: Mapped[str | None] = mapped_column(String(100))
    # The failing window's start when the item is one window (`window_item`), else NULL: read
    # by the jobs that retry or wait for failing windows, so item names are never parsed.
    window_start: Mapped[datetime | None] = mapped_column(UTCDateTime)
    error: Mapped[str] = mapped_column(Text)
    failures: Mapped[int] = mapped_column(Integer, default=1)
    first_failed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_failed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    retry_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
