"""Evidence: every panel's SQL, expanded as Grafana would, runs on real PostgreSQL over data
written by the project's own code and returns what its panel type needs."""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from dashboards._render import build_dashboards
from migrations import upgrade
from monitor.storage import make_engine
from tests.dashboards.grafana_sql import GrafanaContext
from tests.dashboards.seed import HOURS, MODEL, VERSION, seed_all
from tests.services.postgres import PostgresServer

BOARDS = build_dashboards()
TARGETS = [
    pytest.param(panel["type"], target["rawSql"], id=f"{uid}/{panel['title']}/{target['refId']}")
    for uid, board in BOARDS.items()
    for panel in board["panels"]
    for target in panel["targets"]
]
VARIABLES = [
    pytest.param(var["query"], id=f"{uid}/${var['name']}")
    for uid, board in BOARDS.items()
    for var in board["templating"]["list"]
    if var["type"] == "query"
]
Rows = tuple[list[str], list[tuple[Any, ...]]]


@pytest.fixture(scope="module")
def seeded(
    postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Engine, GrafanaContext]]:
    engine = make_engine(postgres.create_database())
    upgrade(engine)
    now = datetime.now(UTC)
    t0 = seed_all(engine, tmp_path_factory.mktemp("seed"), now)
    variables = {
        "model": MODEL,
        "version": VERSION,
        "slice": "region=eu",
        "metric": "accuracy",
        "granularity": "1h",
    }
    ctx = GrafanaContext(t0 - timedelta(hours=1), now + timedelta(hours=1), 3600, variables)
    try:
        yield engine, ctx
    finally:
        engine.dispose()


def run(seeded: tuple[Engine, GrafanaContext], sql: str) -> Rows:
    engine, ctx = seeded
    with engine.connect() as conn:
        result = conn.execute(text(ctx.expand(sql).replace(":", r"\:")))
        return list(result.keys()), [tuple(r) for r in result]


def numeric_columns(columns: list[str], rows: list[tuple[Any, ...]]) -> list[str]:
    """Columns (other than time) holding a number in at least one row and nothing else."""
    out = []
    for i, name in enumerate(columns):
        values = [r[i] for r in rows if r[i] is not None]
        if name != "time" and values and all(isinstance(v, numbers.Number) for v in values):
            out.append(name)
    return out


@pytest.mark.parametrize(("kind", "sql"), TARGETS)
def test_panel_query_returns_what_its_panel_needs(
    seeded: tuple[Engine, GrafanaContext], kind: str, sql: str
) -> None:
    columns, rows = run(seeded, sql)
    assert rows, "no rows"
    if kind in ("timeseries", "state-timeline"):
        assert columns[0] == "time"
        # Grafana reads epoch seconds or a native timestamp (ours are timezone-aware).
        times = [r[0] if isinstance(r[0], numbers.Number) else r[0].timestamp() for r in rows]
        assert all(isinstance(r[0], numbers.Number) or r[0].tzinfo is not None for r in rows)
        assert times == sorted(times), "not sorted by time"
        assert numeric_columns(columns, rows), f"no numeric value column in {columns}"
    elif kind == "stat":
        assert numeric_columns(columns, rows), f"no numeric value column in {columns}"
    else:
        assert kind == "table" and columns


@pytest.mark.parametrize("sql", VARIABLES)
def test_variable_query_offers_values(seeded: tuple[Engine, GrafanaContext], sql: str) -> None:
    _, rows = run(seeded, sql)
    assert rows and all(r[0] for r in rows)


def test_metric_choices_offer_estimated_and_outcome_metrics(
    seeded: tuple[Engine, GrafanaContext],
) -> None:
    # The estimated-vs-realized panel needs a metric only estimation writes (a multiclass
    # model's `precision`, here `reconstruction_error`) to be a choice of $metric.
    board = BOARDS["modelwatch-outcomes"]["templating"]["list"]
    sql = next(v["query"] for v in board if v["name"] == "metric")
    choices = [r[0] for r in run(seeded, sql)[1]]
    outcome = [r[0] for r in run(seeded, "SELECT DISTINCT metric FROM mw_outcomes ORDER BY 1")[1]]
    assert "reconstruction_error" in choices and "reconstruction_error" not in outcome
    assert set(outcome) <= set(choices) and choices == sorted(set(choices))


def panel_sql(uid: str, title: str, ref: str = "A") -> str:
    panel = next(p for p in BOARDS[uid]["panels"] if p["title"] == title)
    return str(next(t for t in panel["targets"] if t["refId"] == ref)["rawSql"])


def test_panels_show_the_seeded_facts(seeded: tuple[Engine, GrafanaContext]) -> None:
    # Drift of `amount` in region=eu crosses its threshold (0.2) in the latest window.
    assert run(seeded, panel_sql("modelwatch-drift", "Drifted now"))[1] == [(1,)]
    latest = run(seeded, panel_sql("modelwatch-drift", "Latest window"))[1]
    assert [(r[0], r[-1]) for r in latest] == [("amount", "drift"), ("country", "ok")]
    _, slices = run(seeded, "SELECT DISTINCT slice FROM mw_drift ORDER BY 1")
    assert slices == [("all",), ("region=eu",), ("region=us",)]
    # The confidence band brackets the value; the baseline is the stored one.
    _, band = run(seeded, panel_sql("modelwatch-outcomes", "$metric in $slice vs baseline"))
    assert all(lo < v < hi and base == pytest.approx(0.9) for _, v, lo, hi, base in band)
    # The latest window's table: each verdict with the level it was decided at (degraded first).
    columns, table = run(seeded, panel_sql("modelwatch-outcomes", "Latest window"))
    assert columns[-2:] == ["status", "level"]
    assert [(r[0], r[-2], r[-1]) for r in table] == [
        ("all", "degraded", pytest.approx(0.025 / 3)),
        ("region=eu", "degraded", pytest.approx(0.025 / 2)),
        ("region=us", "degraded", pytest.approx(0.025)),
    ]
    # Gate runs: overall flip rate (not the per-slice criterion), smallest-batch p95 latency.
    _, runs = run(seeded, panel_sql("modelwatch-guards", "Gate runs"))
    assert sorted((r[3], r[4], r[5], r[6], r[7]) for r in runs) == [
        ("fail", "flip_rate[scores]", 0.04, 4.0, 3.5),
        ("pass", None, 0.002, 4.0, 2.5),
        ("pass", None, 0.003, 4.0, 2.6),
    ]
    # The alert went pending, fired and resolved; one notification failed to deliver.
    _, timeline = run(seeded, panel_sql("modelwatch-operations", "Alert timeline"))
    assert [r[2] for r in timeline] == [1, 2, 0]
    _, failed = run(seeded, panel_sql("modelwatch-operations", "Notification delivery failures"))
    assert sum(r[2] for r in failed) == 1
    # Shadow mode: version 3 shadows version 2 on 40 requests and flips every 5th (4 per region).
    _, pairs = run(seeded, panel_sql("modelwatch-releases", "Shadow pairs by slice"))
    assert [(r[0], r[1], r[2], r[3]) for r in pairs] == [
        ("2", "all", 40, pytest.approx(0.2)),
        ("2", "region=eu", 20, pytest.approx(0.2)),
        ("2", "region=us", 20, pytest.approx(0.2)),
    ]
    _, events = run(seeded, panel_sql("modelwatch-operations", "Events ingested"))
    assert sum(r[2] for r in events) == 120 + 80  # the log's, and shadow mode's 40 pairs
    _, dead = run(seeded, panel_sql("modelwatch-operations", "Dead letters"))
    assert sum(r[2] for r in dead) == 2


def test_slo_and_settings_panels_show_the_seeded_facts(
    seeded: tuple[Engine, GrafanaContext],
) -> None:
    def series(title: str, ref: str) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for _, metric, value in run(seeded, panel_sql("modelwatch-operations", title, ref))[1]:
            out.setdefault(metric, []).append(float(value))
        return out

    # Each hour serves 10..29 ms once: p95 and p99 are 28 ms (rank q(n-1) rounded down; 1%
    # sketch error), over the 25 ms bound, in 6 windows.
    latency = series("Latency p95/p99 vs SLO", "A")
    assert sorted(latency) == [f"{VERSION} latency_p95_ms", f"{VERSION} latency_p99_ms"]
    assert all(v == pytest.approx(28, rel=0.01) for vs in latency.values() for v in vs)
    assert len(latency[f"{VERSION} latency_p95_ms"]) == 6
    bounds = series("Latency p95/p99 vs SLO", "B")
    assert {k: set(v) for k, v in bounds.items()} == {
        "SLO latency_p95_ms": {25.0},
        "SLO latency_p99_ms": {40.0},
    }
    errors = series("Error rate vs SLO", "A")[f"{VERSION} error_rate"]
    assert errors == [0.05, 0.0, 0.05, 0.0, 0.05, 0.0]  # 1 errored request of 20, every 2 h
    assert series("Error rate vs SLO", "B") == {"SLO error_rate": [0.01] * 6}
    # $0.70 x 2 replicas per hour over 20 requests an hour: $70 per 1,000.
    cost = series("Cost per 1k predictions", "A")[f"{VERSION} cost_per_1k"]
    assert cost == [pytest.approx(70.0)] * 6
    columns, rows = run(seeded, panel_sql("modelwatch-operations", "SLOs by slice, newest window"))
    newest = [dict(zip(columns, r, strict=True)) for r in rows]
    assert {r["slice"] for r in newest} == {"all", "region=eu", "region=us"}
    assert len({r["time"] for r in newest}) == 1 and newest[0]["status"] == "breach"
    # 10 requests per region an hour, as many as slo.min_events: judged, p95 over 25 ms
    assert {(r["slice"], r["status"]) for r in newest if r["objective"] == "latency_p95_ms"} == {
        ("all", "breach"), ("region=eu", "breach"), ("region=us", "breach"),
    }  # fmt: skip
    columns, rows = run(seeded, panel_sql("modelwatch-guards", "Optimization settings"))
    [row] = [dict(zip(columns, r, strict=True)) for r in rows]
    assert (row["version"], row["precision"], row["runtime"], row["verdict"]) == (
        VERSION, "int8", "ort 1.31 CUDA", "fail",
    )  # fmt: skip
    assert row["batching"] == "max 64, 5 ms" and '"image"' in row["meta"]


@pytest.mark.postgres
@pytest.mark.parametrize(("granularity", "seconds"), [("1d", 86400), ("7d", 7 * 86400)])
def test_granularity_groups_sql_series_by_day_or_week(
    seeded: tuple[Engine, GrafanaContext], granularity: str, seconds: int
) -> None:
    engine, ctx = seeded
    coarse = GrafanaContext(
        ctx.time_from, ctx.time_to, ctx.interval_s, {**ctx.variables, "granularity": granularity}
    )
    for uid, title in [
        ("modelwatch-drift", "Drift score by column"),
        ("modelwatch-outcomes", "$metric in $slice vs baseline"),
    ]:
        sql = coarse.expand(panel_sql(uid, title)).replace(":", r"\:")
        with engine.connect() as conn:
            rows = list(conn.execute(text(sql)))
        assert rows, title
        # One point per period, at the period's start.
        assert all(float(r[0]) % seconds == 0 for r in rows), title


@pytest.mark.postgres
@pytest.mark.parametrize(("granularity", "day_or_week"), [("1d", HOURS), ("7d", 1)])
def test_a_day_or_week_point_is_its_merged_comparison_not_the_worst_window(
    seeded: tuple[Engine, GrafanaContext], granularity: str, day_or_week: int
) -> None:
    # The seeded windows' `amount` drift peaks at 0.25; the stored day's merged comparison is
    # 0.3 and the week's 0.05 (seed.py): each point shows its period's own comparison.
    engine, ctx = seeded
    coarse = GrafanaContext(
        ctx.time_from, ctx.time_to, ctx.interval_s, {**ctx.variables, "granularity": granularity}
    )
    sql = coarse.expand(panel_sql("modelwatch-drift", "Drift score by column"))
    with engine.connect() as conn:
        rows = list(conn.execute(text(sql.replace(":", r"\:"))))
    amount = [float(r[2]) for r in rows if r[1] == "amount psi"]
    assert amount == [pytest.approx(0.05 * day_or_week)]
    band = coarse.expand(panel_sql("modelwatch-outcomes", "$metric in $slice vs baseline"))
    with engine.connect() as conn:
        values = [float(r[1]) for r in conn.execute(text(band.replace(":", r"\:")))]
    assert values == [pytest.approx(0.9 - 0.01 * day_or_week)]


def test_latency_stage_panels_show_the_seeded_facts(seeded: tuple[Engine, GrafanaContext]) -> None:
    # Each hour: total 10..29 ms, model 5..24 ms, queue 2 ms (p95 28, 23 and 2 within 1 %).
    _, series = run(seeded, panel_sql("modelwatch-operations", "Latency p95 by stage"))
    p95 = {metric: float(value) for _, metric, value in series}
    assert p95 == {
        f"{VERSION} total": pytest.approx(28, rel=0.01),
        f"{VERSION} model": pytest.approx(23, rel=0.01),
        f"{VERSION} queue": pytest.approx(2, rel=0.01),
    }
    columns, rows = run(
        seeded, panel_sql("modelwatch-operations", "Latency by stage, newest window")
    )
    newest = [dict(zip(columns, r, strict=True)) for r in rows if r[2] == "all"]
    assert [r["stage"] for r in newest] == ["model", "queue"]  # slowest first
    assert float(newest[0]["p95_share"]) == pytest.approx(23 / 28, rel=0.02)
    # Latency beside GPU utilisation (seeded 40..89 %).
    title = "Latency p95 beside utilisation"
    _, total = run(seeded, panel_sql("modelwatch-operations", title))
    assert {m for _, m, _ in total} == {f"{VERSION} latency p95"}
    _, gpu = run(seeded, panel_sql("modelwatch-operations", title, "B"))
    assert {m for _, m, _ in gpu} == {f"{VERSION} gpu_utilization_percent p95"}
    assert gpu and all(40 <= float(v) <= 90 for _, _, v in gpu)


def test_releases_panels_show_the_seeded_facts(seeded: tuple[Engine, GrafanaContext]) -> None:
    # Guard history: a scheduled replay that passed, then two gate runs on request.
    _, runs = run(seeded, panel_sql("modelwatch-releases", "Guard runs"))
    assert [(r[1], r[2], r[4]) for r in runs] == [
        (VERSION, "manual", "fail"),
        (VERSION, "manual", "pass"),
        (VERSION, "schedule", "pass"),
    ]
    _, timeline = run(seeded, panel_sql("modelwatch-releases", "Guard verdict history"))
    assert [(r[1], r[2]) for r in timeline] == [
        (f"{VERSION} (schedule)", 1),
        (f"{VERSION} (manual)", 1),
        (f"{VERSION} (manual)", 0),
    ]
    # Canary: the whole traffic and region=us pass, region=eu fails and fails the pair.
    columns, rows = run(
        seeded, panel_sql("modelwatch-releases", "Canary slices, newest evaluation")
    )
    newest = [dict(zip(columns, r, strict=True)) for r in rows]
    assert [(r["slice"], r["verdict"], r["failed_criteria"]) for r in newest] == [
        ("region=eu", "fail", 1),
        ("all", "pass", 0),
        ("region=us", "pass", 0),
    ]
    assert {(r["version"], r["stable"], r["pair_verdict"]) for r in newest} == {
        (VERSION, "2", "fail")
    }
    assert newest[0]["decided_by"] == "prediction"
    _, states = run(seeded, panel_sql("modelwatch-releases", "Canary verdict per slice"))
    assert sorted((r[1], r[2]) for r in states) == [
        (f"{VERSION} vs 2 all", 1),
        (f"{VERSION} vs 2 region=eu", 0),
        (f"{VERSION} vs 2 region=us", 1),
    ]


def test_segment_panels_show_new_and_persisting_segments(
    seeded: tuple[Engine, GrafanaContext],
) -> None:
    columns, rows = run(seeded, panel_sql("modelwatch-releases", "Weak segments, newest run"))
    newest = [dict(zip(columns, r, strict=True)) for r in rows]
    assert [(r["segment"], r["persistence"]) for r in newest] == [
        ("region = eu AND age = [60, inf)", "persisting"),
        ("device = ios", "new"),
    ]
    assert newest[0]["effect"] == pytest.approx(0.25) and newest[0]["support"] == 400
    _, counts = run(seeded, panel_sql("modelwatch-releases", "Segments per run"))
    assert [(r[1], r[2], r[3]) for r in counts] == [("errors", 1, 0), ("errors", 1, 1)]
