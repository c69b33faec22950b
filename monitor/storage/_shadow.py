"""Paired shadow mode tables: sides waiting for their pair, and per-window pair summaries.

`shadow_pending` holds, per (model, request id), the side(s) seen so far and a label that came
before the pair completed; it is bounded by `shadow.pair_horizon` (unpaired rows) and
`collect.label_horizon` (complete pairs waiting for their label), both in event time.
`shadow_windows` holds the mergeable summary (`monitor.shadow.ShadowSummary`) of one
(model, primary version, shadow version, window, slice): counts and sums as columns, the
|score difference| and latency-ratio sketches as JSON. Unpaired sides are counted in the row of
their own version with the other version empty.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, Float, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base, JSONDoc, UTCDateTime, utcnow


class ShadowPending(Base):
    """One request's sides (`body`: {"primary": ..., "shadow": ..., "label": ...}) so far."""

    __tablename__ = "shadow_pending"
    __table_args__ = (Index("ix_shadow_pending_model_ts", "model", "ts"),)

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    request_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    # Event time of the earliest side: the horizons are measured from it.
    ts: Mapped[datetime] = mapped_column(UTCDateTime)
    # Both sides arrived and were counted; the row waits only for the label.
    paired: Mapped[bool] = mapped_column(Boolean, default=False)
    body: Mapped[dict[str, Any]] = mapped_column(JSONDoc)


class ShadowWindow(Base):
    """The summary of the shadow pairs of one (model, primary, shadow version, window, slice)."""

    __tablename__ = "shadow_windows"
    __table_args__ = (Index("ix_shadow_windows_updated_at", "updated_at"),)

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    primary_version: Mapped[str] = mapped_column(String(100), primary_key=True)
    shadow_version: Mapped[str] = mapped_column(String(100), primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    slice_key: Mapped[str] = mapped_column(String(500), primary_key=True)
    window_end: Mapped[datetime] = mapped_column(UTCDateTime)
    pairs: Mapped[int] = mapped_column(BigInteger, default=0)
    decided: Mapped[int] = mapped_column(BigInteger, default=0)
    flips: Mapped[int] = mapped_column(BigInteger, default=0)
    scored: Mapped[int] = mapped_column(BigInteger, default=0)
    abs_diff_sum: Mapped[float] = mapped_column(Float, default=0.0)
    abs_diff: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    timed: Mapped[int] = mapped_column(BigInteger, default=0)
    ratio_sum: Mapped[float] = mapped_column(Float, default=0.0)
    latency_ratio: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    unpaired_primary: Mapped[int] = mapped_column(BigInteger, default=0)
    unpaired_shadow: Mapped[int] = mapped_column(BigInteger, default=0)
    labelled: Mapped[int] = mapped_column(BigInteger, default=0)
    both_correct: Mapped[int] = mapped_column(BigInteger, default=0)
    primary_only: Mapped[int] = mapped_column(BigInteger, default=0)
    shadow_only: Mapped[int] = mapped_column(BigInteger, default=0)
    both_wrong: Mapped[int] = mapped_column(BigInteger, default=0)
    error_diff_sum: Mapped[float] = mapped_column(Float, default=0.0)
    error_diff_squares: Mapped[float] = mapped_column(Float, default=0.0)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
