"""Raw joined predictions have their own, shorter retention; summaries keep the metrics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from monitor.app.daemon._retention import retention_job
from monitor.config import parse_config
from monitor.storage import (
    LabeledPrediction,
    OutcomeSummaryRow,
    WindowChange,
    session_factory,
    transaction,
)

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def _rows(written: datetime, tag: str) -> list[object]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    end = start + timedelta(hours=1)
    return [
        LabeledPrediction(
            model="m", request_id=tag, version="1", ts=start, prediction=0.5, label=1,
            slice_values={}, joined_at=written,
        ),
        OutcomeSummaryRow(
            model="m", version=tag, window_start=start, slice_key="", window_end=end, n=1,
            payload=b"{}", updated_at=written,
        ),
        WindowChange(
            model="m", kind="drift", version=tag, window_start=start, window_end=end, seq=1,
            pending=False, changed_at=written,
        ),
    ]  # fmt: skip


def _count(engine: Engine, table: type) -> int:
    with session_factory(engine)() as s:
        return int(s.scalar(select(func.count()).select_from(table)) or 0)


def test_joined_rows_expire_before_summaries_and_markers(engine: Engine) -> None:
    with transaction(engine) as s:
        s.add_all(_rows(NOW - timedelta(days=100), "old"))
        s.add_all(_rows(NOW - timedelta(days=30), "month"))
        s.add_all(_rows(NOW - timedelta(days=1), "new"))
    retention_job(engine, days=90, labeled_days=14)(NOW)
    assert _count(engine, LabeledPrediction) == 1  # only the day-old joined row
    assert (_count(engine, OutcomeSummaryRow), _count(engine, WindowChange)) == (2, 2)
    # A labeled retention longer than the main one never keeps rows past the main one.
    retention_job(engine, days=20, labeled_days=60)(NOW)
    assert [_count(engine, t) for t in (LabeledPrediction, OutcomeSummaryRow)] == [1, 1]


def test_labeled_retention_config() -> None:
    cfg = parse_config({"database_url": "sqlite://"}, env={})
    assert cfg.scheduler.labeled_retention_days == 14
    off = parse_config({"scheduler": {"labeled_retention_days": None}}, env={})
    assert off.scheduler.labeled_retention_days is None
    with pytest.raises((ValidationError, ValueError), match="labeled_retention_days"):
        parse_config({"scheduler": {"labeled_retention_days": 0}}, env={})
