"""Gate history and rollback events (written by `guards`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base, JSONDoc, UTCDateTime, utcnow


class GateRun(Base):
    """One gate run: what was compared (content hashes), under which preset, and its verdict."""

    __tablename__ = "gate_runs"
    __table_args__ = (Index("ix_gate_runs_model_version", "model", "version", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str] = mapped_column(String(200))
    version: Mapped[str] = mapped_column(String(100))
    reference_sha256: Mapped[str] = mapped_column(String(64))
    candidate_sha256: Mapped[str] = mapped_column(String(64))
    golden_sha256: Mapped[str] = mapped_column(String(64))
    preset: Mapped[str] = mapped_column(String(50))
    verdict: Mapped[str] = mapped_column(String(20))
    criteria: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc)
    # The whole verdict document, as served by `GET /v1/gate/{model}/{version}`.
    verdict_json: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    providers: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    timing: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RollbackEvent(Base):
    """A move of a model's `active` alias back to an earlier version, and why."""

    __tablename__ = "rollback_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str] = mapped_column(String(200), index=True)
    from_version: Mapped[str] = mapped_column(String(100))
    to_version: Mapped[str] = mapped_column(String(100))
    reason: Mapped[str] = mapped_column(Text)
    gate_run_id: Mapped[int | None] = mapped_column(
        ForeignKey("gate_runs.id", ondelete="SET NULL"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
