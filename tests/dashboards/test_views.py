"""The mw_* views exist on both backends with the columns dashboards rely on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine

from dashboards.views import VIEW_COLUMNS
from migrations import downgrade
from monitor.profiles._latency import LatencySketch
from tests.dashboards.seed import seed_all


def test_views_have_the_contract_columns(engine: Engine) -> None:
    views = set(inspect(engine).get_view_names())
    assert set(VIEW_COLUMNS) <= views
    with engine.connect() as conn:
        for name, columns in VIEW_COLUMNS.items():
            result = conn.execute(text(f"SELECT * FROM {name} LIMIT 0"))
            assert tuple(result.keys()) == columns, name


def test_downgrade_drops_the_views(engine: Engine) -> None:
    downgrade(engine, "0001_foundation")
    assert not {v for v in inspect(engine).get_view_names() if v.startswith("mw_")}


def test_views_read_the_same_facts_on_both_backends(engine: Engine, tmp_path: Path) -> None:
    seed_all(engine, tmp_path, datetime.now(UTC))
    with engine.connect() as conn:

        def rows(sql: str) -> list[tuple[Any, ...]]:
            return [tuple(r) for r in conn.execute(text(sql))]

        for name in VIEW_COLUMNS:
            assert rows(f"SELECT count(*) FROM {name}")[0][0] > 0, f"{name} is empty"
        assert rows("SELECT DISTINCT slice FROM mw_drift ORDER BY slice") == [
            ("all",),
            ("region=eu",),
            ("region=us",),
        ]
        assert rows(
            "SELECT verdict, passed, decided_by, flip_rate, reference_latency_ms, "
            "candidate_latency_ms, duration_s, providers FROM mw_gate_runs "
            "ORDER BY verdict, flip_rate"
        ) == [
            ("fail", 0, "flip_rate[scores]", 0.04, 4.0, 3.5, 2.0, "CPUExecutionProvider"),
            ("pass", 1, None, 0.002, 4.0, 2.5, 2.0, "CPUExecutionProvider"),
            ("pass", 1, None, 0.003, 4.0, 2.6, 2.0, "CPUExecutionProvider"),
        ]
        assert rows("SELECT state, state_code, alert, model FROM mw_alerts ORDER BY time") == [
            ("pending", 1, "FeatureDrift amount", "fraud"),
            ("firing", 2, "FeatureDrift amount", "fraud"),
            ("resolved", 0, "FeatureDrift amount", "fraud"),
        ]
        assert rows("SELECT sum(events) FROM mw_ingest")[0][0] == 120 + 80  # and 40 pairs
        assert rows("SELECT reason FROM mw_dead_letters ORDER BY reason") == [
            ("invalid_json",),
            ("missing_field",),
        ]
        assert rows("SELECT sum(failed) FROM mw_notifications")[0][0] == 1
        assert rows("SELECT count(*) FROM mw_drift WHERE drifted = 1")[0][0] == 3
        assert rows("SELECT count(*) FROM mw_outcomes WHERE degraded = 1")[0][0] == 6
        # Migration 0038: the level each outcome decision tested at, per window and period.
        for view in ("mw_outcomes", "mw_outcome_periods"):
            assert rows(f"SELECT DISTINCT slice, level FROM {view} ORDER BY slice") == [
                ("all", pytest.approx(0.025 / 3, rel=1e-12)),
                ("region=eu", pytest.approx(0.025 / 2, rel=1e-12)),
                ("region=us", pytest.approx(0.025, rel=1e-12)),
            ], view
        # Migration 0028: percentiles per stage, as LatencySketch.quantile computes them.
        per_stage = rows(
            "SELECT stage, count(*), min(n), min(p95), max(p95), max(p50) FROM mw_latency "
            "WHERE slice = 'all' GROUP BY stage ORDER BY stage"
        )

        def sketch(values: list[float]) -> list[Any]:
            return [pytest.approx(LatencySketch.of(values).quantile(q), rel=1e-12)
                    for q in (0.95, 0.95, 0.5)]  # fmt: skip

        assert per_stage == [
            ("model", 6, 20, *sketch([5.0 + i for i in range(20)])),  # each hour: 5..24 ms
            ("queue", 6, 20, *sketch([2.0])),
            ("total", 6, 20, *sketch([10.0 + i for i in range(20)])),
        ]
        # Migration 0016: SLO rows per window and slice, and each version's build settings.
        assert rows("SELECT DISTINCT slice FROM mw_slo ORDER BY slice") == [
            ("all",),
            ("region=eu",),
            ("region=us",),
        ]
        assert rows(
            "SELECT objective, sum(breached), sum(n) FROM mw_slo WHERE slice = 'all' "
            "GROUP BY objective ORDER BY objective"
        ) == [
            ("cost_per_1k", 0, 120),
            ("error_rate", 3, 120),  # 1 errored request of 20 in three windows
            ("latency_p95_ms", 6, 120),
            ("latency_p99_ms", 0, 120),
        ]
        assert rows(
            "SELECT version, precision, quantization, batching, runtime, verdict "
            "FROM mw_model_settings"
        ) == [("3", "int8", "static qdq, 512 calibration rows", "max 64, 5 ms", "ort 1.31 CUDA",
               "fail")]  # fmt: skip
        assert '"image"' in rows("SELECT meta FROM mw_model_settings")[0][0]
        # Migration 0018: estimated metrics next to realized, and the mean reconstruction error.
        assert rows(
            "SELECT metric, sum(alerting), count(realized) FROM mw_estimated WHERE slice = 'all' "
            "GROUP BY metric ORDER BY metric"
        ) == [("accuracy", 3, 3), ("reconstruction_error", 2, 0)]
        # Migration 0027: paired shadow mode, version 3 shadowing version 2.
        assert rows(
            "SELECT primary_version, version, sum(pairs), sum(flips), sum(decided) FROM mw_shadow "
            "WHERE slice = 'all' GROUP BY primary_version, version"
        ) == [("2", "3", 40, 8, 40)]
        # Migration 0030: what started each gate run, and the canary verdict per judged slice.
        assert rows(
            "SELECT trigger, verdict, passed FROM mw_guard_history ORDER BY time, verdict"
        ) == [("schedule", "pass", 1), ("manual", "pass", 1), ("manual", "fail", 0)]
        assert rows(
            "SELECT version, stable, slice, verdict, failed, failed_criteria, decided_by, "
            "pair_verdict, correction FROM mw_canary_slices ORDER BY slice"
        ) == [
            ("3", "2", "all", "pass", 0, 0, None, "fail", "holm"),
            ("3", "2", "region=eu", "fail", 1, 1, "prediction", "fail", "holm"),
            ("3", "2", "region=us", "pass", 0, 0, None, "fail", "holm"),
        ]
        # Migration 0032: fairness per protected attribute, the comparison and each group.
        [(attribute, slice_, status, violated, value)] = rows(
            "SELECT attribute, slice, status, violated, value FROM mw_fairness "
            "WHERE metric = 'demographic_parity_difference'"
        )
        assert (attribute, slice_, status, violated) == ("region", "all", "violation", 1)
        assert value == pytest.approx(0.3)
        rates = rows("SELECT slice, value FROM mw_fairness WHERE metric = 'selection_rate'")
        assert sorted(rates) == [
            ("region=eu", pytest.approx(0.2)),
            ("region=us", pytest.approx(0.5)),
        ]
