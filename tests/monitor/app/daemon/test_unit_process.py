"""The evaluation worker's metrics reach the replica's registry through a pipe: every update a
unit makes, nothing else, and a garbled frame is skipped (the worker process itself, killed
mid-unit under a real `serve`: test_shared_evaluation.py)."""

from __future__ import annotations

import multiprocessing
import threading

from prometheus_client import CollectorRegistry

from dashboards.metrics import ModelwatchMetrics
from monitor.app.daemon._unit_process import RELAYED, RelayedMetrics, apply_updates
from monitor.config import ModelConfig, parse_config

CONFIG = parse_config({"models": [{"name": "fraud"}]}, env={})


def _parent() -> tuple[ModelwatchMetrics, CollectorRegistry]:
    registry = CollectorRegistry()
    return ModelwatchMetrics(registry, [ModelConfig(name="fraud")]), registry


def _apply(reader: object, metrics: ModelwatchMetrics) -> threading.Thread:
    thread = threading.Thread(target=apply_updates, args=(reader, metrics), daemon=True)
    thread.start()
    return thread


def test_a_units_updates_reach_the_parents_registry_and_nothing_else() -> None:
    ctx = multiprocessing.get_context("spawn")
    reader, writer = ctx.Pipe(duplex=False)
    parent, registry = _parent()
    applier = _apply(reader, parent)
    child = RelayedMetrics(CONFIG, writer)
    child.observe_window_evaluation("fraud", 0.25)
    child.observe_window_evaluation("fraud", 0.5)
    child.record_unit("fraud", "done")
    child.record_job_failure("evaluate")
    child.record_units_retried(3)
    child.record_units_deferred(7)  # the producer's: stays in the worker's own registry
    child.close()
    writer.close()
    applier.join(5)
    assert not applier.is_alive()  # the pipe's end ended the reader

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("modelwatch_window_evaluation_seconds_count", model="fraud") == 2
    assert value("modelwatch_window_evaluation_seconds_sum", model="fraud") == 0.75
    assert value("modelwatch_evaluation_units_total", model="fraud", outcome="done") == 1
    assert value("modelwatch_job_failures_total", job="evaluate") == 1
    assert value("modelwatch_evaluation_units_retried_total") == 3
    assert value("modelwatch_evaluation_units_deferred_total") == 0
    assert "record_units_deferred" not in RELAYED


def test_garbled_or_unknown_frames_are_skipped_and_later_ones_applied() -> None:
    ctx = multiprocessing.get_context("spawn")
    reader, writer = ctx.Pipe(duplex=False)
    parent, registry = _parent()
    applier = _apply(reader, parent)
    for frame in (
        b"not json",
        b'["__init__", {}]',  # not an update a unit makes
        b'["record_unit", 1]',  # wrong arguments
        b"{}",
        b'["record_unit", "fraud", "done"]',
    ):
        writer.send_bytes(frame)
    writer.close()
    applier.join(5)
    assert not applier.is_alive()
    labels = {"model": "fraud", "outcome": "done"}
    assert registry.get_sample_value("modelwatch_evaluation_units_total", labels) == 1


def test_updates_past_the_workers_capacity_are_dropped_never_waited_for() -> None:
    ctx = multiprocessing.get_context("spawn")
    reader, writer = ctx.Pipe(duplex=False)  # nobody reads: the pipe fills
    child = RelayedMetrics(CONFIG, writer)
    for _ in range(30_000):  # returns at once although nothing is read
        child.record_unit("fraud", "done")
    assert child.dropped > 0
    reader.close()  # the sender's next write fails; it stops
    child.close(timeout=0.1)
