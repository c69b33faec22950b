"""PostgreSQL pool connections are pinged only after they sat idle; a dead idle one is replaced."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from monitor.storage import _engine, make_engine


@pytest.fixture
def pg(postgres: Any) -> Iterator[tuple[Engine, list[int]]]:
    """An engine of one pooled connection, and the count of its pings."""
    engine = make_engine(postgres.create_database(), pool_size=1, max_overflow=0)
    pings: list[int] = []
    real = engine.dialect.do_ping

    def counted(conn: Any) -> bool:
        pings.append(1)
        return real(conn)

    engine.dialect.do_ping = counted  # type: ignore[method-assign]
    try:
        yield engine, pings
    finally:
        engine.dispose()


def _pid(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def test_a_connection_back_just_now_is_not_pinged(pg: tuple[Engine, list[int]]) -> None:
    engine, pings = pg
    first = _pid(engine)  # a new connection: not pinged either
    assert [_pid(engine) for _ in range(5)] == [first] * 5
    assert pings == []


def test_an_idle_connection_is_pinged_and_a_dead_one_replaced(
    pg: tuple[Engine, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, pings = pg
    monkeypatch.setattr(_engine, "PING_IDLE_S", 0.05)
    first = _pid(engine)
    time.sleep(0.1)
    assert _pid(engine) == first and len(pings) == 1  # alive: kept
    other = make_engine(engine.url, pool_size=1)
    try:
        with other.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": first})
    finally:
        other.dispose()
    time.sleep(0.1)
    replaced = _pid(engine)  # the ping fails: a new connection, no error
    assert replaced != first and len(pings) == 2
