"""Result tables of the statistical core: drift and per-slice outcome metrics, long and tidy.

One row per (model, version, window, slice, column, method) — what SQL views and Grafana
panels group and filter by. Model and version are stored by name so dashboards need no joins.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Float, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base, UTCDateTime, utcnow


class _WindowResult:
    """Columns every result row has: who, which window, which slice, when computed."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str] = mapped_column(String(200))
    version: Mapped[str] = mapped_column(String(100))
    window_start: Mapped[datetime] = mapped_column(UTCDateTime)
    window_end: Mapped[datetime] = mapped_column(UTCDateTime)
    # "" is the whole window; otherwise canonical JSON such as {"region":"eu"}.
    slice_key: Mapped[str] = mapped_column(String(500), default="")
    computed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class _DriftFields:
    """What a drift result row says (of a window or a period)."""

    column: Mapped[str] = mapped_column(String(200))
    method: Mapped[str] = mapped_column(String(50))
    value: Mapped[float | None] = mapped_column(Float)
    threshold: Mapped[float] = mapped_column(Float)
    # Which threshold strategy set `threshold`: "constant", "reference" or "floor"; NULL on
    # rows written before strategies were recorded.
    threshold_by: Mapped[str | None] = mapped_column(String(20))
    p_value: Mapped[float | None] = mapped_column(Float)
    n_reference: Mapped[int] = mapped_column(Integer)
    n_current: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))


class _OutcomeFields:
    """What an outcome result row says (of a window or a period)."""

    metric: Mapped[str] = mapped_column(String(50))
    value: Mapped[float | None] = mapped_column(Float)
    ci_low: Mapped[float | None] = mapped_column(Float)
    ci_high: Mapped[float | None] = mapped_column(Float)
    baseline_value: Mapped[float | None] = mapped_column(Float)
    tolerance: Mapped[float | None] = mapped_column(Float)
    n: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))
    # The one-sided level `degraded` was decided at (monitor.outcomes: 0.025 per result, Holm's
    # stricter level across the evaluation); null without a verdict and on rows before 0037.
    level: Mapped[float | None] = mapped_column(Float)


class DriftResultRow(_DriftFields, _WindowResult, Base):
    """A drift result of one column (overall or one slice) in one window."""

    __tablename__ = "drift_results"
    __table_args__ = (
        UniqueConstraint(
            "model", "version", "window_start", "slice_key", "column", "method",
            name="uq_drift_results_key",
        ),
        CheckConstraint(
            "status IN ('ok', 'drift', 'insufficient_data', 'missing', 'new')",
            name="status_known",
        ),
    )  # fmt: skip


class OutcomeResultRow(_OutcomeFields, _WindowResult, Base):
    """An outcome metric (accuracy, AUC, MAE...) of one slice in one window, with its interval."""

    __tablename__ = "outcome_results"
    __table_args__ = (
        UniqueConstraint(
            "model", "version", "window_start", "slice_key", "metric",
            name="uq_outcome_results_key",
        ),
        CheckConstraint(
            "status IN ('ok', 'degraded', 'insufficient_data')", name="status_known"
        ),
    )  # fmt: skip


class SloResultRow(_WindowResult, Base):
    """One serving objective (`monitor.slo.evaluate.OBJECTIVES`, or a measure objective of
    `slo.measures`) of one slice in one window."""

    __tablename__ = "slo_results"
    __table_args__ = (
        UniqueConstraint(
            "model", "version", "window_start", "slice_key", "objective",
            name="uq_slo_results_key",
        ),
        CheckConstraint("status IN ('ok', 'breach', 'insufficient_data')", name="status_known"),
        # Retention deletes by age.
        Index("ix_slo_results_computed_at", "computed_at"),
    )  # fmt: skip

    objective: Mapped[str] = mapped_column(String(50))
    value: Mapped[float | None] = mapped_column(Float)
    threshold: Mapped[float | None] = mapped_column(Float)
    n: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))


class _PeriodResult:
    """Columns every period result row has: who, which day or week, which slice, when."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str] = mapped_column(String(200))
    version: Mapped[str] = mapped_column(String(100))
    # "day" or "week" (`monitor.evaluation.periods.PERIODS`): 1 or 7 days, aligned to the epoch as
    # windows.
    period: Mapped[str] = mapped_column(String(10))
    period_start: Mapped[datetime] = mapped_column(UTCDateTime)
    period_end: Mapped[datetime] = mapped_column(UTCDateTime)
    slice_key: Mapped[str] = mapped_column(String(500), default="")
    computed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DriftPeriodResultRow(_DriftFields, _PeriodResult, Base):
    """Drift of a day's or a week's merged window profiles (one column, slice and method)."""

    __tablename__ = "drift_period_results"
    __table_args__ = (
        UniqueConstraint(
            "model", "version", "period", "period_start", "slice_key", "column", "method",
            name="uq_drift_period_results_key",
        ),
        CheckConstraint(
            "status IN ('ok', 'drift', 'insufficient_data', 'missing', 'new')",
            name="status_known",
        ),
        CheckConstraint("period IN ('day', 'week')", name="period_known"),
    )  # fmt: skip


class OutcomePeriodResultRow(_OutcomeFields, _PeriodResult, Base):
    """An outcome metric of a day's or a week's merged outcome summaries (one slice)."""

    __tablename__ = "outcome_period_results"
    __table_args__ = (
        UniqueConstraint(
            "model", "version", "period", "period_start", "slice_key", "metric",
            name="uq_outcome_period_results_key",
        ),
        CheckConstraint(
            "status IN ('ok', 'degraded', 'insufficient_data')", name="status_known"
        ),
        CheckConstraint("period IN ('day', 'week')", name="period_known"),
    )  # fmt: skip
