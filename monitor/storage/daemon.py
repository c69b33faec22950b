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
