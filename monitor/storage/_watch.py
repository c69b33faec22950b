"""History of the judgements the daemon makes on schedule: canary pairs, skew and segment checks."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base, JSONDoc, UTCDateTime, utcnow


class CanaryRun(Base):
    """One scheduled evaluation of a canary pair: its verdict and the whole per-slice report."""

    __tablename__ = "canary_runs"
    __table_args__ = (
        Index("ix_canary_runs_pair", "model", "canary", "stable", "evaluated_at"),
        Index("ix_canary_runs_evaluated_at", "evaluated_at"),  # retention
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str] = mapped_column(String(200))
    canary: Mapped[str] = mapped_column(String(100))
    stable: Mapped[str] = mapped_column(String(100))
    since: Mapped[datetime] = mapped_column(UTCDateTime)
    until: Mapped[datetime] = mapped_column(UTCDateTime)
    verdict: Mapped[str] = mapped_column(String(20))
    # Criteria that failed, over the whole traffic and every slice.
    failed: Mapped[int] = mapped_column(Integer)
    correction: Mapped[str] = mapped_column(String(30))
    # The document `GET /v1/canary/{model}/{canary}` serves for a declared pair.
    report: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    evaluated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SkewRun(Base):
    """One scheduled training-serving skew check: join counts, worst rate, the whole report."""

    __tablename__ = "skew_runs"
    __table_args__ = (
        Index("ix_skew_runs_check", "check_name", "evaluated_at"),
        Index("ix_skew_runs_evaluated_at", "evaluated_at"),  # retention
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    check_name: Mapped[str] = mapped_column(String(100))
    model: Mapped[str] = mapped_column(String(200))
    # `skew` when a feature's mismatch rate is above the check's threshold, else `ok`.
    status: Mapped[str] = mapped_column(String(20))
    n_joined: Mapped[int] = mapped_column(Integer)
    worst_rate: Mapped[float | None] = mapped_column(Float)
    report: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    evaluated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SegmentRun(Base):
    """One scheduled weak-segment search: its status, how many segments (new ones among them)
    and the whole report, each segment marked `new` or `persisting`."""

    __tablename__ = "segment_runs"
    __table_args__ = (
        Index("ix_segment_runs_check", "check_name", "evaluated_at"),
        Index("ix_segment_runs_model", "model", "evaluated_at"),
        Index("ix_segment_runs_evaluated_at", "evaluated_at"),  # retention
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    check_name: Mapped[str] = mapped_column(String(100))
    model: Mapped[str] = mapped_column(String(200))
    mode: Mapped[str] = mapped_column(String(20))
    # `segments`, `ok` (searched, none reported) or `insufficient_data` (the report says why).
    status: Mapped[str] = mapped_column(String(20))
    n_rows: Mapped[int] = mapped_column(Integer)
    n_segments: Mapped[int] = mapped_column(Integer)
    n_new: Mapped[int] = mapped_column(Integer)
    report: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    evaluated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
