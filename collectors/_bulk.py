"""Bulk writes and id-set filters below the ORM, for per-event rows (the label join).

SQLAlchemy's per-row bind processing (type decorators, JSON, datetime formatting) costs tens
of microseconds per row; per-event tables can not afford it. Here values are encoded once in the
form each driver stores (SQLite: naive UTC text as SQLAlchemy writes it, so ORM reads and string
comparisons agree; PostgreSQL: aware datetimes and JSONB) and whole batches go to the driver:
COPY into a temporary table on PostgreSQL, one executemany on SQLite. A set of ids is ONE bound
parameter (a JSON text for `json_each` on SQLite, an array literal on PostgreSQL), so a
set-based statement needs neither chunking nor thousands of placeholders.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray
from sqlalchemy import TextClause, bindparam, text
from sqlalchemy.orm import Session

_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def json_text(value: Any) -> str:
    """A JSON column's stored text (as the engine's json_serializer writes it)."""
    return orjson.dumps(value, option=_JSON_OPTIONS).decode()


def json_value(stored: Any) -> Any:
    """A JSON column's value as the driver returns it (SQLite's numeric affinity turns a
    stored number's text into the number) -> the document."""
    return orjson.loads(stored) if isinstance(stored, str | bytes) else stored


def is_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def ts_encoder(session: Session) -> Callable[[datetime], Any]:
    """Aware UTC datetime -> the value the driver stores for a UTCDateTime column."""
    if is_postgres(session):
        return lambda ts: ts
    return lambda ts: ts.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


def ts_column(session: Session, seconds: NDArray[np.float64]) -> list[Any]:
    """Epoch seconds -> the values the driver stores for a UTCDateTime column, vectorised."""
    micros = np.round(seconds * 1e6).astype(np.int64)
    if is_postgres(session):
        return [datetime.fromtimestamp(us / 1e6, UTC) for us in micros.tolist()]
    text = np.datetime_as_string(micros.astype("datetime64[us]"), unit="us").tolist()
    return [t.replace("T", " ") for t in text]


def _ids_json(ids: Sequence[str]) -> str:
    return orjson.dumps(list(ids)).decode()


def _pg_array(ids: Sequence[str]) -> str:
    """PostgreSQL: the ids as ONE text-array literal, a constant to the planner (a hashed
    `= ANY`, and row estimates from the real list). A Python list as an array parameter costs
    the driver ~1.5 µs of CPU per id; an array built by the server from JSON at run time is not
    hashed, and filtering thousands of waiting rows with it costs seconds."""
    if not ids:
        return "{}"
    joined = "".join(ids)
    if '"' in joined or "\\" in joined:
        ids = [i.replace("\\", "\\\\").replace('"', '\\"') for i in ids]
    return '{"' + '","'.join(ids) + '"}'


def in_ids(session: Session, column: str, ids: Sequence[str], name: str = "ids") -> TextClause:
    """`column IN ids` as one bound parameter."""
    if is_postgres(session):
        clause = text(f"{column} = ANY(CAST(:{name} AS text[]))")
        return clause.bindparams(bindparam(name, _pg_array(ids)))
    clause = text(f"{column} IN (SELECT value FROM json_each(:{name}))")
    return clause.bindparams(bindparam(name, _ids_json(ids)))


def upsert(
    session: Session,
    table: str,
    columns: Sequence[str],
    keys: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
    nulls: Sequence[str] = (),
) -> None:
    """Insert encoded rows (unique by `keys`), each replacing a stored row with its keys; the
    columns `nulls` are left to their default (NULL) and set to NULL in a replaced row."""
    if not rows:
        return
    names = ", ".join(columns)
    updates = [f"{c} = excluded.{c}" for c in columns if c not in keys]
    conflict = f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET "
    conflict += ", ".join(updates + [f"{c} = NULL" for c in nulls])
    connection = session.connection()
    if not is_postgres(session):
        marks = ", ".join("?" for _ in columns)
        connection.exec_driver_sql(
            f"INSERT INTO {table} ({names}) VALUES ({marks}) {conflict}", rows
        )
        return
    _copy_upsert(session, table, columns, rows, conflict)


def _copy_upsert(
    session: Session,
    table: str,
    columns: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
    conflict: str,
) -> None:
    """PostgreSQL: COPY into a temporary table dropped at commit, then one INSERT ... SELECT."""
    stage = f"_stage_{table}"
    names = ", ".join(columns)
    connection = session.connection()
    connection.exec_driver_sql(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS {stage} (LIKE {table} INCLUDING DEFAULTS) "
        "ON COMMIT DELETE ROWS"
    )
    connection.exec_driver_sql(f"TRUNCATE {stage}")
    raw: Any = connection.connection.driver_connection
    with raw.cursor() as cursor, cursor.copy(f"COPY {stage} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    connection.exec_driver_sql(
        f"INSERT INTO {table} ({names}) SELECT {names} FROM {stage} {conflict}"
    )
