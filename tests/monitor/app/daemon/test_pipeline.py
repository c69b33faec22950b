"""Ingest → window profiles → drift and outcome results → alerts → signed delivery, in process.

Traffic drifts (feature shift and broken labels) only in region `eu` from window 2 on; the
evaluation must find it there and nowhere else, and the alerts must reach a receiver that
verifies their signatures.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import orjson
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alerts import DeliveryWorker
from collectors._base import RawRecord
from collectors._ingest import Ingestor
from monitor.app.daemon.wiring import Monitoring
from monitor.app.demo._receiver import SignedWebhookReceiver
from monitor.app.demo._traffic import FEATURES, TrafficPlan, training_frame, windows
from monitor.baselines.store import save_baseline
from monitor.config import Config, parse_config
from monitor.outcomes.metrics import accuracy
from monitor.profiles import profile_frame, specs_for
from monitor.storage import DriftResultRow, OutcomeResultRow, session_factory

SECRET = "pipeline-secret"
W = np.array([1.6, 0.8, -0.5, 0.3, 0.0, 0.2, -0.2, 0.1], dtype=np.float32)


def scorer(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ W - 2.0)))


def _config(url: str, receiver_url: str, baseline_accuracy: float) -> Config:
    return parse_config(
        {
            "database_url": url,
            "models": [
                {
                    "name": "fraud",
                    "slices": ["region"],
                    "outcomes": {
                        "metrics": ["accuracy"],
                        "tolerance": 0.03,
                        "baseline": {"accuracy": baseline_accuracy},
                    },
                }
            ],
            "collect": {"pipeline": False, "allowed_lateness": "0s"},
            "alerts": {
                "grouping": {"group_wait": "0s", "group_interval": "1m"},
                "receivers": [
                    {
                        "name": "hook",
                        "type": "webhook",
                        "url": receiver_url,
                        "secret_env": "MW_TEST_SECRET",
                    }
                ],
                "rules": [
                    {
                        "name": "FeatureDrift",
                        "kind": "drift",
                        "severity": "warning",
                        "receivers": ["hook"],
                    },
                    {
                        "name": "OutcomeDegraded",
                        "kind": "outcome",
                        "severity": "critical",
                        "receivers": ["hook"],
                    },
                ],
            },
        },
        env={},
    )


def _ingest(engine: Engine, config: Config, plan: TrafficPlan) -> None:
    ingestor = Ingestor(engine, "test", "http", config.models, config.collect)
    offset = 0
    pending: list[dict[str, Any]] = []
    for batch in windows(plan, scorer):
        records = []
        for event in [*batch.events, *pending]:
            records.append(RawRecord("test", offset, offset + 1, orjson.dumps(event)))
            offset += 1
        ingestor.ingest(records)
        pending = batch.labels  # labels of a window arrive with the next one
    ingestor.ingest(
        [
            RawRecord("test", offset + i, offset + i + 1, orjson.dumps(e))
            for i, e in enumerate(pending)
        ]
    )


@pytest.fixture
def evaluated(engine: Engine) -> tuple[Engine, Config, list[Any]]:
    frame = training_frame(scorer, n=20_000)
    cols = [*FEATURES, "prediction"]
    save_baseline(engine, "fraud", "1", profile_frame(frame, specs_for(cols, frame), ["region"]))
    base_acc = accuracy(frame["label"].to_numpy(float), frame["prediction"].to_numpy(float))
    config = _config(str(engine.url), "http://127.0.0.1:9/unused", base_acc)
    plan = TrafficPlan(windows=4, per_window=2000, drift_from=2)
    _ingest(engine, config, plan)
    monitoring = Monitoring(engine, config)
    evaluations = monitoring(now=datetime.now(UTC))
    return engine, config, evaluations


def _rows(engine: Engine, table: Any) -> list[Any]:
    with session_factory(engine)() as s:
        return list(s.scalars(select(table)))


def test_drift_is_found_in_the_drifted_slice_only(evaluated: tuple[Engine, Config, Any]) -> None:
    engine = evaluated[0]
    rows = [r for r in _rows(engine, DriftResultRow) if r.status == "drift"]
    start = TrafficPlan().start
    late = {start + timedelta(hours=h) for h in (2, 3)}
    f0_eu = {r.window_start for r in rows if r.column == "f0" and r.slice_key == '{"region":"eu"}'}
    assert f0_eu == late
    others = [r for r in rows if r.slice_key not in ('{"region":"eu"}', "")]
    assert others == [], [(r.column, r.slice_key, r.window_start) for r in others]
    assert all(r.window_start in late for r in rows)


def test_the_slice_column_is_evaluated_overall(evaluated: tuple[Engine, Config, Any]) -> None:
    # The baseline did not profile `region` (only sliced by it) and events carry it as an
    # attribute: its mix still comes from the slices' row counts, once per window, overall.
    engine = evaluated[0]
    region = [r for r in _rows(engine, DriftResultRow) if r.column == "region"]
    assert {r.slice_key for r in region} == {""}
    assert len({r.window_start for r in region}) == len(region) == 4
    assert {r.status for r in region} == {"ok"}  # the region mix does not move


def test_outcome_degradation_is_found_in_the_drifted_slice_only(
    evaluated: tuple[Engine, Config, Any],
) -> None:
    engine = evaluated[0]
    degraded = [r for r in _rows(engine, OutcomeResultRow) if r.status == "degraded"]
    assert {r.slice_key for r in degraded} <= {'{"region":"eu"}', ""}
    eu = {r.window_start for r in degraded if r.slice_key == '{"region":"eu"}'}
    assert eu == {TrafficPlan().start + timedelta(hours=h) for h in (2, 3)}


def test_second_evaluation_does_no_new_work(evaluated: tuple[Engine, Config, Any]) -> None:
    engine, config, first = evaluated
    assert first, "the first evaluation found nothing to do"
    assert Monitoring(engine, config)(now=datetime.now(UTC)) == []


def test_alerts_reach_a_verifying_receiver(evaluated: tuple[Engine, Config, Any]) -> None:
    engine, config, _ = evaluated
    with SignedWebhookReceiver(SECRET) as receiver:
        cfg = _config(str(engine.url), receiver.url, 0.9)
        with httpx.Client(timeout=5) as client:
            worker = DeliveryWorker(engine, cfg.alerts, client, env={"MW_TEST_SECRET": SECRET})
            report = worker.run(once=True)
    assert report.sent >= 2 and report.dead == 0
    names = {a["labels"]["alertname"] for p in receiver.received.verified for a in p["alerts"]}
    assert names == {"FeatureDrift", "OutcomeDegraded"}
    slices = {a["labels"].get("slice") for p in receiver.received.verified for a in p["alerts"]}
    assert "region=eu" in slices
    assert receiver.received.rejected == []


def test_metrics_publish_the_stored_results(evaluated: tuple[Engine, Config, Any]) -> None:
    from prometheus_client import CollectorRegistry

    from dashboards.metrics import ModelwatchMetrics

    engine, config, _ = evaluated
    registry = CollectorRegistry()
    Monitoring(engine, config, ModelwatchMetrics(registry, config.models))(now=datetime.now(UTC))
    events = registry.get_sample_value(
        "modelwatch_events_ingested_total", {"model": "*", "source": "test"}
    )
    assert events == 8000
    eu = {
        "model": "fraud",
        "version": "1",
        "slice": "region=eu",
        "column": "f0",
        "method": "wasserstein",
    }
    score = registry.get_sample_value("modelwatch_drift_score", eu)
    threshold = registry.get_sample_value("modelwatch_drift_threshold", eu)
    assert score is not None and threshold is not None and score > threshold
    us = {**eu, "slice": "region=us"}
    assert registry.get_sample_value("modelwatch_drift_score", us) < threshold
