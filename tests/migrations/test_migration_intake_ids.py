"""Migration 0026: SQLite never reuses an intake row id, not even of rows deleted before the
upgrade whose dead letters still name them; rows survive both ways."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine

from migrations import downgrade, upgrade
from monitor.storage import make_engine

BEFORE = "0025_burst_storage"


def _append(engine: Engine, key: str | None = None) -> int:
    with engine.begin() as conn:
        row = conn.execute(
            text(
                "INSERT INTO intake_log (key, kind, sha256, events, body, received_at) "
                "VALUES (:k, 'events', 'x', 1, x'00', '2026-01-01 00:00:00') RETURNING id"
            ),
            {"k": key},
        ).scalar_one()
    return int(row)


def _delete_all(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM intake_log WHERE key IS NULL"))


def test_ids_of_deleted_requests_are_never_given_again(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'mw.db'}")
    upgrade(engine, BEFORE)
    kept = _append(engine, "idem:k")
    gone = _append(engine)
    with engine.begin() as conn:  # a dead letter of a consumed request, deleted since
        conn.execute(
            text(
                'INSERT INTO dead_letters (source, key, "offset", reason, detail, payload, '
                "payload_size, truncated, created_at, intake_id) VALUES ('http', 'drain:x', 0, "
                "'wrong_type', 'x', x'00', 1, 0, '2026-01-01 00:00:00', :i)"
            ),
            {"i": gone + 5},
        )
    _delete_all(engine)
    upgrade(engine)
    first = _append(engine)
    assert first > gone + 5
    _delete_all(engine)
    assert _append(engine) == first + 1  # the highest deleted id is not given again
    with engine.connect() as conn:
        assert conn.scalar(text("SELECT key FROM intake_log WHERE id = :i"), {"i": kept})
    downgrade(engine, BEFORE)
    with engine.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM intake_log")) == 2
    engine.dispose()
