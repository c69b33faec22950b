"""Migration 0021: existing days are marked changed, so their merged summaries get stored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from migrations import upgrade
from monitor.storage import make_engine, pending_changes

DAY1 = datetime(2026, 1, 1, tzinfo=UTC)


def test_existing_days_are_marked_for_their_day_summaries(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine, "0020_join")
    windows = [DAY1 + timedelta(hours=h) for h in (0, 5, 23, 24)]  # 2 days
    with engine.begin() as conn:
        for start in windows:
            conn.execute(
                text(
                    "INSERT INTO window_counts (model, version, window_start, slice_key, "
                    "window_end, events, updated_at) VALUES ('m', '1', :s, '', :e, 3, :s)"
                ),
                {"s": start, "e": start + timedelta(hours=1)},
            )
        conn.execute(  # a day evaluated before: its marker consumed at seq 4
            text(
                "INSERT INTO window_changes (model, kind, version, window_start, window_end, "
                "seq, pending, changed_at) VALUES ('m', 'drift_day', '1', :s, :e, 4, false, :s)"
            ),
            {"s": DAY1, "e": DAY1 + timedelta(days=1)},
        )
    upgrade(engine)
    days = pending_changes(engine, "m", "drift_day")
    assert [(c.version, c.start, c.end) for c in days] == [
        ("1", DAY1, DAY1 + timedelta(days=1)),
        ("1", DAY1 + timedelta(days=1), DAY1 + timedelta(days=2)),
    ]
    assert [c.seq for c in days] == [5, 1]  # never back to a seq a consumer may hold
    assert pending_changes(engine, "m", "outcome_day") == []  # no outcome summaries
    engine.dispose()
