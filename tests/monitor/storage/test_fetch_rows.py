"""`fetch_rows`: payload rows read in the binary protocol on PostgreSQL, as usual on SQLite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from sqlalchemy import select, text
from sqlalchemy.engine import Engine

from monitor.storage import AlertSilence, WindowProfile, fetch_rows, transaction

START = datetime(2026, 5, 1, 12, tzinfo=UTC)


def _profile(start: datetime, payload: bytes) -> WindowProfile:
    return WindowProfile(
        model="m", version="1", window_start=start, slice_key='{"region":"eu"}', column="x",
        window_end=start + timedelta(hours=1), kind="numeric", n=3, payload=payload,
    )  # fmt: skip


def test_payloads_and_times_read_back_exactly(engine: Engine) -> None:
    payloads = [bytes(range(256)) * 8, b"", b"\x00\\x00'\"", b"MWP1" + b"\xff" * 3000]
    t = WindowProfile
    with transaction(engine) as s:
        if engine.dialect.name == "postgresql":  # binary timestamps arrive in the session's zone
            s.execute(text("SET LOCAL TIME ZONE 'Asia/Kolkata'"))
        s.add_all(_profile(START + timedelta(hours=i), p) for i, p in enumerate(payloads))
        s.flush()  # read back inside the same, uncommitted transaction
        stmt = select(t.window_start, t.slice_key, t.payload, t.n).order_by(t.window_start)
        rows = fetch_rows(s, stmt)
    assert [r[2] for r in rows] == payloads
    assert all(type(r[2]) is bytes for r in rows)
    assert [r[0] for r in rows] == [START + timedelta(hours=i) for i in range(4)]
    assert all(r[0].utcoffset() == timedelta(0) for r in rows)  # UTC, whatever the session zone
    assert {(r[1], r[3]) for r in rows} == {('{"region":"eu"}', 3)}


def test_zero_rows_and_the_connection_after(engine: Engine) -> None:
    """No rows is an empty list; later reads on the same connection are unchanged (JSON
    documents still decode as SQLAlchemy expects, not in the binary format)."""
    t = WindowProfile
    when = datetime(2026, 5, 1, 14, 30, tzinfo=timezone(timedelta(hours=2)))
    with transaction(engine) as s:
        assert list(fetch_rows(s, select(t.payload).where(t.model == "none"))) == []
        s.add(AlertSilence(
            matchers=["severity=page"], starts_at=when, ends_at=when + timedelta(hours=1),
            author="test", comment="binary reads leave JSON alone",
        ))  # fmt: skip
        s.flush()
        silence = s.scalars(select(AlertSilence)).one()
        s.expire(silence)
        assert silence.matchers == ["severity=page"]
        assert silence.starts_at == when
