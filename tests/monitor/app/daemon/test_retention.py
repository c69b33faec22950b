"""Retention deletes what aged out, and never a Kafka or file position; consumed HTTP intake
requests are kept for `collect.http_dedup_window`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from migrations import upgrade
from monitor.app.daemon._retention import purge
from monitor.storage import (
    DeadLetter,
    DriftResultRow,
    EstimatedResultRow,
    IntakeEntry,
    SourcePosition,
    WindowProfile,
    WindowServing,
    make_engine,
    session_factory,
    transaction,
)
from tests.monitor.app.daemon.conftest import ServerProcess, auth, write_config
from tests.monitor.app.daemon.test_api_ingest import event
from tests.waiting import wait_until

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


def _intake(key: str | None, received: datetime, consumed: datetime | None) -> IntakeEntry:
    return IntakeEntry(
        key=key, kind="events", sha256="0" * 64, events=1,
        body=None if consumed else b"[]", received_at=received, consumed_at=consumed,
    )  # fmt: skip


def test_consumed_intake_rows_are_kept_for_the_dedup_window_only(engine: Engine) -> None:
    day = timedelta(days=1)
    rows = [
        _intake("idem:old", NOW - 3 * day, NOW - 2 * day),  # consumed before the window: gone
        _intake("idem:recent", NOW - 3 * day, NOW - day / 2),  # consumed within it: kept
        _intake("idem:pending", NOW - 200 * day, None),  # never consumed: never deleted
    ]
    with transaction(engine) as s:
        s.add_all(rows)
    deleted = purge(engine, NOW - 90 * day, intake_cutoff=NOW - day)
    assert deleted["intake_log"] == 1
    with session_factory(engine)() as s:
        kept = sorted(s.scalars(select(IntakeEntry.key)))
    assert kept == ["idem:pending", "idem:recent"]
    assert purge(engine, NOW - 90 * day)["intake_log"] == 0  # default: the retention period


def test_a_retry_after_the_dedup_window_counts_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mw.db'}"
    migrated = make_engine(url)
    upgrade(migrated)
    config = write_config(tmp_path, url, "collect:\n  http_dedup_window: 1s\n")
    fast = config.read_text().replace("scheduler:\n", "scheduler:\n  retention_interval_s: 1\n")
    config.write_text(fast)
    proc = ServerProcess(config)
    try:
        proc.wait_ready()
        headers = {**auth("MW_T_INGEST"), "Idempotency-Key": "dedup-1"}

        def post() -> httpx.Response:
            body = [event(1)]
            url = f"{proc.url}/v1/events?wait=10"
            return httpx.post(url, json=body, headers=headers, timeout=30)

        assert post().json()["status"] == "accepted"
        assert post().json()["status"] == "duplicate"  # within the window

        def purged() -> bool:
            return _count(migrated, IntakeEntry) == 0

        wait_until(purged, "the retention job to purge the consumed request", timeout=30)
        again = post()
        assert again.status_code == 200 and again.json()["status"] == "accepted"
        assert again.json()["result"]["valid"] == 1
    finally:
        proc.terminate()
        migrated.dispose()
