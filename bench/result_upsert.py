"""The drift-result upsert of a burst on PostgreSQL, alone: columnar arrays against JSON rows.

Builds `--rows` (default 46,400: the 9-day burst's drift results) DriftResults over hourly
windows (20 columns x 10 `region` slices + overall x 2 methods: ~420 per window, values from a
seeded generator, a few None), stores them once, VACUUMs, then upserts the same windows again
(every row an UPDATE, HOT on the fillfactor-50 table) `--repeat` times per path, alternating:

- `columnar`: `monitor.results.store.store_drift_windows` (one array literal per column, unnested);
- `json`: the previous path, kept here as the reference: `result_rows` dicts sent as one JSON
  array of objects through `json_to_recordset` (monitor/results/store.py before issue 14's columnar
  upserts).

Each run reports wall seconds, client CPU (`time.process_time()`), server CPU (the backends'
utime+stime from /proc, as bench/soak.py's `server_cpu_s`) and their sum per result; VACUUM
between runs (not timed). The stored rows are checked identical (md5) after each path.

Then the same for `--day-rows` (default 2,000) `day_counts` rows:
`monitor.results.store.upsert_rows` (one array per column) against the `executemany` of
`upsert_statement` that monitor/evaluation/periods.py runs today.
(`day_profiles`, with its bytea payload, is an executemany in both: arrays of 1 KB
payloads cost the server twice as much, measured while building `upsert_rows`.)

Usage: PYTHONPATH=. python bench/result_upsert.py [--rows 46400] [--repeat 3] [--day-rows 2000]
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sqlalchemy import Table, TextClause, bindparam, text  # noqa: E402
from sqlalchemy.dialects import postgresql  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402

from bench.soak import server_cpu_s  # noqa: E402
from migrations import upgrade  # noqa: E402
from monitor.detectors import DriftResult  # noqa: E402
from monitor.results.store import (  # noqa: E402
    result_rows,
    store_drift_windows,
    upsert_rows,
    upsert_statement,
)
from monitor.storage import DayCount, DriftResultRow, make_engine, transaction  # noqa: E402
from tests.services.postgres import PostgresServer  # noqa: E402

START = datetime(2026, 11, 1, tzinfo=UTC)
Windows = list[tuple[tuple[datetime, datetime], list[DriftResult]]]
KEY = ("model", "version", "window_start", "slice_key", "column", "method")


def burst(rows: int, seed: int = 14) -> Windows:
    """`rows` drift results over hourly windows, ~420 per window."""
    rng = random.Random(seed)
    slices: list[dict[str, str] | None] = [None, *({"region": f"r{i}"} for i in range(10))]
    per_window = [
        (f"f{c}", s, m) for c in range(20) for s in slices for m in ("psi", "wasserstein")
    ]
    windows: Windows = []
    for w in range(-(-rows // len(per_window))):
        start = START + timedelta(hours=w)
        done = [_result(rng, c, s, m) for c, s, m in per_window[: rows - w * len(per_window)]]
        windows.append(((start, start + timedelta(hours=1)), done))
    return windows


def _result(rng: random.Random, column: str, slice_: Any, method: str) -> DriftResult:
    value = None if rng.random() < 0.05 else rng.random() / 3
    status: Any = "insufficient_data" if value is None else ("drift" if value > 0.2 else "ok")
    p = None if value is None else rng.random()
    n = rng.randrange(300, 500)
    return DriftResult(column, slice_, "numeric", method, value, 0.2, p, 50_000, n, status,
                       "reference")  # fmt: skip


@functools.cache
def _recordset_upsert(
    table: Table, columns: tuple[str, ...], shared: tuple[str, ...]
) -> TextClause:
    """The previous PostgreSQL path's statement (one JSON array of row objects)."""
    pg = postgresql.dialect()  # type: ignore[no-untyped-call]
    q = pg.identifier_preparer.quote
    names = ", ".join(q(c) for c in (*columns, *shared))
    typed = ", ".join(f"{q(c)} {table.c[c].type.compile(dialect=pg)}" for c in columns)
    values = ", ".join([*(q(c) for c in columns), *(f":shared_{c}" for c in shared)])
    updates = ", ".join(f"{q(c)} = excluded.{q(c)}" for c in (*columns, *shared) if c not in KEY)
    stmt = text(
        f"INSERT INTO {q(table.name)} ({names}) "
        f"SELECT {values} FROM json_to_recordset(CAST(:rows AS json)) AS x({typed}) "
        f"ON CONFLICT ({', '.join(q(c) for c in KEY)}) DO UPDATE SET {updates}"
    )
    return stmt.bindparams(*(bindparam(f"shared_{c}", type_=table.c[c].type) for c in shared))


def store_json(engine: Engine, windows: Windows, at: datetime) -> int:
    """The previous path: dict rows, one JSON document."""
    table: Table = DriftResultRow.__table__  # type: ignore[assignment]
    rows: list[dict[str, Any]] = []
    memo: dict[Any, str] = {}
    for (start, end), results in windows:
        for row in result_rows(results, table, memo):
            row["window_start"], row["window_end"] = start, end
            rows.append(row)
    shared = {"model": "fraud", "version": "3", "computed_at": at}
    stmt = _recordset_upsert(table, tuple(rows[0]), tuple(shared))
    option = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
    with transaction(engine) as s:
        s.execute(stmt, {"rows": orjson.dumps(rows, option=option).decode(),
                         **{f"shared_{c}": v for c, v in shared.items()}})  # fmt: skip
    return len(rows)


def store_columnar(engine: Engine, windows: Windows, at: datetime) -> int:
    return store_drift_windows(engine, "fraud", "3", windows, computed_at=at)


DAY_KEY = ("model", "version", "day_start", "slice_key")


def day_rows(count: int) -> list[dict[str, Any]]:
    rng = random.Random(14)
    return [
        {"model": "fraud", "version": "3", "day_start": START, "slice_key": f'{{"region":"r{i}"}}',
         "events": rng.randrange(10**6), "updated_at": START}
        for i in range(count)
    ]  # fmt: skip


def days_executemany(engine: Engine, rows: list[dict[str, Any]], at: datetime) -> int:
    table: Any = DayCount.__table__
    with transaction(engine) as s:
        s.execute(upsert_statement("postgresql", table, DAY_KEY), rows)
    return len(rows)


def days_columnar(engine: Engine, rows: list[dict[str, Any]], at: datetime) -> int:
    with transaction(engine) as s:
        return upsert_rows(s, DayCount.__table__, DAY_KEY, rows)  # type: ignore[arg-type]


def checksum(engine: Engine) -> str:
    with engine.connect() as c:
        return str(c.execute(text(
            "SELECT md5(string_agg(concat_ws('|', window_start, window_end, slice_key, \"column\","
            " method, value::text, threshold, threshold_by, p_value::text, n_reference,"
            " n_current, status, computed_at), ',' ORDER BY window_start, slice_key,"
            " \"column\", method)) FROM drift_results"
        )).scalar_one())  # fmt: skip


def vacuum(engine: Engine) -> None:
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.execute(text("VACUUM ANALYZE drift_results"))
        c.execute(text("VACUUM ANALYZE day_counts"))


def run(
    server: PostgresServer, engine: Engine, path: Any, windows: Any, at: datetime
) -> dict[str, float]:
    vacuum(engine)
    client, srv, wall = time.process_time(), server_cpu_s(server), time.perf_counter()
    count = path(engine, windows, at)
    wall = time.perf_counter() - wall
    client, srv = time.process_time() - client, server_cpu_s(server) - srv
    return {"wall_s": wall, "client_cpu_s": client, "server_cpu_s": srv,
            "ms_cpu_per_result": (client + srv) * 1000 / count}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=46_400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--day-rows", type=int, default=2_000)
    args = parser.parse_args()
    windows = burst(args.rows)
    server = PostgresServer()
    server.start()
    try:
        engine = make_engine(server.create_database())
        upgrade(engine)
        at = datetime(2026, 12, 2, tzinfo=UTC)
        store_columnar(engine, windows, at)
        print(f"load average {os.getloadavg()}; {args.rows} rows in {len(windows)} windows")
        paths: dict[str, Any] = {"columnar": store_columnar, "json": store_json}
        same = True
        for i in range(args.repeat):
            sums = set()
            for name, path in paths.items() if i % 2 == 0 else reversed(paths.items()):
                got = run(server, engine, path, windows, at + timedelta(minutes=i))
                sums.add(checksum(engine))
                print(name, {k: round(v, 4) for k, v in got.items()}, os.getloadavg()[0])
            same = same and len(sums) == 1
        print("same rows after each path:", same)
        days = day_rows(args.day_rows)
        paths = {"day_counts columnar": days_columnar, "day_counts executemany": days_executemany}
        for i in range(args.repeat):
            for name, path in paths.items() if i % 2 == 0 else reversed(paths.items()):
                got = run(server, engine, path, days, at)
                print(name, {k: round(v, 4) for k, v in got.items()}, os.getloadavg()[0])
        engine.dispose()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
