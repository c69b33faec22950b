"""Storing drift and outcome results idempotently: a re-run of a window replaces its rows.

Every store function builds its rows as columns (one sequence per table column, no dict per
row) and upserts them through one path. On PostgreSQL that is one `INSERT ... SELECT FROM
unnest(CAST(:col_0 AS float8[]), ...) ON CONFLICT DO UPDATE`, each column ONE text-format array
literal built here: numbers by orjson (`[1.5,null]` with braces for brackets; NaN and inf are
written as null, i.e. stored NULL), texts and datetimes by quoting each distinct value once.
That parses in ~0.27 s of server CPU where the same 46,400 rows as one JSON array of objects
(`json_to_recordset`, the previous path) took ~0.47 s; psycopg's own list adaptation quotes per
element and cost the client ~1.8 s. A table with a column of another type (bytea) keeps the
`executemany`, cheaper for it. What every row shares (model, version, computed_at) is one
typed parameter each. SQLite keeps an `executemany` of dict rows. The store functions take an
Engine (their own transaction) or a Session (the caller's, so a window's read and write share
a connection).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import Table, TextClause, TypeDecorator, bindparam, text
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.detectors import DriftResult
from monitor.errors import InputError
from monitor.profiles import key_of
from monitor.results.documents import computed_document, with_slice
from monitor.slo.result import SloResult
from monitor.storage import (
    Base,
    DriftPeriodResultRow,
    DriftResultRow,
    EstimatedResultRow,
    FairnessResultRow,
    OutcomePeriodResultRow,
    OutcomeResultRow,
    SloResultRow,
    transaction,
    utcnow,
)

if TYPE_CHECKING:
    from monitor.fairness import FairnessResult
    from monitor.outcomes import OutcomeResult

_DRIFT_KEY = ["model", "version", "window_start", "slice_key", "column", "method"]
_OUTCOME_KEY = ["model", "version", "window_start", "slice_key", "metric"]
_SLO_KEY = ["model", "version", "window_start", "slice_key", "objective"]
_ESTIMATED_KEY = ["model", "version", "window_start", "slice_key", "metric"]
_FAIRNESS_KEY = ["model", "version", "window_start", "attribute", "slice_key", "metric"]
_PERIOD_KEY = ["model", "version", "period", "period_start", "slice_key"]


def slice_key_of(slice_: Mapping[str, Any] | None) -> str:
    """The stored slice key of a result's slice ("" for overall): the one slice-key format."""
    return key_of(slice_)


def result_document(
    result: DriftResult | OutcomeResult | SloResult | Base,
) -> dict[str, Any]:
    """The one document of a result: a computed one (DriftResult, OutcomeResult, SloResult)
    or its stored row, every field by name, with the slice as `slice` (None for the whole
    window; a stored slice key is parsed). The API routes, the drift JSON report (through
    `computed_document`, its computed half) and the store functions all go through it, so a
    new field appears everywhere by itself."""
    if isinstance(result, Base):
        columns = sa_inspect(type(result)).column_attrs
        return with_slice({c.key: getattr(result, c.key) for c in columns})
    return computed_document(result)


def store_drift_results(
    engine: Engine | Session,
    model: str,
    version: str,
    window: tuple[datetime, datetime],
    results: Sequence[DriftResult],
    computed_at: datetime | None = None,
) -> int:
    """Upsert one window's drift results; returns the number of rows written."""
    return store_drift_windows(engine, model, version, [(window, results)], computed_at)


def store_drift_windows(
    engine: Engine | Session,
    model: str,
    version: str,
    windows: Sequence[tuple[tuple[datetime, datetime], Sequence[DriftResult]]],
    computed_at: datetime | None = None,
) -> int:
    """Upsert several windows' drift results of one version in ONE statement (a batch of
    changed windows, `monitor.evaluation._drift_batch`); returns the number of rows written."""
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


def store_fairness_windows(
    engine: Engine | Session,
    model: str,
    version: str,
    windows: Sequence[tuple[tuple[datetime, datetime], Sequence[FairnessResult]]],
    computed_at: datetime | None = None,
) -> int:
    """Upsert several windows' fairness results of one version in ONE statement."""
    table: Table = FairnessResultRow.__table__  # type: ignore[assignment]
    return _store_windows(engine, table, _FAIRNESS_KEY, (model, version), windows, computed_at)


def _store_windows(
    engine: Engine | Session,
    table: Table,
    key: list[str],
    ident: tuple[str, str],
    windows: Sequence[
        tuple[
            tuple[datetime, datetime],
            Sequence[DriftResult] | Sequence[OutcomeResult] | Sequence[FairnessResult],
        ]
    ],
    computed_at: datetime | None,
) -> int:
    results: list[Any] = []
    starts: list[datetime] = []
    ends: list[datetime] = []
    for window, found in windows:
        start, end = _check_window(window)
        results += found
        starts += [start] * len(found)
        ends += [end] * len(found)
    columns = result_columns(results, table)
    columns |= {"window_start": starts, "window_end": ends} if results else {}
    # What every row of the batch shares is sent once, not once per row (~60,000 per burst).
    shared = {"model": ident[0], "version": ident[1], "computed_at": computed_at or utcnow()}
    return _upsert(engine, table, key, columns, shared)


def store_outcome_results(
    engine: Engine | Session,
    model: str,
    version: str,
    window: tuple[datetime, datetime],
    results: Sequence[OutcomeResult],
    computed_at: datetime | None = None,
) -> int:
    """Upsert one window's outcome metrics; returns the number of rows written."""
    return store_outcome_windows(engine, model, version, [(window, results)], computed_at)


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
    return _store(engine, table, _ESTIMATED_KEY, (model, version, window), rows, computed_at)


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
    shared = {
        "model": model, "version": version, "period": period, "period_start": start,
        "period_end": end, "computed_at": utcnow(),
    }  # fmt: skip
    key = [*_PERIOD_KEY, "column", "method"] if drift else [*_PERIOD_KEY, "metric"]
    return _upsert(session, table, key, result_columns(results, table), shared)


def upsert_rows(
    session: Session,
    table: Table,
    key: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
    shared: Mapping[str, Any] | None = None,
) -> int:
    """Upsert `rows` (each with the keys of the first) into `table` on its unique `key`, every
    other column replaced; `shared`: columns every row has (sent once on PostgreSQL). One array
    per column on PostgreSQL (`day_counts`); a table with a column of another type (the bytea
    `payload` of `day_profiles`, `day_outcome_summaries`) and SQLite get an executemany of
    `upsert_statement`, cheaper there (bench/result_upsert.py). Returns the rows written."""
    return _upsert(session, table, list(key), _columns_of(rows), shared or {})


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


def result_columns(
    results: Sequence[DriftResult | OutcomeResult | FairnessResult], table: Table
) -> dict[str, Sequence[Any]]:
    """The columns of `result_rows(results, table)` (one list per stored field, and the slice
    keys), without a dict per row; {} for no results. One result type per call (the first
    result's fields are read from every result)."""
    if not results:
        return {}
    kind: Any = type(results[0])
    names, _ = _stored_fields(kind, table)
    # A list per field is half the cost of transposing one tuple per result (46,400: 27 ms).
    columns: dict[str, Sequence[Any]] = {
        name: list(map(operator.attrgetter(name), results)) for name in names
    }
    columns["slice_key"] = _slice_keys(map(operator.attrgetter("slice"), results))
    return columns


def _slice_keys(slices: Iterable[Mapping[str, Any] | None]) -> list[str]:
    """Each slice's key; a window's results share one slice object per slice (the detectors
    parse each key once), so the key is looked up by identity first (46,400: 12 against 30 ms).
    The identities are those of live objects: the caller's results hold them."""
    by_id: dict[int, str] = {}
    memo: dict[Any, str] = {}
    keys = []
    for slice_ in slices:
        key = by_id.get(id(slice_))
        if key is None:
            key = by_id[id(slice_)] = _memo_key(slice_, memo)
        keys.append(key)
    return keys


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
    rows: Sequence[Mapping[str, Any]],
    computed_at: datetime | None,
) -> int:
    model, version, window = ident
    start, end = _check_window(window)
    # The arguments name the window; a result's own model/version/window (SLO) agree or lose.
    shared = {
        "model": model, "version": version, "window_start": start, "window_end": end,
        "computed_at": computed_at or utcnow(),
    }  # fmt: skip
    return _upsert(engine, table, key, _columns_of(rows), shared)


def _columns_of(rows: Sequence[Mapping[str, Any]]) -> dict[str, Sequence[Any]]:
    """Rows as columns, named by the first row's keys (a key another row lacks is NULL)."""
    return {name: [row.get(name) for row in rows] for name in rows[0]} if rows else {}


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
    columns: Mapping[str, Sequence[Any]],
    shared: Mapping[str, Any],
) -> int:
    """Upsert the rows of `columns` (one sequence per column, all of one length), each also
    holding the values of `shared`, which win over a column of the same name."""
    columns = {name: values for name, values in columns.items() if name not in shared}
    count = len(next(iter(columns.values()), ()))
    if count:
        with _session(target) as session:
            dialect = session.get_bind().dialect.name
            pg = dialect == "postgresql"
            arrays = (
                _unnest_upsert(table, tuple(key), tuple(columns), tuple(shared)) if pg else None
            )
            if arrays is not None:
                session.execute(arrays[0], _array_params(arrays[1], columns, shared))
            else:
                rows = [{**shared, **dict(zip(columns, values, strict=True))}
                        for values in zip(*columns.values(), strict=True)]  # fmt: skip
                session.execute(upsert_statement(dialect, table, tuple(key)), rows)
    return count


def _array_params(
    encoders: Sequence[Encoder], columns: Mapping[str, Sequence[Any]], shared: Mapping[str, Any]
) -> dict[str, Any]:
    params = {f"shared_{c}": v for c, v in shared.items()}
    for i, (encode, values) in enumerate(zip(encoders, columns.values(), strict=True)):
        params[f"col_{i}"] = encode(values)
    return params


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
_PG = postgresql.dialect()  # type: ignore[no-untyped-call]
Encoder = Callable[[Sequence[Any]], Any]


@functools.cache
def _unnest_upsert(
    table: Table, key: tuple[str, ...], columns: tuple[str, ...], shared: tuple[str, ...]
) -> tuple[TextClause, tuple[Encoder, ...]] | None:
    """PostgreSQL: one array parameter per column (`col_<i>`, encoded by the i-th encoder),
    unnested into rows, and the `shared` columns as one parameter each (`shared_<column>`, of
    the column's type); built once per (table, key, columns, shared). None where a column has
    no array literal (bytea): there the executemany is cheaper (bench/result_upsert.py)."""
    encoders = tuple(_encoder(table.c[c].type) for c in columns)
    if None in encoders:
        return None
    q = _PG.identifier_preparer.quote
    names = ", ".join(q(c) for c in (*columns, *shared))
    arrays = ", ".join(
        f"CAST(:col_{i} AS {table.c[c].type.compile(dialect=_PG)}[])" for i, c in enumerate(columns)
    )
    values = ", ".join([*(q(c) for c in columns), *(f":shared_{c}" for c in shared)])
    updates = ", ".join(f"{q(c)} = excluded.{q(c)}" for c in (*columns, *shared) if c not in key)
    stmt = text(
        f"INSERT INTO {q(table.name)} ({names}) "
        f"SELECT {values} FROM unnest({arrays}) AS x({', '.join(q(c) for c in columns)}) "
        f"ON CONFLICT ({', '.join(q(c) for c in key)}) DO UPDATE SET {updates}"
    )
    stmt = stmt.bindparams(*(bindparam(f"shared_{c}", type_=table.c[c].type) for c in shared))
    return stmt, encoders  # type: ignore[return-value]  # no None among them


def _encoder(type_: Any) -> Encoder | None:
    """The array literal of a column of `type_`: numbers and texts (datetimes too); None for
    anything else. Bytea as psycopg's list of bytes, or as hex literals, cost PostgreSQL twice
    the executemany's binary parameters (2,000 1 KB payloads: 0.15 against 0.08 s CPU)."""
    base = type_.impl_instance if isinstance(type_, TypeDecorator) else type_
    try:
        python_type = base.python_type
    except NotImplementedError:
        return None
    if python_type in (int, float):
        return _number_array
    if python_type in (str, datetime):
        return functools.partial(_text_array, type_.bind_processor(_PG))
    return None


def _number_array(values: Sequence[Any]) -> str:
    # orjson writes NaN and inf as null (NULL), as the JSON document it replaces did; its
    # shortest round-trip floats (5e-324, 1e+300 as 1e300) parse back bit for bit in float8.
    return "{" + orjson.dumps(values, option=_JSON)[1:-1].decode() + "}"


def _text_array(process: Callable[[Any], Any] | None, values: Sequence[Any]) -> str:
    # A burst's texts repeat (slice keys, columns, methods, window bounds): each distinct value
    # is quoted once.
    quoted = {value: _quoted(value, process) for value in set(values)}
    return "{" + ",".join(map(quoted.__getitem__, values)) + "}"


def _quoted(value: Any, process: Callable[[Any], Any] | None) -> str:
    """One element of an array literal: NULL unquoted, anything else double-quoted with `"`
    and `\\` backslash-escaped (so commas, braces, spaces and the text "NULL" stay text)."""
    if value is None:
        return "NULL"
    text_ = str(value if process is None else process(value))
    return '"' + text_.replace("\\", "\\\\").replace('"', '\\"') + '"'
