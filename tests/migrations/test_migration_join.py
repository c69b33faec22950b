"""Migration 0020_join: summary payloads lz4-compressed on PostgreSQL, where the server can."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from migrations import downgrade, upgrade
from monitor.storage import make_engine
from tests.services.postgres import PostgresServer

COLUMNS = {"window_profiles": "payload", "outcome_summaries": "payload"}


def _methods(engine: Engine) -> dict[str, str]:
    sql = text(
        "SELECT attrelid::regclass::text, attcompression FROM pg_attribute "
        "WHERE attname = 'payload' AND attrelid::regclass::text IN "
        "('window_profiles', 'outcome_summaries')"
    )
    with engine.connect() as c:
        return {table: str(method) for table, method in c.execute(sql)}


def _has_lz4(engine: Engine) -> bool:
    with engine.connect() as c:
        try:
            c.execute(text("SET default_toast_compression = lz4"))
        except DBAPIError:
            return False
        return True


def test_payloads_use_lz4_and_downgrade_restores_the_default(postgres: PostgresServer) -> None:
    engine = make_engine(postgres.create_database())
    try:
        upgrade(engine)
        want = "l" if _has_lz4(engine) else ""
        assert _methods(engine) == dict.fromkeys(COLUMNS, want)
        downgrade(engine, "0019_intake_dead_letters")
        assert _methods(engine) == dict.fromkeys(COLUMNS, "")
        assert upgrade(engine).at_head
    finally:
        engine.dispose()
