"""Fairness results: one row per (model, version, window, attribute, group, metric)."""

from __future__ import annotations

from sqlalchemy import CheckConstraint, Float, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage._results import _WindowResult
from monitor.storage.base import Base


class FairnessResultRow(_WindowResult, Base):
    """A fairness metric of one protected attribute in one window: the comparison of its
    groups (slice_key "") or one group's (slice_key `{"gender":"f"}`), with its interval."""

    __tablename__ = "fairness_results"
    __table_args__ = (
        UniqueConstraint(
            "model", "version", "window_start", "attribute", "slice_key", "metric",
            name="uq_fairness_results_key",
        ),
        CheckConstraint(
            "status IN ('ok', 'violation', 'insufficient_data')", name="status_known"
        ),
        # Retention deletes by age.
        Index("ix_fairness_results_computed_at", "computed_at"),
    )  # fmt: skip

    attribute: Mapped[str] = mapped_column(String(200))
    metric: Mapped[str] = mapped_column(String(50))
    value: Mapped[float | None] = mapped_column(Float)
    ci_low: Mapped[float | None] = mapped_column(Float)
    ci_high: Mapped[float | None] = mapped_column(Float)
    threshold: Mapped[float | None] = mapped_column(Float)
    n: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))
    # Why the status is `insufficient_data` (a missing attribute, too few rows, one class).
    reason: Mapped[str | None] = mapped_column(String(500))
