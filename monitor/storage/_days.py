"""Merged summaries of whole days, so a week is a merge of 7 stored days, not 168 windows.

Written by the evaluate job when it evaluates a day (`monitor.evaluation.periods`): the day's window
profiles, slice counts and outcome summaries merged, replaced whole in the transaction that
stores the day's results.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base, UTCDateTime, utcnow


class _DayKey:
    """Columns every stored day row has: whose day, which slice, when written."""

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    version: Mapped[str] = mapped_column(String(100), primary_key=True)
    day_start: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    slice_key: Mapped[str] = mapped_column(String(500), primary_key=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DayProfile(_DayKey, Base):
    """One column's profile of one slice over one day: the day's window profiles merged."""

    __tablename__ = "day_profiles"

    column: Mapped[str] = mapped_column(String(200), primary_key=True)
    payload: Mapped[bytes] = mapped_column(LargeBinary)


class DayCount(_DayKey, Base):
    """Events of one slice over one day (the day's window counts summed)."""

    __tablename__ = "day_counts"

    events: Mapped[int] = mapped_column(BigInteger)


class DayOutcomeSummary(_DayKey, Base):
    """The outcome summary of one slice over one day (the day's window summaries merged)."""

    __tablename__ = "day_outcome_summaries"

    n: Mapped[int] = mapped_column(BigInteger)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
