"""Migration 0025: every binary column compresses with lz4 on PostgreSQL (0020 set two);
values written before and after survive both ways."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Engine

from migrations import downgrade, upgrade
from monitor.storage import make_engine
from tests.services.postgres import PostgresServer

START = datetime(2026, 1, 1, tzinfo=UTC)
# Past the ~2 KB TOAST threshold and compressible: stored compressed.
PAYLOAD = b"MWP1" + bytes(range(256)) * 4 + b"\x00" * 3000


def _methods(engine: Engine) -> dict[str, str]:
    """The compression method set on each binary column ('' is the server's default)."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT c.relname || '.' || a.attname, a.attcompression FROM pg_attribute a "
            "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND a.atttypid = 'bytea'::regtype "
            "AND a.attnum > 0 AND NOT a.attisdropped"
        )).all()  # fmt: skip
    return {name: method for name, method in rows}


def _insert(engine: Engine, start: datetime) -> None:
    with engine.begin() as conn:
        conn.execute(
            text(
                'INSERT INTO day_profiles (model, version, day_start, slice_key, "column",'
                " payload, updated_at) VALUES ('m', '1', :s, '', 'x', :p, :s)"
            ),
            {"s": start, "p": PAYLOAD},
        )


def _values_and_methods(engine: Engine) -> list[tuple[bytes, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT payload, pg_column_compression(payload) FROM day_profiles ORDER BY day_start"
        )).all()  # fmt: skip
    return [(bytes(p), m) for p, m in rows]


def test_lz4_on_postgresql_and_back(postgres: PostgresServer) -> None:
    engine = make_engine(postgres.create_database())
    upgrade(engine, "0024_waiting_batches")
    _insert(engine, START)  # written with pglz
    upgrade(engine)
    methods = _methods(engine)
    assert {m for m in methods.values()} == {"l"}, methods
    assert "day_profiles.payload" in methods and "waiting_batches.body" in methods
    _insert(engine, START + timedelta(hours=1))
    assert _values_and_methods(engine) == [(PAYLOAD, "pglz"), (PAYLOAD, "lz4")]
    downgrade(engine, "0024_waiting_batches")
    methods = _methods(engine)
    assert methods.pop("window_profiles.payload") == methods.pop("outcome_summaries.payload") == "l"
    assert set(methods.values()) == {""}  # 0020's two stay lz4
    _insert(engine, START + timedelta(hours=2))
    assert _values_and_methods(engine) == [(PAYLOAD, "pglz"), (PAYLOAD, "lz4"), (PAYLOAD, "pglz")]
    engine.dispose()


def test_sqlite_is_unchanged(sqlite_engine: Engine) -> None:
    _insert(sqlite_engine, START)
    with sqlite_engine.connect() as conn:
        stored = conn.execute(text("SELECT payload FROM day_profiles")).scalar_one()
    assert bytes(stored) == PAYLOAD
