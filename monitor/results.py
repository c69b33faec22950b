"""Storing drift and outcome results idempotently: a re-run of a window replaces its rows.

On PostgreSQL a window's rows are one `INSERT ... SELECT FROM json_to_recordset(:rows) ON
CONFLICT DO UPDATE`: one statement and one parameter (the rows as one JSON document, encoded by
orjson), instead of an `executemany` of ~300 rows; arrays per column (`unnest`) were tried first
and spent more in psycopg's per-element array quoting than they saved (bench/soak.py profile).
`json`, not `jsonb`: the rows are read once, and building a jsonb document first costs the
server ~20% more (15,000 rows: 190 against 230 ms).
SQLite keeps the `executemany`. The store functions take an Engine (their
own transaction) or a Session (the caller's, so a window's read and write share a connection).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import Table, TextClause, bindparam, text
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.detectors import DriftResult
from monitor.errors import InputError
from monitor.profiles import key_of, parse_slice_key
from monitor.storage import (
    Base,
    DriftPeriodResultRow,
    DriftResultRow,
    EstimatedResultRow,
    OutcomePeriodResultRow,
    OutcomeResultRow,
    SloResultRow,
    transaction,
    utcnow,
)

if TYPE_CHECKING:
    from monitor.outcomes import OutcomeResult
    from monitor.slo import SloResult

_DRIFT_KEY = ["model", "version", "window_start", "slice_key", "column", "method"]
_OUTCOME_KEY = ["model", "version", "window_start", "slice_key", "metric"]
_SLO_KEY = ["model", "version", "window_start", "slice_key", "objective"]
_ESTIMATED_KEY = ["model", "version", "window_start", "slice_key", "metric"]
_PERIOD_KEY = ["model", "version", "period", "period_start", "slice_key"]


def slice_key_of(slice_: Mapping[str, Any] | None) -> str:
    """The stored slice key of a result's slice ("" for overall): the one slice-key format."""
    return key_of(slice_)


def result_document(
    result: DriftResult | OutcomeResult | SloResult | Base,
) -> dict[str, Any]:
    """The one document of a result: a computed one (DriftResult, OutcomeResult, SloResult)
    or its stored row, every field by name, with the slice as `slice` (None for the whole
    window; a stored slice key is parsed). The API routes, the drift JSON report and the
    store functions all go through it, so a new field appears everywhere by itself."""
    doc: dict[str, Any]
    if isinstance(result, Base):
        columns = sa_inspect(type(result)).column_attrs
        doc = {c.key: getattr(result, c.key) for c in columns}
    elif isinstance(result, DriftResult):
        doc = result.to_dict()  # the drift report's key order, and the derived `decided_by`
    else:
        doc = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    if "slice_key" in doc:
        doc["slice"] = parse_slice_key(doc.pop("slice_key"))
    return doc


def store_drift_results(
    engine: Engine | Session,
    model: str,
    version: str,
    window: tuple[datetime, datetime],
    results: Sequence[DriftResult],
    computed_at: datetime | None = None,
) -> int:
    """Upsert one window's drift results; returns the number of rows written."""
    table: Table = DriftResultRow.__table__  # type: ignore[assignment]
    rows = result_rows(results, table)
    return _store(engine, table, _DRIFT_KEY, (model, version, window), rows, computed_at)


def store_drift_windows(
    engine: Engine | Session,
    model: str,
    version: str,
    windows: Sequence[tuple[tuple[datetime, datetime], Sequence[DriftResult]]],
    computed_at: datetime | None = None,
) -> int:
    """Upsert several windows' drift results of one version in ONE statement (a batch of
    changed windows, `monitor._drift_batch`); returns the number of rows written."""
    table: Table = DriftResultRow.__table__  # type: ignore[assignment]
    return _store_windows(engine, table, _DRIFT_KEY, (model, version), windows, computed_at)


def store_outcome_windows(
    engine: Engine | Session,
    model: str,
    version: str,
    windows: Sequence[tuple[tuple[datetime, datetime], Sequence[OutcomeResult]]],
    computed_at: datetime | None = None,
) -> int:
    """Upsert several windows' outcome metrics of one version in ONE statement."""
    table: Table = OutcomeResultRow.__table__  # type: ignore[assignment]
    return _store_windows(engine, table, _OUTCOME_KEY, (model, version), windows, computed_at)


def _store_windows(
    engine: Engine | Session,
    table: Table,
    key: list[str],
    ident: tuple[str, str],
    windows: Sequence[tuple[tuple[datetime, datetime], Sequence[DriftResult | OutcomeResult]]],
    computed_at: datetime | None,
) -> int:
    rows: list[dict[str, Any]] = []
    slice_keys: dict[Any, str] = {}  # a batch's results share a few dozen slices
    for window, results in windows:
        start, end = _check_window(window)
        for row in result_rows(results, table, slice_keys):
            row["window_start"], row["window_end"] = start, end
            rows.append(row)
    # What every row of the batch shares is sent once, not once per row (~60,000 per burst).
    shared = {"model": ident[0], "version": ident[1], "computed_at": computed_at or utcnow()}
    return _upsert(engine, table, key, rows, shared)


def store_outcome_results(
    engine: Engine | Session,
    model: str,
    version: str,
    window: tuple[datetime, datetime],
    results: Sequence[OutcomeResult],
    computed_at: datetime | None = None,
) -> int:
    """Upsert one window's outcome metrics; returns the number of rows written."""
    table: Table = OutcomeResultRow.__table__  # type: ignore[assignment]
    rows = result_rows(results, table)
    return _store(engine, table, _OUTCOME_KEY, (model, version, window), rows, computed_at)


def store_slo_results(
    engine: Engine | Session,
    model: str,
    version: str,
    window: tuple[datetime, datetime],
    results: Sequence[SloResult],
    computed_at: datetime | None = None,
) -> int:
    """Upsert one window's serving-objective results (every slice); rows written."""
    table: Table = SloResultRow.__table__  # type: ignore[assignment]
    rows = [result_row(result_document(r), table) for r in results]
    return _store(engine, table, _SLO_KEY, (model, version, window), rows, computed_at)


def store_estimated_results(
    engine: Engine | Session,
    model: str,
    version: str,
    window: tuple[datetime, datetime],
    rows: Sequence[Mapping[str, Any]],
    computed_at: datetime | None = None,
) -> int:
    """Upsert one window's estimated metrics and mean reconstruction error (every slice; each
    row has the table's columns after the window: slice_key, metric, value, ...)."""
    table: Table = EstimatedResultRow.__table__  # type: ignore[assignment]
    return _store(engine, table, _ESTIMATED_KEY, (model, version, window), [dict(r) for r in rows],
                  computed_at)  # fmt: skip


def store_period_results(
    session: Session,
    kind: str,
    ident: tuple[str, str, str],
    span: tuple[datetime, datetime],
    results: Sequence[DriftResult] | Sequence[OutcomeResult],
) -> int:
    """Upsert one period's `kind` ("drift" or "outcome") results; ident: model, version and
    "day" or "week". Returns the rows written."""
    drift = kind == "drift"
    row_type = DriftPeriodResultRow if drift else OutcomePeriodResultRow
    table: Table = row_type.__table__  # type: ignore[assignment]
    model, version, period = ident
    start, end = _check_window(span)
    common = {
        "model": model, "version": version, "period": period, "period_start": start,
        "period_end": end, "computed_at": utcnow(),
    }  # fmt: skip
    rows = [{**common, **row} for row in result_rows(results, table)]
    key = [*_PERIOD_KEY, "column", "method"] if drift else [*_PERIOD_KEY, "metric"]
    return _upsert(session, table, key, rows)


def result_row(doc: Mapping[str, Any], table: Table) -> dict[str, Any]:
    """A result document's stored row: the fields the table has a column for, and the slice as
    its slice key. The result type owns its fields; nothing here lists them again."""
    row = {name: value for name, value in doc.items() if name in table.c and name != "slice"}
    row["slice_key"] = slice_key_of(doc["slice"])
    return row


def result_rows(
    results: Sequence[DriftResult | OutcomeResult],
    table: Table,
    slice_keys: dict[Any, str] | None = None,
) -> list[dict[str, Any]]:
    """`result_row(result_document(r), table)` of each result, without building documents:
    the result type's fields the table stores are found once per (type, table), and each
    slice's key once per call (`slice_keys`: a memo the caller may share across calls).
    A burst stores ~300 rows per window; per-row documents were a tenth of its cost (soak)."""
    memo = {} if slice_keys is None else slice_keys
    out = []
    for result in results:
        kind: Any = type(result)  # a class is hashable; mypy's view of the union's is not
        names, values = _stored_fields(kind, table)
        row = dict(zip(names, values(result), strict=True))
        row["slice_key"] = _memo_key(result.slice, memo)
        out.append(row)
    return out


@functools.cache
def _stored_fields(
    result_type: type, table: Table
) -> tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]:
    """The dataclass fields of `result_type` that `table` has a column for (not the slice), and
    a getter of their values as a tuple."""
    fields = (f.name for f in dataclasses.fields(result_type))
    names = tuple(n for n in fields if n in table.c and n != "slice")
    getter = operator.attrgetter(*names)
    return names, (getter if len(names) > 1 else lambda r: (getter(r),))


def _memo_key(slice_: Mapping[str, Any] | None, memo: dict[Any, str]) -> str:
    if not slice_:
        return slice_key_of(slice_)
    try:
        found = memo.get(ident := tuple(slice_.items()))
    except TypeError:  # an unhashable value: no memo
        return slice_key_of(slice_)
    if found is None:
        found = memo[ident] = slice_key_of(slice_)
    return found


def _store(
    engine: Engine | Session,
    table: Table,
    key: list[str],
    ident: tuple[str, str, tuple[datetime, datetime]],
    rows: list[dict[str, Any]],
    computed_at: datetime | None,
) -> int:
    return _upsert(engine, table, key, _rows(ident, rows, computed_at or utcnow()))


def _rows(
    ident: tuple[str, str, tuple[datetime, datetime]],
    rows: list[dict[str, Any]],
    computed_at: datetime,
) -> list[dict[str, Any]]:
    model, version, window = ident
    start, end = _check_window(window)
    common = {
        "model": model, "version": version, "window_start": start, "window_end": end,
        "computed_at": computed_at,
    }  # fmt: skip
    # The arguments name the window; a result's own model/version/window (SLO) agree or lose.
    return [{**row, **common} for row in rows]


def _check_window(window: tuple[datetime, datetime]) -> tuple[datetime, datetime]:
    start, end = window
    if start.tzinfo is None or end.tzinfo is None:
        raise InputError("window bounds must be timezone-aware UTC datetimes")
    if not start < end:
        raise InputError(f"window start {start.isoformat()} is not before end {end.isoformat()}")
    return start, end


def _upsert(
    target: Engine | Session,
    table: Table,
    key: list[str],
    rows: list[dict[str, Any]],
    shared: Mapping[str, Any] | None = None,
) -> int:
    """Upsert `rows`, each also holding the values of `shared` (columns every row shares)."""
    if not rows:
        return 0
    shared = shared or {}
    with _session(target) as session:
        dialect = session.get_bind().dialect
        if dialect.name == "postgresql":
            stmt = _recordset_upsert(table, tuple(key), tuple(rows[0]), tuple(shared))
            rows_json = orjson.dumps(rows, option=_JSON).decode()
            session.execute(
                stmt, {"rows": rows_json, **{f"shared_{c}": v for c, v in shared.items()}}
            )
        else:
            rows = [{**row, **shared} for row in rows] if shared else rows
            session.execute(upsert_statement(dialect.name, table, tuple(key)), rows)
    return len(rows)


@contextmanager
def _session(target: Engine | Session) -> Iterator[Session]:
    if isinstance(target, Session):
        yield target
    else:
        with transaction(target) as session:
            yield session


@functools.cache
def upsert_statement(dialect_name: str, table: Table, key: tuple[str, ...]) -> Any:
    """The upsert of `table` on its unique `key` (every other column but `id` replaced), built
    once per (dialect, table, key): building `excluded` costs ~10 ms a call (soak)."""
    dialect = postgresql if dialect_name == "postgresql" else sqlite
    stmt = dialect.insert(table)
    update = {c.name: stmt.excluded[c.name] for c in table.columns if c.name not in (*key, "id")}
    return stmt.on_conflict_do_update(index_elements=list(key), set_=update)


_JSON = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


@functools.cache
def _recordset_upsert(
    table: Table, key: tuple[str, ...], columns: tuple[str, ...], shared: tuple[str, ...] = ()
) -> TextClause:
    """PostgreSQL: all rows as one JSON array of objects, typed by a recordset, and the `shared`
    columns as one parameter each (`shared_<column>`, of the column's type); built once."""
    pg = postgresql.dialect()  # type: ignore[no-untyped-call]
    q = pg.identifier_preparer.quote
    names = ", ".join(q(c) for c in (*columns, *shared))
    typed = ", ".join(f"{q(c)} {table.c[c].type.compile(dialect=pg)}" for c in columns)
    values = ", ".join([*(q(c) for c in columns), *(f":shared_{c}" for c in shared)])
    updates = ", ".join(f"{q(c)} = excluded.{q(c)}" for c in (*columns, *shared) if c not in key)
    stmt = text(
        f"INSERT INTO {q(table.name)} ({names}) "
        f"SELECT {values} FROM json_to_recordset(CAST(:rows AS json)) AS x({typed}) "
        f"ON CONFLICT ({', '.join(q(c) for c in key)}) DO UPDATE SET {updates}"
    )
    return stmt.bindparams(*(bindparam(f"shared_{c}", type_=table.c[c].type) for c in shared))
