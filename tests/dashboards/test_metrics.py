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
    metrics.set_fairness("fraud", "3", "region", "demographic_parity_ratio", None, 0.7, 0.8)
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
    fair = 'attribute="region",metric="demographic_parity_ratio",model="fraud",slice="all"'
    assert f'modelwatch_fairness_value{{{fair},version="3"}} 0.7' in text
    assert f'modelwatch_fairness_threshold{{{fair},version="3"}} 0.8' in text


def test_gate_slices_are_separate_series_even_when_not_monitoring_slices(
    metrics: ModelwatchMetrics, registry: CollectorRegistry
) -> None:
    # `segment` is not among the model's configured slices; it is a gate slice.
    metrics.set_guard_flip_rate("fraud", "4-int8", "segment=high", 0.157, "label")
    metrics.set_guard_flip_rate("fraud", "4-int8", "segment=normal", 0.0014, "label")
    metrics.set_guard_metric_drop("fraud", "4-int8", None, "accuracy", 1.5, "label")
    name = "modelwatch_guard_flip_rate"
    high = value(
        registry, name, model="fraud", version="4-int8", slice="segment=high", output="label"
    )
    normal = value(
        registry, name, model="fraud", version="4-int8", slice="segment=normal", output="label"
    )
    assert (high, normal) == (0.157, 0.0014)
    drop = value(
        registry,
        "modelwatch_guard_metric_drop",
        model="fraud",
        version="4-int8",
        slice="all",
        metric="accuracy",
        output="label",
    )
    assert drop == 1.5


def test_gate_slices_are_capped(metrics: ModelwatchMetrics) -> None:
    labels = {metrics.gate_slice("fraud", f"id={i}") for i in range(60)}
    assert len(labels) == 51 and "other" in labels
    assert metrics.gate_slice("other-model", "id=1") == "id=1"


def test_series_not_rewritten_in_a_refresh_are_removed(
    metrics: ModelwatchMetrics, registry: CollectorRegistry
) -> None:
    metrics.set_drift("fraud", "1", None, "amount", "psi", 0.3, 0.2)
    metrics.set_outcome("fraud", "1", "accuracy", None, 0.9, 0.92)
    assert metrics.end_refresh() == 0
    metrics.set_drift("fraud", "2", None, "amount", "psi", 0.1, 0.2)  # version 1 retired
    assert metrics.end_refresh() == 4  # score, threshold, outcome value and baseline
    labels = {"model": "fraud", "slice": "all", "column": "amount", "method": "psi"}
    assert value(registry, "modelwatch_drift_score", version="1", **labels) is None
    assert value(registry, "modelwatch_drift_score", version="2", **labels) == 0.1
    outcome = {"model": "fraud", "version": "1", "metric": "accuracy", "slice": "all"}
    assert value(registry, "modelwatch_outcome_value", **outcome) is None


def test_kept_series_are_one_model_s_one_family(
    metrics: ModelwatchMetrics, registry: CollectorRegistry
) -> None:
    # A refresh whose drift read of `fraud` failed: fraud's drift series stay as they were;
    # its outcome series and the other model's drift series are swept as usual.
    for model in ("fraud", "churn"):
        metrics.set_drift(model, "1", None, "amount", "psi", 0.3, 0.2)
        metrics.set_drifted_columns(model, "1", None, 1)
    metrics.set_outcome("fraud", "1", "accuracy", None, 0.9, 0.92)
    metrics.end_refresh()
    metrics.keep_model_series("drift", "fraud")
    assert metrics.end_refresh() == 2 + 3  # fraud's outcome (2), churn's drift (3)
    labels = {"version": "1", "slice": "all", "column": "amount", "method": "psi"}
    assert value(registry, "modelwatch_drift_score", model="fraud", **labels) == 0.3
    count = {"version": "1", "slice": "all"}
    assert value(registry, "modelwatch_drifted_columns", model="fraud", **count) == 1
    assert value(registry, "modelwatch_drift_score", model="churn", **labels) is None
    metrics.end_refresh()  # kept for one refresh only: nothing wrote them since
    assert value(registry, "modelwatch_drift_score", model="fraud", **labels) is None
    with pytest.raises(ValueError, match="unknown refreshed family 'drifts'; expected one of"):
        metrics.keep_model_series("drifts", "fraud")


def test_alert_and_outbox_counts_write_every_state(
    metrics: ModelwatchMetrics, registry: CollectorRegistry
) -> None:
    metrics.set_alert_states({("drift", "firing"): 2})
    metrics.set_outbox({("hook", "dead"): 1})
    assert value(registry, "modelwatch_alerts", rule="drift", state="firing") == 2
    assert value(registry, "modelwatch_alerts", rule="drift", state="pending") == 0
    assert value(registry, "modelwatch_outbox_notifications", receiver="hook", status="dead") == 1
    assert (
        value(registry, "modelwatch_outbox_notifications", receiver="hook", status="pending") == 0
    )


def test_build_info_is_one(registry: CollectorRegistry, metrics: ModelwatchMetrics) -> None:
    from monitor._version import __version__

    infos = [s for m in registry.collect() if m.name == "modelwatch_build_info" for s in m.samples]
    assert len(infos) == 1 and infos[0].value == 1.0
    assert infos[0].labels["version"] == __version__


def test_version_info_labels_are_the_fixed_setting_keys_cut_to_bounded_values(
    metrics: ModelwatchMetrics, registry: CollectorRegistry
) -> None:
    settings = {"precision": "int8", "quantization": "q" * 500, "meta": {"user": "alice"}}
    metrics.set_version_info("fraud", "4-int8", settings)
    metrics.end_refresh()
    [sample] = [s for m in registry.collect() if m.name == "modelwatch_model_version_info"
                for s in m.samples]  # fmt: skip
    assert sample.value == 1.0
    assert sample.labels == {
        "model": "fraud", "version": "4-int8", "precision": "int8", "quantization": "q" * 64,
        "batching": "", "runtime": "",
    }  # fmt: skip
    metrics.end_refresh()  # not written again: a version no longer listed is removed
    assert "modelwatch_model_version_info{" not in generate_latest(registry).decode()
