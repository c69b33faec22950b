"""Change marks: several kinds in one call, seq bumps, consume-then-mark keeps a change, a
pending marker keeps when it became pending, one read gets every kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine

from monitor.storage import (
    consume_changes,
    mark_changed,
    mark_read,
    pending_changes,
    pending_kinds,
    transaction,
)

START = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
WINDOWS = [("m", "1", START + HOUR, START + 2 * HOUR), ("m", "1", START, START + HOUR)]


def seqs(engine: Engine, kind: str) -> list[tuple[datetime, int]]:
    return [(c.start, c.seq) for c in pending_changes(engine, "m", kind)]


def test_one_call_marks_every_kind_and_a_repeat_bumps_only_its_kind(engine: Engine) -> None:
    with transaction(engine) as s:
        mark_changed(s, ("outcome", "estimate"), WINDOWS + WINDOWS[:1])  # a repeat is one mark
    assert seqs(engine, "outcome") == [(START, 1), (START + HOUR, 1)]
    assert seqs(engine, "estimate") == [(START, 1), (START + HOUR, 1)]
    assert seqs(engine, "drift") == []
    with transaction(engine) as s:
        mark_changed(s, "outcome", WINDOWS[1:])
    assert seqs(engine, "outcome") == [(START, 2), (START + HOUR, 1)]
    assert seqs(engine, "estimate") == [(START, 1), (START + HOUR, 1)]
    consume_changes(engine, "outcome", pending_changes(engine, "m", "outcome"))
    assert seqs(engine, "outcome") == []
    with transaction(engine) as s:
        mark_changed(s, ("estimate", "outcome"), WINDOWS[:1])
        mark_changed(s, (), WINDOWS)  # no kind: nothing
    assert seqs(engine, "outcome") == [(START + HOUR, 2)]
    assert seqs(engine, "estimate") == [(START, 1), (START + HOUR, 2)]


def test_a_pending_marker_keeps_when_it_became_pending_and_one_read_gets_every_kind(
    engine: Engine,
) -> None:
    def read() -> dict[str, list[tuple[int, datetime | None]]]:
        found = pending_kinds(engine, "m", ["drift", "drift_day"])
        return {k: [(c.seq, c.changed_at) for c in v] for k, v in found.items()}

    with transaction(engine) as s:
        mark_changed(s, "drift", WINDOWS[1:], now=START)
        mark_changed(s, "drift", WINDOWS[1:], now=START + HOUR)  # pending: still waits since START
    assert read() == {"drift": [(2, START)], "drift_day": []}
    consume_changes(engine, "drift", pending_changes(engine, "m", "drift"))
    with transaction(engine) as s:
        marked = mark_read(s, "drift_day", WINDOWS[1:], now=START + 2 * HOUR)
        mark_changed(s, "drift", WINDOWS[1:], now=START + 3 * HOUR)  # consumed: waits anew
    assert [(c.seq, c.changed_at) for c in marked] == [(1, START + 2 * HOUR)]
    assert read() == {"drift": [(3, START + 3 * HOUR)], "drift_day": [(1, START + 2 * HOUR)]}
