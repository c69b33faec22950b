"""On PostgreSQL with a long history, the evaluate tick's queries use indexes, not table scans.

The history is seeded directly (tens of thousands of rows per big table, three models, then
ANALYZE, so the planner judges realistic sizes); every statement the tick runs is captured and
EXPLAINed with its own parameters. A sequential scan of a big table would make the tick's cost
grow with the history kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import event as sa_event
from sqlalchemy import text
from sqlalchemy.engine import Engine

from collectors import Ingestor, RawRecord
from dashboards.metrics import ModelwatchMetrics
from migrations import upgrade
from monitor.app.daemon import signals
from monitor.app.daemon.signals import LatestRows, latest_rows, latest_rows_of
from monitor.app.daemon.wiring import Monitoring
from monitor.baselines.store import save_baseline
from monitor.config import parse_config
from monitor.profiles import profile_frame, specs_for
from monitor.storage import DriftResultRow, make_engine
from tests.collectors.conftest import T0, event
from tests.services.postgres import PostgresServer

BIG = (
    "window_profiles", "window_counts", "drift_results", "outcome_results",
    "labeled_predictions", "outcome_summaries", "window_changes",
    "source_positions", "dead_letters", "drift_period_results", "outcome_period_results",
)  # fmt: skip
WINDOWS = 2000  # per model: about 83 days of hourly windows
# A tick reads at most a few windows' rows of a big table per statement, whatever the history.
MAX_ROWS = 200

SEED = """
INSERT INTO window_profiles
SELECT m, '1', WS, SK, 'c' || c, WE,
       'numeric', 1, 'x'::bytea, now()
FROM unnest(ARRAY['m0', 'm1', 'm2']) m, generate_series(0, :n - 1) w,
     generate_series(0, 1) s, generate_series(0, 4) c;
INSERT INTO window_counts
SELECT m, '1', WS, SK, WE, 5, now()
FROM unnest(ARRAY['m0', 'm1', 'm2']) m, generate_series(0, :n - 1) w, generate_series(0, 4) s;
INSERT INTO drift_results (model, version, window_start, window_end, slice_key, computed_at,
    "column", method, value, threshold, p_value, n_reference, n_current, status)
SELECT m, '1', WS, WE, SK, now(),
       'c' || c, 'psi', 0.0, 0.1, NULL, 1, 1, 'ok'
FROM unnest(ARRAY['m0', 'm1', 'm2']) m, generate_series(0, :n - 1) w,
     generate_series(0, 2) s, generate_series(0, 4) c;
INSERT INTO outcome_results (model, version, window_start, window_end, slice_key, computed_at,
    metric, value, ci_low, ci_high, baseline_value, tolerance, n, status)
SELECT m, '1', WS, WE, SK, now(),
       'accuracy', 0.9, 0.8, 1.0, 0.9, 0.05, 100, 'ok'
FROM unnest(ARRAY['m0', 'm1', 'm2']) m, generate_series(0, :n - 1) w, generate_series(0, 2) s;
INSERT INTO outcome_summaries
SELECT m, '1', WS, SK, WE, 1,
       'x'::bytea, now()
FROM unnest(ARRAY['m0', 'm1', 'm2']) m, generate_series(0, :n - 1) w, generate_series(0, 2) s;
INSERT INTO window_changes
SELECT m, k, '1', WS, WE, 3, false, now()
FROM unnest(ARRAY['m0', 'm1', 'm2']) m, unnest(ARRAY['drift', 'outcome']) k,
     generate_series(0, :n - 1) w;
INSERT INTO source_positions
SELECT 'http', 'idem:' || i, 40, 40, NULL, '{}', now()
FROM generate_series(0, 20 * :n - 1) i;
INSERT INTO source_positions
SELECT 'kafka', 't:' || p, 100, CASE WHEN p < 2 THEN 150 ELSE 100 END, NULL, '{}', now()
FROM generate_series(0, 7) p;
INSERT INTO dead_letters (source, key, "offset", reason, detail, payload, payload_size,
    truncated, created_at)
SELECT 'http', 'idem:' || i, 0, 'invalid_json', 'x', 'x'::bytea, 1, false, now()
FROM generate_series(0, 20 * :n - 1) i;
INSERT INTO labeled_predictions
SELECT m, 'old' || i, '1', to_timestamp(:t0 + i * 36), '0.5', '1', '{}', now()
FROM unnest(ARRAY['m0', 'm1', 'm2']) m, generate_series(0, 20 * :n - 1) i;
"""
# Placeholders keep the statements readable: a window's start and end, and a slice key.
SEED = (
    SEED.replace("WS", "to_timestamp(:t0 + w * 3600)")
    .replace("WE", "to_timestamp(:t0 + w * 3600 + 3600)")
    .replace("SK", """'{"region":"r' || s || '"}'""")
)


@pytest.fixture
def history(postgres: PostgresServer) -> Iterator[Engine]:
    engine = make_engine(postgres.create_database())
    upgrade(engine)
    past = T0 - WINDOWS * 3600 - 86400
    with engine.begin() as conn:
        for statement in SEED.split(";"):
            if statement.strip():
                conn.execute(text(statement), {"t0": past, "n": WINDOWS})
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("ANALYZE")
    try:
        yield engine
    finally:
        engine.dispose()


def _config(url: str) -> Any:
    models = [{"name": m, "slices": ["region"]} for m in ("m0", "m1", "m2")]
    return parse_config({"database_url": url, "models": models}, env={})


def _captured(engine: Engine, action: Any) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, params: Any, _ctx: Any, many: bool) -> None:
        seen.append((statement, params[0] if many and params else params))

    sa_event.listen(engine, "before_cursor_execute", capture)
    try:
        action()
    finally:
        sa_event.remove(engine, "before_cursor_execute", capture)
    return [(s, p) for s, p in seen if re.match(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)", s, re.I)]


def _scans(
    engine: Engine, statements: list[tuple[str, Any]], max_rows: int = MAX_ROWS
) -> list[str]:
    """Big-table scans that are sequential, or that read more than `max_rows` rows.

    Each statement runs under EXPLAIN ANALYZE in a transaction that is rolled back, so the row
    counts are what it really read (a max over an index reads one row, not the estimate).
    """
    bad = []
    for statement, params in statements:
        with engine.connect() as conn, conn.begin() as tx:
            plan = conn.exec_driver_sql("EXPLAIN ANALYZE " + statement, params).scalars().all()
            tx.rollback()
        for i, line in enumerate(plan):
            # A time-partitioned table (PostgreSQL) is read through its partitions.
            scan = re.search(rf"(\w[\w ]*Scan)\S* .*?on ({'|'.join(BIG)})(_default|_p\d+)?\b", line)
            if scan is None:
                continue
            rows = re.search(r"actual time=\S+ rows=(\d+) loops=(\d+)", line)
            read = int(rows.group(1)) * int(rows.group(2)) if rows else 0
            # A sequential scan of an empty partition (one created ahead) reads nothing.
            looked = read + _removed(plan[i + 1 : i + 4])
            seq = scan.group(1).startswith("Seq") and (scan.group(3) is None or looked > 0)
            if seq or read > max_rows:
                bad.append(f"{' '.join(statement.split()[:8])}...: {line.strip()}")
    return bad


def _removed(details: list[str]) -> int:
    """The rows a scan's filter removed, from the lines under its node."""
    for line in details:
        if "->" in line:
            break
        found = re.search(r"Rows Removed by Filter: (\d+)", line)
        if found:
            return int(found.group(1))
    return 0


def _ingest_one_window(engine: Engine, config: Any, windows: int = 1) -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "amount": rng.uniform(0, 97, 500),
            "country": rng.choice(["de", "fr", "us"], 500),
            "prediction": rng.uniform(0, 1, 500),
            "region": rng.choice(["eu", "us"], 500),
        }
    )
    cols = ["amount", "country", "prediction"]
    save_baseline(engine, "m0", "1", profile_frame(frame, specs_for(cols, frame), ["region"]))
    ing = Ingestor(engine, "s", "http", config.models, config.collect)
    labels = [
        {"request_id": f"r{i}", "model": "m0", "label": i % 2, "timestamp": T0} for i in range(50)
    ]
    items = [event(i, model="m0") for i in range(50)] + labels
    for w in range(1, windows):  # more windows of the same day, with their labels
        ts = T0 + w * 3600
        items += [event(1000 * w + i, ts=ts + i, model="m0") for i in range(20)]
        items += [
            {**x, "request_id": f"r{1000 * w + i}", "timestamp": ts}
            for i, x in enumerate(labels[:20])
        ]
    ing.ingest([RawRecord("s", i, i + 1, orjson.dumps(x)) for i, x in enumerate(items)])


def test_idle_and_new_window_ticks_use_indexes(history: Engine) -> None:
    config = _config(str(history.url))
    monitoring = Monitoring(history, config, ModelwatchMetrics(CollectorRegistry(), config.models))
    now = datetime.now(UTC)
    first = _captured(history, lambda: monitoring(now=now))
    # A process's first metrics publish counts the retained dead letters once; no other scan.
    assert [s for s in _scans(history, first) if "dead_letters" not in s] == []
    idle = _captured(history, lambda: monitoring(now=now))
    assert any("window_changes" in s for s, _ in idle)
    assert any("source_positions" in s for s, _ in idle)  # ingest_lag and the lag gauge
    assert any("dead_letters" in s for s, _ in idle)
    assert _scans(history, idle) == []
    _ingest_one_window(history, config)
    busy: list[Any] = []
    tick = _captured(history, lambda: busy.extend(monitoring(now=now)))
    assert {e.window.model for e in busy} == {"m0"} and len(busy) == 2  # drift + outcomes
    assert any("outcome_summaries" in s for s, _ in tick)
    assert _scans(history, tick) == []


def test_latest_rows_are_the_newest_window_of_each_version(
    history: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = latest_rows(history, DriftResultRow, "m1")
    newest = datetime.fromtimestamp(T0 - 86400 - 3600, UTC)
    assert {(r.version, r.window_start) for r in rows} == {("1", newest)}
    assert len(rows) == 15
    # A second version of m1 whose newest window is older: its own newest rows come too.
    with history.begin() as conn:
        conn.execute(text(SEED.split(";")[2].replace("'1', to_timestamp", "'2', to_timestamp")
                          .replace("unnest(ARRAY['m0', 'm1', 'm2'])", "unnest(ARRAY['m1'])")),
                     {"t0": T0 - 400 * 3600, "n": 3})  # fmt: skip
    # The tick's fleet-wide read (one statement for all models) gives each model's rows.
    models = ["m0", "m1", "m2", "absent"]
    fleet: dict[str, list[Any]] = {}
    read = _captured(history, lambda: fleet.update(latest_rows_of(history, DriftResultRow, models)))
    assert len(read) == 1 and _scans(history, read) == []
    for model in models:
        one = {(r.version, r.window_start, r.slice_key, r.column) for r in fleet[model]}
        per = latest_rows(history, DriftResultRow, model)
        assert one == {(r.version, r.window_start, r.slice_key, r.column) for r in per}
    versions = {(r.version, r.window_start) for r in fleet["m1"]}
    assert versions == {("1", newest), ("2", datetime.fromtimestamp(T0 - 398 * 3600, UTC))}
    assert fleet["absent"] == [] and len(fleet["m0"]) == 15 and len(fleet["m1"]) == 30
    # A tick's reader: chunks of models as they are asked for, one statement per chunk, the
    # same rows; a failing fleet-wide read falls back to each model's own read.
    monkeypatch.setattr(signals, "LATEST_CHUNK", 2)
    rows_of = LatestRows(history, models)
    got: dict[str, list[Any]] = {}
    read = _captured(history, lambda: got.update({m: rows_of(DriftResultRow, m) for m in models}))
    assert len(read) == 2 and {m: len(r) for m, r in got.items()} == {
        m: len(r) for m, r in fleet.items()
    }

    def broken(*_args: Any) -> Any:
        raise RuntimeError("database away")

    monkeypatch.setattr(signals, "latest_rows_of", broken)
    rows_of = LatestRows(history, models)
    assert [len(rows_of(DriftResultRow, m)) for m in models] == [15, 30, 15, 0]


def test_a_scan_of_history_is_caught(history: Engine) -> None:
    # The check itself: the query the evaluate job used to run per tick (a GROUP BY over every
    # profile of the model) is reported, so a regression to it could not pass unnoticed.
    old = (
        "SELECT version, window_start, max(updated_at) FROM window_profiles "
        "WHERE model = %(model)s GROUP BY version, window_start"
    )
    assert _scans(history, [(old, {"model": "m1"})]) != []


def test_a_burst_tick_reads_only_the_changed_windows_and_their_periods(history: Engine) -> None:
    # 30 windows of one day change at once: their batch reads (window_start IN ...), batch
    # upserts, change markers and the day's and week's merges use indexes, and each statement
    # reads the rows of the changed windows (or of their day and week), not the history's.
    config = _config(str(history.url))
    monitoring = Monitoring(history, config, ModelwatchMetrics(CollectorRegistry(), config.models))
    now = datetime.now(UTC)
    monitoring(now=now)
    _ingest_one_window(history, config, windows=30)
    busy: list[Any] = []
    tick = _captured(history, lambda: busy.extend(monitoring(now=now)))
    assert len({e.window.start for e in busy if e.drift}) == 30
    assert any("IN (" in s.upper() and "window_profiles" in s for s, _ in tick)  # a batch
    assert any("drift_period_results" in s for s, _ in tick)
    assert any("outcome_period_results" in s for s, _ in tick)
    # 30 windows x (3 slice keys x 3 columns) profiles; a scan of history reads 30,000.
    assert _scans(history, tick, max_rows=30 * 12) == []
