"""Migration 0022: existing window failures get their window's start; other items stay NULL."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from migrations import upgrade
from monitor.failures import list_failures
from monitor.storage import make_engine

START = datetime(2026, 1, 1, 10, tzinfo=UTC)


def test_existing_window_failures_get_their_window_start(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine, "0021_day_summaries")
    at = START.isoformat()
    rows = [  # (item, model, version)
        (f"drift fraud/1 {at}", "fraud", "1"),
        (f"slo a/b c/2 {at}", "a/b c", "2"),  # a model name with a slash and a space
        (f"drift fraud/1 day {at}", "fraud", "1"),  # a period, not a window
        ("baseline fraud/1", "fraud", "1"),
        (f"drift fraud/1 {at}x", "fraud", "1"),  # not a time
        ("metrics", None, None),
    ]
    with engine.begin() as conn:
        for item, model, version in rows:
            conn.execute(
                text(
                    "INSERT INTO job_failures (job, item, model, version, error, failures, "
                    "first_failed_at, last_failed_at, retry_at) "
                    "VALUES ('evaluate', :i, :m, :v, 'boom', 2, :t, :t, :t)"
                ),
                {"i": item, "m": model, "v": version, "t": START},
            )
    upgrade(engine)
    starts = {f.item: f.window_start for f in list_failures(engine)}
    assert starts == {
        f"drift fraud/1 {at}": START,
        f"slo a/b c/2 {at}": START,
        f"drift fraud/1 day {at}": None,
        "baseline fraud/1": None,
        f"drift fraud/1 {at}x": None,
        "metrics": None,
    }
    engine.dispose()
