"""Time partitions on PostgreSQL: the migration keeps every row, hot queries prune, retention
drops whole partitions, a row for a time without a partition is kept and later gets one."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.engine import Connection, Engine

from migrations import downgrade, upgrade
from monitor.app.daemon._retention import maintain_partitions, purge
from monitor.storage import (
    PARTITIONED,
    RECENT,
    DriftResultRow,
    WindowProfile,
    create_partition,
    is_partitioned,
    make_engine,
    newest,
    newest_query,
    period_start,
    transaction,
)
from tests.services.postgres import PostgresServer

BEFORE = "0030_releases_views"
OLD = datetime(2024, 1, 1, tzinfo=UTC)
NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


def _drift(start: datetime, computed_at: datetime, column: str = "c") -> DriftResultRow:
    return DriftResultRow(
        model="m", version="1", window_start=start, window_end=start + timedelta(hours=1),
        slice_key="", computed_at=computed_at, column=column, method="psi", value=0.1,
        threshold=0.2, n_reference=10, n_current=10, status="ok",
    )  # fmt: skip


# Rows in the partitioned tables before the migration, over several days and months: 72 each,
# an hour (`H`) or a day (`D`) apart.
_PLAIN = (
    'window_profiles (model, version, window_start, window_end, slice_key, "column", kind, n, '
    "payload, updated_at) SELECT 'm', '1', H, H + interval '1 hour', '', 'c', 'numeric', 1, 'x', "
    "now()",
    "drift_results (model, version, window_start, window_end, slice_key, computed_at, "
    "\"column\", method, value, threshold, n_reference, n_current, status) SELECT 'm', '1', H, "
    "H + interval '1 hour', '', now(), 'c', 'psi', 0.1, 0.2, 10, 10, 'ok'",
    "outcome_results (model, version, window_start, window_end, slice_key, computed_at, metric, "
    "value, n, status) SELECT 'm', '1', D, D + interval '1 day', '', now(), 'accuracy', 0.9, 10, "
    "'ok'",
    "labeled_predictions (model, request_id, version, ts, prediction, label, slice_values, "
    "joined_at) SELECT 'm', 'r' || g, '1', H, '1', '0', '{}', now()",
    'dead_letters (source, key, "offset", reason, detail, payload, payload_size, truncated, '
    "created_at) SELECT 's', 'k', g, 'decode', 'd', 'x', 1, false, D",
)


def _fill_plain(conn: Connection) -> None:
    for insert in _PLAIN:
        sql = insert.replace("H", ":t + g * interval '1 hour'").replace(
            "D", ":t + g * interval '1 day'"
        )
        conn.execute(text(f"INSERT INTO {sql} FROM generate_series(0, 71) g"), {"t": OLD})


def _counts(conn: Connection) -> dict[str, int]:
    return {t: int(conn.scalar(text(f'SELECT count(*) FROM "{t}"')) or 0) for t in PARTITIONED}


def test_the_migration_keeps_every_row_up_and_down(postgres: PostgresServer) -> None:
    engine = make_engine(postgres.create_database())
    upgrade(engine, BEFORE)
    with engine.begin() as conn:
        _fill_plain(conn)
        before = _counts(conn)
    upgrade(engine)
    with engine.connect() as conn:
        assert _counts(conn) == before
        assert all(is_partitioned(conn, t) for t in PARTITIONED)
        # Rows of 2024 sit in their own partitions, not in the DEFAULT one.
        assert conn.scalar(text("SELECT count(*) FROM drift_results_default")) == 0
        assert conn.scalar(text("SELECT count(*) FROM drift_results_p20240102")) == 24
        assert conn.scalar(text("SELECT count(*) FROM dead_letters_p202402")) == 29
        assert conn.scalar(text("SELECT count(*) FROM mw_drift")) == before["drift_results"]
    downgrade(engine, BEFORE)
    with engine.connect() as conn:
        assert _counts(conn) == before
        assert not any(is_partitioned(conn, t) for t in PARTITIONED)
        assert conn.scalar(text("SELECT count(*) FROM mw_dead_letters")) == before["dead_letters"]
    engine.dispose()


@pytest.fixture(scope="module")
def pg(postgres: PostgresServer) -> Iterator[Engine]:
    engine = make_engine(postgres.create_database())
    upgrade(engine)
    yield engine
    engine.dispose()


def _scanned(conn: Connection, stmt: Any) -> set[str]:
    """The relations a statement's plan reads (PostgreSQL's own EXPLAIN)."""
    compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    plan = conn.exec_driver_sql(f"EXPLAIN (FORMAT JSON) {compiled}", compiled.params).scalar()
    found: set[str] = set()

    def walk(node: dict[str, Any]) -> None:
        if "Relation Name" in node:
            found.add(node["Relation Name"])
        for child in node.get("Plans", ()):
            walk(child)

    walk(plan[0]["Plan"])
    return found


def test_hot_queries_read_only_their_partitions(pg: Engine) -> None:
    day = NOW.replace(hour=0)
    with pg.connect() as conn:
        # A tick's profiles of one window (monitor.evaluation.windows): one daily partition.
        window = select(WindowProfile.payload).where(
            WindowProfile.model == "m", WindowProfile.version == "1",
            WindowProfile.window_start == day,
        )  # fmt: skip
        assert _scanned(conn, window) == {f"window_profiles_p{day:%Y%m%d}"}
        # A burst's windows (monitor.evaluation._drift_batch) and a day's merge (periods).
        later = day + timedelta(days=2, hours=5)
        burst = select(WindowProfile.payload).where(
            WindowProfile.model == "m", WindowProfile.window_start.in_([day, later])
        )
        assert _scanned(conn, burst) == {f"window_profiles_p{t:%Y%m%d}" for t in (day, later)}
        merge = select(WindowProfile.payload).where(
            WindowProfile.window_start >= day, WindowProfile.window_start < day + timedelta(1)
        )
        assert _scanned(conn, merge) == {f"window_profiles_p{day:%Y%m%d}"}
        # The results API's "since" read (GET /v1/models/{m}/drift?since=): from that day on.
        since = select(DriftResultRow).where(
            DriftResultRow.model == "m", DriftResultRow.window_start >= day + timedelta(days=5)
        )
        expected = {f"drift_results_p{day + timedelta(days=d):%Y%m%d}" for d in (5, 6, 7)}
        # The DEFAULT partition may hold any time outside the created ones, after them too.
        assert _scanned(conn, since) == expected | {"drift_results_default"}


def test_retention_drops_whole_partitions_and_keeps_backfills(pg: Engine) -> None:
    old, backfill = datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 1, 2, tzinfo=UTC)
    with transaction(pg) as s:
        s.add_all([_drift(old, old), _drift(old, old, "d"), _drift(backfill, NOW)])
    maintain_partitions(pg, NOW)
    deleted = purge(pg, NOW - timedelta(days=30))
    with pg.connect() as conn:
        tables = set(conn.scalars(text("SELECT tablename FROM pg_tables")))
        assert "drift_results_p20250101" not in tables
        assert "drift_results_p20250102" in tables  # written within the period: kept
        assert conn.scalar(text("SELECT count(*) FROM drift_results_p20250102")) == 1
    assert deleted["drift_results"] == 2


def test_a_row_for_a_time_without_partition_is_kept_then_gets_one(pg: Engine) -> None:
    long_ago = datetime(2019, 6, 5, 13, tzinfo=UTC)
    with transaction(pg) as s:
        s.add(_drift(long_ago, NOW, "late"))
    with pg.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM drift_results_default")) == 1
    assert maintain_partitions(pg, NOW)["drift_results"] == 1
    with pg.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM drift_results_default")) == 0
        assert conn.scalar(text("SELECT count(*) FROM drift_results_p20190605")) == 1
    assert maintain_partitions(pg, NOW) == {}  # nothing left to create


def test_the_newest_window_reads_recent_partitions_and_falls_back_to_all(pg: Engine) -> None:
    """The results API's newest window (GET /v1/models/{m}/drift without a window): the recent
    and coming partitions only; all of them only when the model has no recent window."""
    spec, old = PARTITIONED["drift_results"], NOW - timedelta(days=20)
    with pg.begin() as conn:
        create_partition(conn, spec, period_start("day", old))
    column, conds = DriftResultRow.window_start, [DriftResultRow.model == "newest"]
    with pg.connect() as conn:
        recent = _scanned(conn, newest_query(column, conds, NOW - RECENT))
        first = f"drift_results_p{period_start('day', NOW - RECENT):%Y%m%d}"
        assert recent and all(n == "drift_results_default" or n >= first for n in recent), recent
        assert f"drift_results_p{old:%Y%m%d}" in _scanned(conn, newest_query(column, conds, None))
    with transaction(pg) as s:
        s.add(_of("newest", _drift(old, NOW)))
        s.flush()
        assert newest(s, column, conds, NOW) == old  # nothing recent: every partition
        s.add(_of("newest", _drift(NOW - timedelta(hours=1), NOW)))
        s.flush()
        assert newest(s, column, conds, NOW) == NOW - timedelta(hours=1)


def _of(model: str, row: DriftResultRow) -> DriftResultRow:
    row.model = model
    return row
