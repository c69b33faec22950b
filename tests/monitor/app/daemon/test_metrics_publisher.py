"""The metrics publisher reads what changed: dead letters since its last publish, lagging rows.

SQLite and PostgreSQL; the plans are checked in test_tick_plans.py, this is what a user sees
on /metrics.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import event, update
from sqlalchemy.engine import Engine

from dashboards.metrics import ModelwatchMetrics
from guards.registry import register_version
from monitor.app.daemon._health_signals import ingest_lag_signals
from monitor.app.daemon.metrics import MAX_INFO_VERSIONS, MetricsPublisher
from monitor.config import parse_config
from monitor.detectors import DriftResult
from monitor.failures import Isolation
from monitor.outcomes import OutcomeResult
from monitor.profiles.serving import LatencySketch, ServingSummary
from monitor.results.store import (
    store_drift_results,
    store_estimated_results,
    store_outcome_results,
)
from monitor.storage import (
    DeadLetter,
    GateRun,
    SourcePosition,
    WindowServing,
    transaction,
    utcnow,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _dead(engine: Engine, n: int, reason: str) -> None:
    with transaction(engine) as s:
        for i in range(n):
            s.add(
                DeadLetter(
                    source="http", key=f"idem:{reason}{i}", offset=0, reason=reason,
                    detail="x", payload=b"x", payload_size=1, truncated=False,
                )
            )  # fmt: skip


def test_dead_letters_count_once_and_lag_returns_to_zero(engine: Engine) -> None:
    config = parse_config({"database_url": str(engine.url), "models": [{"name": "m"}]}, env={})
    registry = CollectorRegistry()
    publisher = MetricsPublisher(engine, ModelwatchMetrics(registry, config.models))

    def dead(reason: str) -> float | None:
        labels = {"source": "http", "reason": reason}
        return registry.get_sample_value("modelwatch_dead_letters_total", labels)

    def lag(source: str) -> float | None:
        return registry.get_sample_value("modelwatch_consumer_lag", {"source": source})

    _dead(engine, 3, "invalid_json")  # retained before the process started: counted once
    with transaction(engine) as s:
        s.add(SourcePosition(source="kafka", key="t:0", offset=10, end_offset=60))
        s.add(SourcePosition(source="kafka", key="t:1", offset=5, end_offset=5))
        s.add(SourcePosition(source="http", key="idem:a", offset=40, end_offset=40))
    publisher.publish(["m"])
    assert dead("invalid_json") == 3 and lag("kafka") == 50
    publisher.publish(["m"])
    assert dead("invalid_json") == 3  # nothing new: no increment
    _dead(engine, 2, "invalid_json")
    _dead(engine, 1, "invalid_timestamp")
    publisher.publish(["m"])
    assert dead("invalid_json") == 5 and dead("invalid_timestamp") == 1
    assert [(s.labels, s.value) for s in ingest_lag_signals(engine, utcnow())] == [
        ({"source": "kafka"}, 50.0)
    ]
    with transaction(engine) as s:
        s.execute(update(SourcePosition).where(SourcePosition.key == "t:0").values(offset=60))
    publisher.publish(["m"])
    assert lag("kafka") == 0  # caught up: the gauge goes back to 0, not stuck at 50
    assert ingest_lag_signals(engine, utcnow()) == []  # no signal: its alert resolves


def _results(engine: Engine, version: str, window: int, value: float) -> None:
    """Drift, outcome and estimated results and serving statistics (error rate `value`) of
    `version` in hour `window` after T0."""
    span = (T0 + window * HOUR, T0 + (window + 1) * HOUR)
    serving = ServingSummary(requests=1000, errors=round(value * 1000)).to_row()
    with transaction(engine) as s:
        s.add(WindowServing(model="m", version=version, window_start=span[0],
                            window_end=span[1], slice_key="", **serving))  # fmt: skip
    drift = DriftResult("x", None, "numeric", "psi", value, 0.2, None, 1000, 500, "ok")
    store_drift_results(engine, "m", version, span, [drift])
    outcome = OutcomeResult("accuracy", None, value, None, None, None, None, 700, "ok")
    store_outcome_results(engine, "m", version, span, [outcome])
    estimated = {"metric": "accuracy", "slice_key": "", "value": value, "ci_low": None,
                 "ci_high": None, "realized": None, "threshold_low": None,
                 "threshold_high": None, "n": 700, "status": "ok"}  # fmt: skip
    store_estimated_results(engine, "m", version, span, [estimated])


def test_a_version_keeps_its_series_at_a_window_boundary(engine: Engine) -> None:
    # Two versions serve; the canary's results of the new window come in after the stable
    # one's (less traffic, a later batch): its series must not vanish in between.
    model = {"name": "m", "slo": {"error_rate": 0.5}}
    config = parse_config({"database_url": str(engine.url), "models": [model]}, env={})
    registry = CollectorRegistry()
    slo = {m.name: m.slo for m in config.models if m.slo is not None}
    publisher = MetricsPublisher(engine, ModelwatchMetrics(registry, config.models), slo=slo)

    def exported(version: str) -> list[float | None]:
        common = {"model": "m", "version": version, "slice": "all"}
        return [
            registry.get_sample_value(name, {**common, **labels})
            for name, labels in (
                ("modelwatch_drift_score", {"column": "x", "method": "psi"}),
                ("modelwatch_outcome_value", {"metric": "accuracy"}),
                ("modelwatch_estimated_value", {"metric": "accuracy"}),
                ("modelwatch_slo_value", {"objective": "error_rate"}),
            )
        ]

    _results(engine, "stable", 0, 0.1)
    _results(engine, "canary", 0, 0.3)
    publisher.publish(["m"])
    assert exported("stable") == [0.1] * 4 and exported("canary") == [0.3] * 4
    _results(engine, "stable", 1, 0.15)  # the new window: the stable version's results first
    publisher.publish(["m"])
    assert exported("stable") == [0.15] * 4
    assert exported("canary") == [0.3] * 4  # its newest results, until the new window's
    _results(engine, "canary", 1, 0.35)
    publisher.publish(["m"])
    assert exported("canary") == [0.35] * 4
    _results(engine, "stable", 2, 0.2)  # the canary stopped serving: gone one window later
    publisher.publish(["m"])
    assert exported("canary") == [0.35] * 4
    _results(engine, "stable", 3, 0.25)
    publisher.publish(["m"])
    assert exported("stable") == [0.25] * 4 and exported("canary") == [None] * 4


def _gate(engine: Engine, verdict: str) -> None:
    hashes = {f"{k}_sha256": k[0] * 64 for k in ("reference", "candidate", "golden")}
    with transaction(engine) as s:
        doc = {"verdict": verdict}
        s.add(GateRun(model="m", version="stable", preset="int8", verdict=verdict, criteria=[],
                      verdict_json=doc, providers={}, timing={}, **hashes))  # fmt: skip


def test_a_family_whose_read_fails_keeps_its_series_and_the_others_refresh(
    engine: Engine,
) -> None:
    config = parse_config({"database_url": str(engine.url), "models": [{"name": "m"}]}, env={})
    registry = CollectorRegistry()
    isolation = Isolation(engine, "alerts")
    metrics = ModelwatchMetrics(registry, config.models)
    publisher = MetricsPublisher(engine, metrics, isolation=isolation)

    def verdict(state: str) -> float | None:
        labels = {"model": "m", "version": "stable", "verdict": state}
        return registry.get_sample_value("modelwatch_guard_verdict", labels)

    def drift() -> float | None:
        labels = {"model": "m", "version": "stable", "slice": "all", "column": "x",
                  "method": "psi"}  # fmt: skip
        return registry.get_sample_value("modelwatch_drift_score", labels)

    _results(engine, "stable", 0, 0.1)
    _gate(engine, "pass")
    isolation.begin()
    publisher.publish(["m"])
    assert verdict("pass") == 1 and drift() == 0.1
    _gate(engine, "unheard-of")  # the newest gate run's verdict cannot be exported
    _results(engine, "stable", 1, 0.2)
    for _ in range(2):  # failing, then waiting for its retry: the last verdict stays
        isolation.begin()
        publisher.publish(["m"])
        assert verdict("pass") == 1 and verdict("fail") == 0
        assert drift() == 0.2  # the other families of the model refresh
    assert [f.item for f in isolation.failing()] == ["metrics guard m"]
    with pytest.raises(ValueError, match="unknown refreshed family 'guards'; expected one of"):
        metrics.keep_model_series("guards", "m")


def test_stage_latency_gauges_follow_each_versions_newest_window(sqlite_engine: Engine) -> None:
    config = parse_config({"database_url": "sqlite://", "models": [{"name": "m"}]}, env={})
    registry = CollectorRegistry()
    metrics = ModelwatchMetrics(registry, config.models)
    publisher = MetricsPublisher(sqlite_engine, metrics)

    def stage(name: str, version: str = "1") -> tuple[float | None, float | None]:
        labels = {"model": "m", "version": version, "stage": name}
        names = ("modelwatch_latency_stage_p95_seconds", "modelwatch_latency_stage_mean_share")
        p95, share = (registry.get_sample_value(n, labels) for n in names)
        return p95, share

    def window(w: int, model_ms: float) -> None:
        # every event: 5 ms queue + the model's time; the total is their sum
        summary = ServingSummary(
            requests=100,
            latency=LatencySketch.of([5.0 + model_ms] * 100),
            model_latency=LatencySketch.of([model_ms] * 100),
            stages={"queue": LatencySketch.of([5.0] * 100)},
        )
        with transaction(sqlite_engine) as s:
            s.add(WindowServing(model="m", version="1", window_start=T0 + w * HOUR,
                                window_end=T0 + (w + 1) * HOUR, slice_key="",
                                **summary.to_row()))  # fmt: skip

    window(0, 15.0)
    publisher.publish(["m"])
    model, queue = stage("model"), stage("queue")
    assert model[0] == pytest.approx(0.015, rel=0.02) and model[1] == pytest.approx(0.75, rel=0.02)
    assert queue[0] == pytest.approx(0.005, rel=0.02) and queue[1] == pytest.approx(0.25, rel=0.02)
    assert stage("network") == (None, None)  # no event reported it: no series
    window(1, 35.0)  # the model stage slows down: its series follows the newest window
    publisher.publish(["m"])
    assert stage("model")[0] == pytest.approx(0.035, rel=0.02)
    with pytest.raises(ValueError, match="unknown latency stage 'gpu'"):
        metrics.set_latency_stage("m", "1", "gpu", 1.0, None)


def test_every_models_gate_runs_and_settings_come_from_two_queries(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    """Per refresh, gate runs and version settings are read for the whole fleet at once; each
    model still gets its newest run per version and its newest MAX_INFO_VERSIONS versions."""
    names = ["a", "b", "m"]
    config = parse_config(
        {"database_url": str(sqlite_engine.url), "models": [{"name": n} for n in names]}, env={}
    )
    registry = CollectorRegistry()
    publisher = MetricsPublisher(sqlite_engine, ModelwatchMetrics(registry, config.models))
    artifact = tmp_path / "model.onnx"
    artifact.write_bytes(b"onnx")
    for i in range(MAX_INFO_VERSIONS + 2):
        register_version(sqlite_engine, "a", f"v{i:02d}", artifact, settings={"precision": "fp16"})
    register_version(sqlite_engine, "b", "only", artifact, settings={"precision": "int8"})
    _gate(sqlite_engine, "fail")
    _gate(sqlite_engine, "pass")  # m's newest run
    seen: list[str] = []
    event.listen(sqlite_engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    publisher.publish(names)
    reads = [q for q in seen if "gate_runs" in q or "model_versions" in q]
    assert len(reads) == 2, reads  # not two per model

    def versions(model: str) -> set[str]:
        return {
            s.labels["version"]
            for family in registry.collect()
            if family.name == "modelwatch_model_version_info"
            for s in family.samples
            if s.labels["model"] == model
        }

    assert versions("a") == {f"v{i:02d}" for i in range(2, MAX_INFO_VERSIONS + 2)}
    assert versions("b") == {"only"}
    labels = {"model": "m", "version": "stable"}
    assert registry.get_sample_value("modelwatch_guard_verdict", {**labels, "verdict": "pass"})
    assert not registry.get_sample_value("modelwatch_guard_verdict", {**labels, "verdict": "fail"})
