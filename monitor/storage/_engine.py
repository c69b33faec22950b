"""Engine creation: URL normalisation, SQLite pragmas, session factory, binary reads."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
import psycopg
from psycopg import pq
from sqlalchemy import Executable, create_engine, event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, DisconnectionError
from sqlalchemy.orm import Session
from sqlalchemy.pool import ConnectionPoolEntry

from monitor.errors import ConfigError


def normalize_url(url: str | URL) -> URL:
    """Parse a database URL; plain `postgresql://` uses psycopg 3."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(f"database_url: cannot parse {str(url)!r} as a database URL") from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"database_url: unsupported backend {parsed.get_backend_name()!r}; "
            "use sqlite:///FILE or postgresql://..."
        )
    return parsed


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def make_engine(url: str | URL, **kwargs: Any) -> Engine:
    """Create an engine for SQLite or PostgreSQL with safe defaults."""
    parsed = normalize_url(url)
    # JSON columns hold per-event rows (the label join's predictions): orjson is ~5x faster.
    kwargs.setdefault("json_serializer", _json_text)
    kwargs.setdefault("json_deserializer", _json_value)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(parsed, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    ping_idle = kwargs.pop("pool_pre_ping", None) is not False
    connect_args = kwargs.pop("connect_args", {})
    connect_args.setdefault("connect_timeout", 10)
    engine = create_engine(parsed, connect_args=connect_args, **kwargs)
    if ping_idle:
        event.listen(engine, "connect", _checked_in)  # new: nothing to ping yet
        event.listen(engine, "checkin", _checked_in)
        event.listen(engine, "checkout", functools.partial(_ping_if_idle, engine))
    return engine


# A pooled connection back in the pool for longer than this is pinged before it is handed out
# again. SQLAlchemy's `pool_pre_ping` pings on every checkout: one more round trip per session,
# and an evaluation unit opens several in a few milliseconds (11% of a unit's time in
# bench/fleet.py, py-spy). A connection that died less than this ago fails its statement
# instead; the error invalidates the pool (SQLAlchemy's disconnect handling) and the work's
# failure is isolated and retried like any other.
PING_IDLE_S = 1.0
_CHECKED_IN = "modelwatch_checked_in"


def _checked_in(_dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
    record.info[_CHECKED_IN] = time.monotonic()


def _ping_if_idle(
    engine: Engine, dbapi_conn: Any, record: ConnectionPoolEntry, _proxy: Any
) -> None:
    """Ping a connection idle in the pool for `PING_IDLE_S` or more (or new to it); a dead one
    is replaced by the pool (DisconnectionError: it retries the checkout on a new connection)."""
    since = record.info.get(_CHECKED_IN)
    if since is not None and time.monotonic() - since < PING_IDLE_S:
        return
    try:
        engine.dialect.do_ping(dbapi_conn)
    except psycopg.Error as exc:
        if engine.dialect.is_disconnect(exc, dbapi_conn, None):  # type: ignore[arg-type]
            raise DisconnectionError(str(exc)) from exc
        raise


def _json_text(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY).decode()


def _json_value(text: Any) -> Any:
    # SQLite hands back a JSON scalar stored in a NUMERIC-affinity column as a number.
    return text if isinstance(text, int | float) else orjson.loads(text)


def session_factory(engine: Engine) -> Callable[[], Session]:
    """Sessions that keep loaded attributes usable after commit.

    Plain `Session`s bound to `engine`, not a `sessionmaker`: each sessionmaker is a new Session
    subclass whose event dispatch SQLAlchemy builds again on first use (~1 ms of CPU per
    transaction: a sixth of an idle daemon's tick on PostgreSQL)."""
    return functools.partial(Session, engine, expire_on_commit=False)


@contextmanager
def transaction(engine: Engine) -> Iterator[Session]:
    """A session in one transaction: committed on success, rolled back on error."""
    with session_factory(engine)() as session, session.begin():
        yield session


def fetch_rows(session: Session, stmt: Executable) -> Sequence[Any]:
    """All rows of a Core select, read in the session's transaction without ORM loading.

    On PostgreSQL the rows come in the binary protocol: a stored profile or summary (bytea, a
    few KB) is sent as its bytes, not hex text the server encodes and the client decodes
    (a burst's ~40,000 profile rows: ~0.55 s of CPU in text, ~0.3 s in binary). Only for
    selects of plain columns (text, numbers, timestamps, bytea) whose values SQLAlchemy
    processes the same in either format; SQLite reads them as usual."""
    conn = session.connection()
    raw = conn.connection.driver_connection
    if not isinstance(raw, psycopg.Connection):
        return conn.execute(stmt).all()
    factory = raw.cursor_factory
    raw.cursor_factory = _BinaryCursor
    try:
        return conn.execute(stmt).all()
    finally:
        raw.cursor_factory = factory


class _BinaryCursor(psycopg.Cursor[Any]):
    """A cursor whose results come in the binary format (`fetch_rows`)."""

    def __init__(self, connection: psycopg.Connection[Any], **kwargs: Any) -> None:
        super().__init__(connection, **kwargs)
        self.format = pq.Format.BINARY
