"""Panel SQL on PostgreSQL: the drift dashboard's queries through the mw_drift view vs the same
queries written directly against drift_results (the peer: no view, slice as stored JSON).

30 days of hourly windows, 30 columns, overall + 2 slices (64,800 drift rows), stored through
`monitor.results.store.store_drift_results`. A 7-day range at a 1h interval, as the dashboard opens.

    PYTHONPATH=. /work/venv/bin/python bench/dashboards_panels.py
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from dashboards._render import build_dashboards
from migrations import upgrade
from monitor.detectors import DriftResult
from monitor.results.store import store_drift_results
from monitor.storage import make_engine
from tests.dashboards.grafana_sql import GrafanaContext
from tests.services.postgres import PostgresServer

DAYS, COLUMNS, REPEAT = 30, 30, 20
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TABLE_SCORE = """SELECT $__timeGroupAlias(window_end, $__interval), "column" AS metric,
  max(value) AS value
FROM drift_results
WHERE $__timeFilter(window_end) AND model = '$model' AND version = '$version'
  AND slice_key = '{"region":"eu"}'
GROUP BY 1, 2 ORDER BY 1"""


def seed(engine: object) -> None:
    for hour in range(DAYS * 24):
        window = (T0 + timedelta(hours=hour), T0 + timedelta(hours=hour + 1))
        rows = [
            DriftResult(f"c{c}", sl, "numeric", "psi", 0.001 * (hour % 300), 0.2, None, 5000, 800,
                        "ok")
            for c in range(COLUMNS)
            for sl in (None, {"region": "eu"}, {"region": "us"})
        ]  # fmt: skip
        store_drift_results(engine, "fraud", "1", window, rows)  # type: ignore[arg-type]


def timed_ms(engine: object, sql: str) -> tuple[float, int]:
    best, n = float("inf"), 0
    for _ in range(REPEAT):
        start = time.perf_counter()
        with engine.connect() as conn:  # type: ignore[attr-defined]
            n = len(conn.execute(text(sql.replace(":", r"\:"))).fetchall())
        best = min(best, time.perf_counter() - start)
    return best * 1e3, n


def main() -> None:
    server = PostgresServer()
    server.start()
    try:
        engine = make_engine(server.create_database())
        upgrade(engine)
        start = time.perf_counter()
        seed(engine)
        print(f"seeded {DAYS * 24 * COLUMNS * 3} rows in {time.perf_counter() - start:.1f} s")
        ctx = GrafanaContext(
            T0 + timedelta(days=DAYS - 7), T0 + timedelta(days=DAYS), 3600,
            {"model": "fraud", "version": "1", "slice": "region=eu"},
        )  # fmt: skip
        board = build_dashboards()["modelwatch-drift"]
        for panel in board["panels"]:
            ms, n = timed_ms(engine, ctx.expand(panel["targets"][0]["rawSql"]))
            print(f"view  {panel['title']:<24} {ms:7.1f} ms  {n} rows")
        ms, n = timed_ms(engine, ctx.expand(TABLE_SCORE))
        print(f"table {'Drift score by column':<24} {ms:7.1f} ms  {n} rows (peer)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
