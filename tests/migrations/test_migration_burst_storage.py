"""Migration 0025: every binary column compresses with lz4 on PostgreSQL (0020 set two),
values written before and after surviving both ways; period results updated in place."""

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


def _period_tables(engine: Engine) -> dict[str, tuple[list[str] | None, list[str]]]:
    """Each period result table's storage options and its indexes' names."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT c.relname, c.reloptions, array(SELECT i.relname FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = c.oid ORDER BY 1) "
            "FROM pg_class c WHERE c.relname IN ('drift_period_results', 'outcome_period_results')"
        )).all()  # fmt: skip
    return {name: (options, list(indexes)) for name, options, indexes in rows}


def test_period_results_update_in_place(postgres: PostgresServer) -> None:
    """fillfactor 50 and no index on the column every rewrite changes, so rewriting a day's
    rows (the current day, every tick) can be a HOT update; the downgrade restores both."""
    engine = make_engine(postgres.create_database())
    upgrade(engine)
    tables = _period_tables(engine)
    assert tables["drift_period_results"] == (
        ["fillfactor=50"],
        ["pk_drift_period_results", "uq_drift_period_results_key"],
    )
    assert tables["outcome_period_results"][0] == ["fillfactor=50"]
    row = (
        "INSERT INTO drift_period_results (model, version, period, period_start, period_end, "
        'slice_key, computed_at, "column", method, value, threshold, n_reference, n_current, '
        "status) VALUES ('m', '1', 'day', :s, :e, '', :now, 'x', 'psi', :v, 0.1, 500, 480, 'ok') "
        'ON CONFLICT (model, version, period, period_start, slice_key, "column", method) '
        "DO UPDATE SET value = excluded.value, computed_at = excluded.computed_at"
    )
    with engine.begin() as conn:
        for i in range(3):
            conn.execute(text(row), {"s": START, "e": START + timedelta(days=1),
                                     "now": START + timedelta(hours=i), "v": 0.01 * i})  # fmt: skip
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT value FROM drift_period_results")).scalar_one()
    assert stored == 0.02  # rewritten in place, one row
    downgrade(engine, "0024_waiting_batches")
    tables = _period_tables(engine)
    assert tables["drift_period_results"][0] is None
    assert "ix_drift_period_results_computed_at" in tables["drift_period_results"][1]
    engine.dispose()
