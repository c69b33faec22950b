"""Result upserts built column-wise (one array literal per column on PostgreSQL): every value
a result can hold reads back exactly, on SQLite and PostgreSQL."""

from __future__ import annotations

import math
import random
import struct
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

import monitor.results.store as results_module
from monitor.detectors import DriftResult
from monitor.outcomes import OutcomeResult
from monitor.results.store import (
    result_columns,
    result_rows,
    slice_key_of,
    store_drift_results,
    store_drift_windows,
    store_outcome_windows,
    store_period_results,
    upsert_rows,
)
from monitor.storage import (
    DayCount,
    DayProfile,
    DriftPeriodResultRow,
    DriftResultRow,
    OutcomeResultRow,
    transaction,
)

START = datetime(2026, 11, 30, 10, tzinfo=UTC)
WINDOW = (START, START + timedelta(hours=1))
# What an array literal must not mangle: its own syntax (quotes, backslashes, commas, braces,
# NULL as text, blanks), control characters and unicode.
TEXTS = [
    'a "quoted" name', "back\\slash\\", "a,b", "{x}", "NULL", "null", "", " padded ",
    "tab\tnew\nline\r", "\u00e9t\u00e9 \u6f22\u5b57 \U0001f600", "\\\"", "'single'", "}{,\"",
]  # fmt: skip
FLOATS = [1e-300, 1e300, -0.0, 5e-324, 0.1 + 0.2, 1e-7, 1.7976931348623157e308, -2.5, 0.0, 3.0]


def _drift(column: str, value: float | None, **kw: Any) -> DriftResult:
    base = DriftResult(column, None, "numeric", "psi", value, 0.2, None, 5000, 800, "ok")
    return replace(base, **kw)


def _bits(x: float | None, engine: Engine) -> str | None:
    """The exact float (-0.0 and 0.0 differ, as do neighbouring floats); SQLite, before and
    after columnar upserts, stores an integral REAL as an integer: -0.0 reads back as 0.0."""
    if x is None:
        return None
    return (abs(x) if x == 0 and engine.dialect.name == "sqlite" else x).hex()


def _drift_rows(engine: Engine) -> list[DriftResultRow]:
    with transaction(engine) as s:
        order = (DriftResultRow.window_start, DriftResultRow.column, DriftResultRow.slice_key)
        return list(s.scalars(select(DriftResultRow).order_by(*order)).all())


def test_texts_and_floats_round_trip_exactly(engine: Engine) -> None:
    results = [
        _drift(text, value, slice={"region": text}, method=text[:50], threshold_by=text[:20],
               p_value=-value, threshold=value)
        for text, value in zip(TEXTS, [*FLOATS, 1.0, 2.0, 4.0], strict=True)
    ]  # fmt: skip
    results.append(_drift("none", None, threshold_by=None, n_reference=2**31 - 1, n_current=0))
    assert store_drift_results(engine, "m\"o'd,el", "v{1}", WINDOW, results) == len(results)
    rows = {(r.column, r.slice_key): r for r in _drift_rows(engine)}
    assert len(rows) == len(results)
    for res in results:
        row = rows[(res.column, slice_key_of(res.slice))]
        assert (row.method, row.threshold_by, row.model, row.version) == (
            res.method, res.threshold_by, "m\"o'd,el", "v{1}"
        )  # fmt: skip
        stored = [row.value, row.p_value, row.threshold]
        computed = [res.value, res.p_value, res.threshold]
        assert [_bits(x, engine) for x in stored] == [_bits(x, engine) for x in computed]
        assert (row.n_reference, row.n_current) == (res.n_reference, res.n_current)
    assert rows[("none", "")].threshold_by is None  # NULL, where the text "NULL" stays text
    assert rows[("NULL", '{"region":"NULL"}')].threshold_by == "NULL"


def test_random_texts_round_trip(engine: Engine) -> None:
    # Any character but NUL (which PostgreSQL text cannot hold, whatever the path), mostly the
    # ones an array literal treats specially, in slice values up to the key's 500 characters.
    rng = random.Random(14)
    special = ' "\\{},\t\n\r\x0bNULnul'

    def text(n: int) -> str:
        return "".join(rng.choice(special) if rng.random() < 0.7 else chr(rng.randrange(1, 0xD800))
                       for _ in range(n))  # fmt: skip

    texts = sorted({text(rng.randrange(0, 40)) for _ in range(300)})
    results = [_drift(t[:200], 0.5, slice={"s": t}) for t in texts]
    store_drift_results(engine, "m", "1", WINDOW, results)
    got = sorted((r.column, r.slice_key) for r in _drift_rows(engine))
    assert got == sorted((r.column, slice_key_of(r.slice)) for r in results)


def test_non_finite_values_are_stored_as_before(engine: Engine) -> None:
    # PostgreSQL stored NaN and inf as NULL through its JSON document (orjson writes null) and
    # still does; SQLite binds the floats themselves (its NaN is NULL, its inf is inf).
    pg = engine.dialect.name == "postgresql"
    values = [math.nan, math.inf, -math.inf]
    results = [_drift(f"c{i}", v, p_value=v) for i, v in enumerate(values)]
    store_drift_results(engine, "m", "1", WINDOW, results)
    got = [(r.value, r.p_value) for r in _drift_rows(engine)]
    expected = [None, None, None] if pg else [None, math.inf, -math.inf]
    assert got == [(e, e) for e in expected]


def test_a_second_write_replaces_and_empty_batches_write_nothing(engine: Engine) -> None:
    second = (WINDOW[1], WINDOW[1] + timedelta(hours=1))
    assert store_drift_windows(engine, "m", "1", []) == 0
    assert store_drift_windows(engine, "m", "1", [(WINDOW, []), (second, [])]) == 0
    assert _drift_rows(engine) == []
    one = [_drift("amount", 0.5)]
    assert store_drift_windows(engine, "m", "1", [(WINDOW, []), (second, one)]) == 1
    again = [_drift("amount", 0.25, status="drift"), _drift("age", None)]
    assert store_drift_windows(engine, "m", "1", [(second, again)]) == 2
    got = [(r.window_start, r.column, r.value, r.status) for r in _drift_rows(engine)]
    assert got == [(second[0], "age", None, "ok"), (second[0], "amount", 0.25, "drift")]


def test_window_bounds_in_any_offset_are_stored_as_the_same_instant(engine: Engine) -> None:
    india = timezone(timedelta(hours=5, minutes=30))
    start = datetime(2026, 11, 30, 15, 30, 0, 123456, tzinfo=india)
    window = (start, start + timedelta(minutes=7, microseconds=1))
    at = datetime(2026, 12, 1, 0, 0, 0, 999999, tzinfo=UTC)
    res = OutcomeResult("f1", {"tier": "a,b"}, 0.5, 0.4, 0.6, None, -0.0, 40, "ok")
    assert store_outcome_windows(engine, "m", "1", [(window, [res])], computed_at=at) == 1
    with transaction(engine) as s:
        row = s.scalars(select(OutcomeResultRow)).one()
        got = (row.window_start, row.window_end, row.computed_at, row.slice_key)
        assert got == (*window, at, '{"tier":"a,b"}')
        assert row.window_start.utcoffset() == timedelta(0) and _bits(
            row.tolerance, engine
        ) == _bits(-0.0, engine)
        assert (row.metric, row.value, row.ci_low, row.baseline_value, row.n) == (
            "f1", 0.5, 0.4, None, 40
        )  # fmt: skip


def test_period_results_are_stored_and_replaced(engine: Engine) -> None:
    day = (START, START + timedelta(days=1))
    results = [_drift(t, 0.1, slice={"k": t}) for t in TEXTS[:4]]
    with transaction(engine) as s:
        assert store_period_results(s, "drift", ("m", "1", "day"), day, results) == 4
    with transaction(engine) as s:
        assert store_period_results(s, "drift", ("m", "1", "day"), day, results[:1]) == 1
        assert store_period_results(s, "drift", ("m", "1", "day"), day, []) == 0
    with transaction(engine) as s:
        rows = s.scalars(select(DriftPeriodResultRow)).all()
        assert sorted((r.column, r.slice_key, r.period, r.period_end) for r in rows) == sorted(
            (r.column, slice_key_of(r.slice), "day", day[1]) for r in results
        )


def test_upsert_rows_writes_day_rows_with_bytes(engine: Engine) -> None:
    day: dict[str, Any] = {"model": "m", "version": "1", "day_start": START}
    payloads = [b"", b'\x00\\"{,}NULL', bytes(range(256))]
    rows = [
        {"slice_key": t, "column": "c", "payload": p} for t, p in zip(TEXTS, payloads, strict=False)
    ]
    counts = [{"slice_key": "", "events": 2**40}, {"slice_key": "NULL", "events": 0}]
    profile: Any = DayProfile.__table__
    count: Any = DayCount.__table__
    key = ("model", "version", "day_start", "slice_key")
    with transaction(engine) as s:
        assert upsert_rows(s, profile, (*key, "column"), rows, {**day, "updated_at": START}) == 3
        assert upsert_rows(s, count, key, [day | c | {"updated_at": START} for c in counts]) == 2
        assert upsert_rows(s, count, key, []) == 0
    later = [{**counts[0], "events": 7}]
    with transaction(engine) as s:
        upsert_rows(s, count, key, later, {**day, "updated_at": WINDOW[1]})
    with transaction(engine) as s:
        got = {r.slice_key: r.payload for r in s.scalars(select(DayProfile))}
        assert got == {r["slice_key"]: r["payload"] for r in rows}
        events = sorted((r.slice_key, r.events, r.updated_at) for r in s.scalars(select(DayCount)))
        assert events == [("", 7, WINDOW[1]), ("NULL", 0, START)]


def test_columns_equal_the_rows_of_result_rows() -> None:
    # Slices shared by object (as the detectors share them), equal but distinct, unhashable
    # values, overall: the columns hold exactly what `result_rows` would have stored.
    shared = {"region": "eu"}
    odd: Any = {"tier": ["a"], "region": "eu"}
    drift = [
        _drift("a", 0.1, slice=shared), _drift("b", None, slice=shared),
        _drift("a", 0.2, slice={"region": "eu"}), _drift("c", 0.3, slice=odd), _drift("d", 0.4),
    ]  # fmt: skip
    outcome = [OutcomeResult("f1", shared, 0.5, 0.4, 0.6, None, None, 40, "ok")]
    cases: list[tuple[Any, Any]] = [
        (DriftResultRow, drift), (DriftPeriodResultRow, drift), (OutcomeResultRow, outcome)
    ]  # fmt: skip
    for row_type, results in cases:
        table: Any = row_type.__table__
        rows = result_rows(results, table)
        columns = result_columns(results, table)
        assert [
            dict(zip(columns, values, strict=True))
            for values in zip(*columns.values(), strict=True)
        ] == rows
    assert result_columns([], DriftResultRow.__table__) == {}  # type: ignore[arg-type]


def test_random_floats_and_numpy_numbers_round_trip(engine: Engine) -> None:
    # Any finite double (random bit patterns: subnormals, huge exponents) reads back bit for bit;
    # numpy scalars, as detectors return them, are stored as their values (PostgreSQL: orjson
    # writes them; SQLite binds Python numbers only, as before, so numpy ints stay out of it).
    rng = random.Random(14)
    doubles = [struct.unpack("<d", rng.randbytes(8))[0] for _ in range(2000)]
    finite = [x for x in doubles if math.isfinite(x)][:500]
    results = [_drift(f"c{i}", x, p_value=x / 3) for i, x in enumerate(finite)]
    pg = engine.dialect.name == "postgresql"
    numpy_n: Any = np.int64(7) if pg else 7
    results.append(_drift("np", np.float64(0.1), p_value=np.float32(0.5), n_current=numpy_n))
    store_drift_results(engine, "m", "1", WINDOW, results)
    rows = {r.column: r for r in _drift_rows(engine)}
    for res in results[:-1]:
        got = [_bits(rows[res.column].value, engine), _bits(rows[res.column].p_value, engine)]
        assert got == [_bits(res.value, engine), _bits(res.p_value, engine)]
    assert (rows["np"].value, rows["np"].p_value, rows["np"].n_current) == (0.1, 0.5, 7)


def test_the_store_path_builds_no_row_dicts(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The burst's cost: stores go through columns, never through `result_rows`' dict per row.
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("result_rows called on the store path")

    monkeypatch.setattr(results_module, "result_rows", refuse)
    outcome = OutcomeResult("f1", {"r": "a"}, 0.5, 0.4, 0.6, None, None, 40, "ok")
    assert store_drift_windows(engine, "m", "1", [(WINDOW, [_drift("a", 0.1)])]) == 1
    assert store_outcome_windows(engine, "m", "1", [(WINDOW, [outcome])]) == 1
    with transaction(engine) as s:
        day = (START, START + timedelta(days=1))
        assert store_period_results(s, "outcome", ("m", "1", "day"), day, [outcome]) == 1
