"""One failing window, model or producer never stops the others; schema changes are results.

In process on SQLite and PostgreSQL: two models, `fraud` and `churn`, each with two windows.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select
from sqlalchemy.engine import Engine

from dashboards.metrics import ModelwatchMetrics
from monitor.app.daemon.wiring import Monitoring
from monitor.baselines.store import load_baseline
from monitor.config import Config, parse_config
from monitor.failures import list_failures
from monitor.profiles import profile_from_bytes
from monitor.storage import AlertState, DriftResultRow, WindowProfile, session_factory
from tests.monitor.app.daemon.isolation_data import (
    START,
    WINDOW,
    baseline,
    events,
    ingest,
    poison_window,
)

FEATURES = ["f0", "f1"]


def _config(url: str) -> Config:
    return parse_config(
        {
            "database_url": url,
            "models": [{"name": "fraud"}, {"name": "churn"}],
            "scheduler": {"retry_initial_s": 60, "retry_max_s": 600},
            "alerts": {
                "rules": [
                    {"name": "EvaluationFailed", "kind": "evaluation_failed"},
                    {"name": "ColumnGone", "kind": "drift", "matchers": ["method=schema"]},
                ]
            },
        },
        env={},
    )


def _results(engine: Engine, model: str) -> list[DriftResultRow]:
    with session_factory(engine)() as s:
        return list(s.scalars(select(DriftResultRow).where(DriftResultRow.model == model)))


def _alerts(engine: Engine) -> dict[str, tuple[str, dict[str, Any]]]:
    with session_factory(engine)() as s:
        return {
            r.rule + str(sorted(r.labels.items())): (r.state, r.labels)
            for r in s.scalars(select(AlertState))
        }


@pytest.fixture
def two_models(engine: Engine) -> tuple[Engine, Config]:
    config = _config(str(engine.url))
    baseline(engine, "fraud", FEATURES)
    baseline(engine, "churn", FEATURES)
    ingest(
        engine, config.models, events("fraud", FEATURES, 2, 200) + events("churn", FEATURES, 2, 200)
    )
    return engine, config


def test_a_poisoned_window_is_recorded_and_the_rest_is_evaluated(
    two_models: tuple[Engine, Config],
) -> None:
    engine, config = two_models
    poison_window(engine, "fraud", 0)
    registry = CollectorRegistry()
    now = datetime.now(UTC)
    Monitoring(engine, config, ModelwatchMetrics(registry, config.models))(now=now)

    churn = _results(engine, "churn")
    assert {r.window_start for r in churn} == {START, START + WINDOW}
    assert {r.status for r in churn if r.method != "schema"} <= {"ok", "drift"}
    fraud = _results(engine, "fraud")
    assert {r.window_start for r in fraud} == {START + WINDOW}, "the healthy fraud window"
    [failure] = list_failures(engine, "evaluate")
    assert failure.item == f"drift fraud/1 {START.isoformat()}"
    assert (failure.model, failure.version, failure.failures) == ("fraud", "1", 1)
    assert failure.error and "\n" not in failure.error
    assert registry.get_sample_value("modelwatch_job_failures_total", {"job": "evaluate"}) == 1
    states = [
        s for s, labels in _alerts(engine).values() if labels.get("alertname") == "EvaluationFailed"
    ]
    assert states == ["firing"]


def test_a_failing_window_is_retried_with_backoff_and_recovers(
    two_models: tuple[Engine, Config],
) -> None:
    engine, config = two_models
    repair = poison_window(engine, "fraud", 0)
    monitoring = Monitoring(engine, config)
    now = datetime.now(UTC)
    monitoring(now=now)
    monitoring(now=now + timedelta(seconds=30))  # before the retry time: not attempted
    [failure] = list_failures(engine, "evaluate")
    assert failure.failures == 1
    assert failure.retry_at == now + timedelta(seconds=60)
    monitoring(now=now + timedelta(seconds=61))
    [failure] = list_failures(engine, "evaluate")
    assert failure.failures == 2
    assert failure.retry_at == now + timedelta(seconds=61 + 120)
    assert failure.first_failed_at == now

    # The window is repaired: the next attempt evaluates it and forgets the failure.
    repair()
    monitoring(now=now + timedelta(seconds=61 + 121))
    assert list_failures(engine, "evaluate") == []
    assert {r.window_start for r in _results(engine, "fraud")} == {START, START + WINDOW}
    states = [
        s for s, labels in _alerts(engine).values() if labels.get("alertname") == "EvaluationFailed"
    ]
    assert states == ["resolved"]


def test_missing_and_new_columns_are_results(engine: Engine) -> None:
    config = _config(str(engine.url))
    baseline(engine, "fraud", ["f0", "score"])  # events never carry `score`
    baseline(engine, "churn", FEATURES)
    ingest(
        engine,
        config.models,
        events("fraud", ["f0", "extra"], 1, 200) + events("churn", FEATURES, 1, 200),
    )
    Monitoring(engine, config)(now=datetime.now(UTC))

    fraud = {(r.column, r.method): r for r in _results(engine, "fraud")}
    missing, new = fraud[("score", "schema")], fraud[("extra", "schema")]
    assert (missing.status, missing.n_reference, missing.n_current) == ("missing", 2000, 0)
    assert (new.status, new.n_reference, new.n_current) == ("new", 0, 200)
    assert fraud[("f0", "wasserstein")].status in ("ok", "drift")
    assert {r.status for r in _results(engine, "churn") if r.method != "schema"} <= {"ok", "drift"}
    # `prediction` is in the events but in no baseline here: reported new, like `extra`.
    assert {c for (c, m), r in fraud.items() if r.status == "new"} == {"extra", "prediction"}
    assert list_failures(engine) == []
    gone = [labels for state, labels in _alerts(engine).values() if state == "firing"]
    assert [(g["alertname"], g["column"]) for g in gone] == [("ColumnGone", "score")]


def test_windows_on_a_replaced_baseline_are_still_compared(engine: Engine) -> None:
    config = _config(str(engine.url))
    baseline(engine, "fraud", FEATURES, bins=10)
    baseline(engine, "churn", FEATURES)
    ingest(engine, config.models, events("fraud", FEATURES, 1, 500))
    baseline(engine, "fraud", FEATURES, seed=3, bins=7)  # `baseline create --replace`, other edges
    Monitoring(engine, config)(now=datetime.now(UTC))
    fraud = [r for r in _results(engine, "fraud") if r.method == "wasserstein"]
    assert {r.column for r in fraud} == set(FEATURES)
    assert {r.status for r in fraud} == {"ok"}, [(r.column, r.value) for r in fraud]
    assert list_failures(engine) == []


def test_a_new_version_uses_the_models_baseline_for_specs_and_comparison(engine: Engine) -> None:
    config = _config(str(engine.url))
    baseline(engine, "fraud", FEATURES)  # version 1 only
    two = [{**e, "model_version": "2"} for e in events("fraud", FEATURES, 1, 300)]
    ingest(engine, config.models, two)
    Monitoring(engine, config)(now=datetime.now(UTC))
    results = [r for r in _results(engine, "fraud") if r.version == "2"]
    assert {r.column for r in results if r.method == "wasserstein"} == set(FEATURES)
    assert {r.status for r in results if r.method == "wasserstein"} <= {"ok", "drift"}
    assert list_failures(engine) == []
    with session_factory(engine)() as s:
        payload = s.scalars(
            select(WindowProfile.payload).where(
                WindowProfile.version == "2",
                WindowProfile.column == "f0",
                WindowProfile.slice_key == "",
            )
        ).one()
    ref = load_baseline(engine, "fraud", "1")
    assert profile_from_bytes(payload).spec == ref.specs["f0"], (
        "window built on the baseline's edges"
    )
