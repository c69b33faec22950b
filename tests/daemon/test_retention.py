"""Retention deletes what aged out, and never a Kafka or file position."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from monitor.daemon.retention import purge
from monitor.storage import (
    DeadLetter,
    DriftResultRow,
    EstimatedResultRow,
    SourcePosition,
    WindowProfile,
    WindowServing,
    session_factory,
    transaction,
)

NOW = datetime(2026, 11, 30, tzinfo=UTC)
OLD, NEW = NOW - timedelta(days=120), NOW - timedelta(days=1)


def _window(written: datetime) -> list[object]:
    # Both windows are months old by event time; age is when a row was written.
    start = datetime(2026, 1, 1, tzinfo=UTC) + (written - OLD)
    end = start + timedelta(hours=1)
    return [
        WindowProfile(
            model="m",
            version="1",
            window_start=start,
            window_end=end,
            slice_key="",
            column="x",
            kind="numeric",
            n=1,
            payload=b"p",
            updated_at=written,
        ),
        DriftResultRow(
            model="m",
            version="1",
            window_start=start,
            window_end=end,
            slice_key="",
            column="x",
            method="psi",
            value=0.1,
            threshold=0.2,
            p_value=None,
            n_reference=10,
            n_current=10,
            status="ok",
            computed_at=written,
        ),
        EstimatedResultRow(
            model="m",
            version="1",
            window_start=start,
            window_end=end,
            slice_key="",
            metric="accuracy",
            value=0.9,
            ci_low=0.85,
            ci_high=0.95,
            realized=None,
            threshold_low=0.8,
            threshold_high=None,
            n=100,
            status="ok",
            computed_at=written,
        ),  # fmt: skip
        WindowServing(
            model="m",
            version="1",
            window_start=start,
            window_end=end,
            slice_key="",
            requests=1,
            errors=0,
            latency={},
            model_latency={},
            attributions={},
            updated_at=written,
        ),
        DeadLetter(
            source="s",
            key="p0",
            offset=int(start.timestamp()),
            reason="bad",
            detail="d",
            payload=b"x",
            payload_size=1,
            truncated=False,
            created_at=written,
        ),
    ]


def _positions() -> list[SourcePosition]:
    keys = [("stream", "topic:0"), ("logs", "fp:abc"), ("http", "idem:k1"), ("http", "replica:r")]
    return [
        SourcePosition(source=s, key=k, offset=5, end_offset=5, updated_at=OLD) for s, k in keys
    ]


def _count(engine: Engine, table: type) -> int:
    with session_factory(engine)() as s:
        return int(s.scalar(select(func.count()).select_from(table)) or 0)


def test_purge_removes_aged_rows_and_keeps_stream_positions(engine: Engine) -> None:
    with transaction(engine) as s:
        s.add_all([*_window(OLD), *_window(NEW), *_positions()])
    deleted = purge(engine, NOW - timedelta(days=90))
    assert deleted["window_profiles"] == deleted["drift_results"] == deleted["dead_letters"] == 1
    assert deleted["window_serving"] == deleted["estimated_results"] == 1
    assert deleted["source_positions"] == 2
    for table in (WindowProfile, DriftResultRow, DeadLetter, WindowServing, EstimatedResultRow):
        assert _count(engine, table) == 1
    with session_factory(engine)() as s:
        kept = sorted(s.scalars(select(SourcePosition.key)))
    assert kept == ["fp:abc", "topic:0"]
    assert purge(engine, NOW - timedelta(days=90))["source_positions"] == 0
