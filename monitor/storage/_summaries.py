"""Outcome summaries per (model, version, window, slice): see monitor/outcomes/summary.py."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base, UTCDateTime, utcnow


class OutcomeSummaryRow(Base):
    """The mergeable outcome statistics of one slice of one window, merged in place per batch."""

    __tablename__ = "outcome_summaries"

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    version: Mapped[str] = mapped_column(String(100), primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    # "" is all joined pairs; otherwise canonical JSON of {slice column: value}.
    slice_key: Mapped[str] = mapped_column(String(500), primary_key=True)
    window_end: Mapped[datetime] = mapped_column(UTCDateTime)
    n: Mapped[int] = mapped_column(BigInteger)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
