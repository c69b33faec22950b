"""Alerting tables: alert state per fingerprint, notification groups, the outbox, silences."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base, JSONDoc, UTCDateTime, utcnow

ALERT_STATES = ("pending", "firing", "resolved")
NOTIFICATION_STATUSES = ("pending", "sending", "sent", "dead")


class AlertState(Base):
    """The current state of one alert (a rule applied to one label set)."""

    __tablename__ = "alert_states"
    __table_args__ = (
        CheckConstraint("state IN ('pending', 'firing', 'resolved')", name="state_known"),
    )

    # Stable hash of the sorted labels.
    fingerprint: Mapped[str] = mapped_column(String(32), primary_key=True)
    rule: Mapped[str] = mapped_column(String(200), index=True)
    labels: Mapped[dict[str, str]] = mapped_column(JSONDoc)
    annotations: Mapped[dict[str, str]] = mapped_column(JSONDoc)
    value: Mapped[float | None] = mapped_column(Float)
    state: Mapped[str] = mapped_column(String(16))
    active_since: Mapped[datetime] = mapped_column(UTCDateTime)
    last_active_at: Mapped[datetime] = mapped_column(UTCDateTime)
    fired_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Why notifications are held back: "silence:<id>" or "inhibited"; None when not muted.
    muted_by: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AlertGroup(Base):
    """A notification group: its timers and the alerts last notified as firing."""

    __tablename__ = "alert_groups"

    group_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    receiver: Mapped[str] = mapped_column(String(200))
    rule: Mapped[str] = mapped_column(String(200))
    group_labels: Mapped[dict[str, str]] = mapped_column(JSONDoc)
    # When the group first had something to say that has not been sent yet.
    waiting_since: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_flush_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    notified: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    seq: Mapped[int] = mapped_column(Integer, default=0)


class AlertNotification(Base):
    """The outbox: one row per message to deliver, written with the change that caused it."""

    __tablename__ = "alert_notifications"
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'sending', 'sent', 'dead')", name="status_known"),
        Index("ix_alert_notifications_status_due", "status", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # "notify" (to a receiver) or "rollback" (to the rollback handler).
    kind: Mapped[str] = mapped_column(String(16))
    receiver: Mapped[str] = mapped_column(String(200))
    group_key: Mapped[str] = mapped_column(String(64), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    idempotency_key: Mapped[str] = mapped_column(String(64), unique=True)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)


class AlertSilence(Base):
    """Mutes notifications of alerts matching all its matchers between starts_at and ends_at."""

    __tablename__ = "alert_silences"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    matchers: Mapped[list[str]] = mapped_column(JSONDoc)
    author: Mapped[str] = mapped_column(String(200))
    comment: Mapped[str] = mapped_column(Text)
    starts_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ends_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
