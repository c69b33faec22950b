"""Metric definitions on an injected registry, with bounded labels."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest

from dashboards import ModelwatchMetrics


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_metrics_live_on_the_injected_registry_only(
    metrics: ModelwatchMetrics, registry: CollectorRegistry
) -> None:
    metrics.record_ingested("fraud", "stream", 7)
    assert value(registry, "modelwatch_events_ingested_total", model="fraud", source="stream") == 7
    assert REGISTRY.get_sample_value("modelwatch_events_ingested_total", {}) is None
    # A second instance on another registry does not clash with the first.
    other = CollectorRegistry()
    ModelwatchMetrics(other).record_ingested("fraud", "stream")
    assert value(other, "modelwatch_events_ingested_total", model="fraud", source="stream") == 1


def test_drift_gauges_use_bounded_slice_labels(
    metrics: ModelwatchMetrics, registry: CollectorRegistry
) -> None:
    for i, region in enumerate(["eu", "us", "apac", "latam", "mena"]):
        metrics.set_drift("fraud", "3", f"region={region}", "amount", "psi", 0.1 * i, 0.2)
    metrics.set_drift("fraud", "3", "request_id=abc", "amount", "psi", 0.9, 0.2)
    slices = {
        s.labels["slice"]
        for s in registry.collect()
        if s.name == "modelwatch_drift_score"
        for s in s.samples
    }
    assert slices == {"region=eu", "region=us", "region=apac", "region=(other)", "other"}
    base = {"model": "fraud", "version": "3", "column": "amount", "method": "psi"}
    assert value(registry, "modelwatch_drift_score", slice="region=us", **base) == pytest.approx(
        0.1
    )
    assert value(registry, "modelwatch_drift_threshold", slice="region=us", **base) == 0.2


def test_guard_verdict_is_a_state_set(
    metrics: ModelwatchMetrics, registry: CollectorRegistry
) -> None:
    metrics.set_guard_verdict("fraud", "4-int8", "pass")
    metrics.set_guard_verdict("fraud", "4-int8", "fail")
    states = {
        v: value(registry, "modelwatch_guard_verdict", model="fraud", version="4-int8", verdict=v)
        for v in ("pass", "fail", "inconclusive")
    }
    assert states == {"pass": 0.0, "fail": 1.0, "inconclusive": 0.0}
    with pytest.raises(ValueError, match="unknown guard verdict 'maybe'"):
        metrics.set_guard_verdict("fraud", "4-int8", "maybe")


def test_dead_letter_reasons_are_capped(
    metrics: ModelwatchMetrics, registry: CollectorRegistry
) -> None:
    for i in range(25):
        metrics.record_dead_letter("logs", f"reason-{i}")
    reasons = {
        s.labels["reason"]
        for m in registry.collect()
        if m.name == "modelwatch_dead_letters"
        for s in m.samples
        if s.name.endswith("_total")
    }
    assert len(reasons) == 21 and "other" in reasons
    assert value(registry, "modelwatch_dead_letters_total", source="logs", reason="other") == 5


def test_exposition_lists_every_metric_with_help(
    metrics: ModelwatchMetrics, registry: CollectorRegistry
) -> None:
    metrics.observe_window_evaluation("fraud", 0.3)
    metrics.set_consumer_lag("stream", 12)
    metrics.record_delivery_failure("slack")
    metrics.set_drifted_columns("fraud", "3", "", 2)
    metrics.set_guard_flip_rate("fraud", "4-int8", "region=eu", 0.01)
    metrics.set_slo("fraud", "3", None, "latency_p95_ms", 41.5, 50.0)
    text = generate_latest(registry).decode()
    for name in (
        "modelwatch_events_ingested",
        "modelwatch_dead_letters",
        "modelwatch_consumer_lag",
        "modelwatch_window_evaluation_seconds",
        "modelwatch_alert_delivery_failures",
        "modelwatch_drift_score",
        "modelwatch_drift_threshold",
        "modelwatch_drifted_columns",
        "modelwatch_guard_verdict",
        "modelwatch_guard_flip_rate",
        "modelwatch_slo_value",
        "modelwatch_slo_threshold",
    ):
        assert f"# HELP {name}" in text
    assert 'modelwatch_window_evaluation_seconds_bucket{le="0.5",model="fraud"} 1.0' in text
    assert 'modelwatch_drifted_columns{model="fraud",slice="all",version="3"} 2.0' in text
    slo = 'model="fraud",objective="latency_p95_ms",slice="all",version="3"'
    assert f"modelwatch_slo_value{{{slo}}} 41.5" in text
    assert f"modelwatch_slo_threshold{{{slo}}} 50.0" in text
