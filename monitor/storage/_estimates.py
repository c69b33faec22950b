"""Estimated performance and multivariate drift per window and slice (`monitor.estimation`).

One row per (model, version, window, slice, metric): CBPE metrics (`roc_auc`, `accuracy`, ...)
with their band, the reference-chunk lower threshold and the realized value once labels are
joined; and `reconstruction_error`, the window's mean PCA reconstruction error with the
reference-chunk bounds (`threshold_low`, `threshold_high`).
"""

from __future__ import annotations

from sqlalchemy import CheckConstraint, Float, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage._results import _WindowResult
from monitor.storage.base import Base

ESTIMATE_STATUSES = ("ok", "degraded", "drift", "insufficient_data")


class EstimatedResultRow(_WindowResult, Base):
    """One estimated metric (or the mean reconstruction error) of one slice in one window."""

    __tablename__ = "estimated_results"
    __table_args__ = (
        UniqueConstraint(
            "model", "version", "window_start", "slice_key", "metric",
            name="uq_estimated_results_key",
        ),
        CheckConstraint(
            "status IN ('ok', 'degraded', 'drift', 'insufficient_data')", name="status_known"
        ),
        # Retention deletes by age.
        Index("ix_estimated_results_computed_at", "computed_at"),
    )  # fmt: skip

    metric: Mapped[str] = mapped_column(String(50))
    value: Mapped[float | None] = mapped_column(Float)
    ci_low: Mapped[float | None] = mapped_column(Float)
    ci_high: Mapped[float | None] = mapped_column(Float)
    realized: Mapped[float | None] = mapped_column(Float)
    threshold_low: Mapped[float | None] = mapped_column(Float)
    threshold_high: Mapped[float | None] = mapped_column(Float)
    n: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))
