"""A tick reads again the results of the models it evaluated (and of every model at least every
`scheduler.results_refresh_s`): the signals and gauges of an idle model are its last ones."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy.engine import Engine

from alerts import Signal
from dashboards.metrics import ALL_SLICES, ModelwatchMetrics
from monitor.app.daemon._refresh import ResultRefresh
from monitor.app.daemon.wiring import Monitoring
from monitor.config import Config, parse_config
from monitor.detectors import DriftResult
from monitor.results.store import store_drift_results
from tests.monitor.app.daemon.isolation_data import START, WINDOW, baseline, events, ingest

T0 = START + timedelta(days=1)


def test_refresh_reads_the_due_models_of_this_tick_and_the_one_before() -> None:
    refresh = ResultRefresh(300.0)
    assert refresh.models(T0, ["a"]) is None  # the first tick reads every model
    assert refresh.models(T0 + timedelta(seconds=10), ["b"]) == {"b", "a"}
    assert refresh.models(T0 + timedelta(seconds=20), []) == {"b"}
    assert refresh.models(T0 + timedelta(seconds=30), []) == set()
    assert refresh.models(T0 + timedelta(seconds=40), None) is None  # due not known: all
    assert refresh.models(T0 + timedelta(seconds=50), []) == set()
    assert refresh.models(T0 + timedelta(seconds=340), []) is None  # every 300 s: all
    assert refresh.models(T0 + timedelta(seconds=100), []) is None  # the clock went back
    every_tick = ResultRefresh(0.0)
    assert every_tick.models(T0, []) is None
    assert every_tick.models(T0 + timedelta(seconds=1), ["a"]) is None


@pytest.fixture
def monitored(sqlite_engine: Engine) -> Iterator[tuple[Engine, Config, Monitoring]]:
    config = parse_config(
        {"database_url": str(sqlite_engine.url), "models": [{"name": "a"}, {"name": "b"}]},
        env={},
    )
    for m in ("a", "b"):
        baseline(sqlite_engine, m, ["f0"])
    ingest(sqlite_engine, config.models, events("a", ["f0"], 1, 40) + events("b", ["f0"], 1, 40))
    metrics = ModelwatchMetrics(CollectorRegistry(), config.models)
    yield sqlite_engine, config, Monitoring(sqlite_engine, config, metrics)


def _drift(monitoring: Monitoring, model: str) -> dict[str, Signal]:
    signals = monitoring._last[f"signals drift {model}"]
    return {s.labels["column"]: s for s in signals if s.kind == "drift"}


def _gauge(monitoring: Monitoring, model: str, column: str) -> float | None:
    assert monitoring.metrics is not None
    registry = monitoring.metrics.registry
    labels = {"model": model, "version": "1", "slice": ALL_SLICES, "column": column}
    found = [
        s.value
        for family in registry.collect()
        if family.name == "modelwatch_drift_score"
        for s in family.samples
        if all(s.labels.get(k) == v for k, v in labels.items())
    ]
    return found[0] if found else None


def _elsewhere(engine: Engine, model: str, value: float) -> None:
    """A drift result of a newer window stored by another process (no change marker)."""
    result = DriftResult("extra", None, "numeric", "psi", value, 0.1, None, 100, 100, "drift")
    store_drift_results(engine, model, "1", (START + WINDOW, START + 2 * WINDOW), [result])


def test_an_idle_model_keeps_its_last_signals_until_the_full_refresh(
    monitored: tuple[Engine, Config, Monitoring],
) -> None:
    engine, config, monitoring = monitored
    monitoring(now=T0)
    monitoring(now=T0 + timedelta(seconds=30))  # reads the models due in the tick before
    assert set(_drift(monitoring, "a")) == {"f0", "prediction"}
    _elsewhere(engine, "a", 0.7)
    shifted = events("b", ["f0"], 2, 40)[40:]
    for e in shifted:
        e["features"]["f0"] += 6.0  # b's second window drifts
    ingest(engine, config.models, shifted, 80)
    monitoring(now=T0 + timedelta(seconds=60))
    # b was evaluated this tick: its newest window's signals and gauges at once.
    assert _drift(monitoring, "b")["f0"].firing
    assert (_gauge(monitoring, "b", "f0") or 0.0) > 0.1
    # a was idle: what another process stored is not read yet; its series stay.
    assert "extra" not in _drift(monitoring, "a")
    assert _gauge(monitoring, "a", "extra") is None
    assert _gauge(monitoring, "a", "f0") is not None
    monitoring(now=T0 + timedelta(seconds=120))
    assert "extra" not in _drift(monitoring, "a")
    monitoring(now=T0 + timedelta(seconds=301))  # results_refresh_s (300) since the first
    assert _drift(monitoring, "a")["extra"].value == pytest.approx(0.7)
    assert _gauge(monitoring, "a", "extra") == pytest.approx(0.7)


def test_with_refresh_zero_every_tick_reads_every_model(
    monitored: tuple[Engine, Config, Monitoring],
) -> None:
    engine, config, _ = monitored
    config = config.model_copy(
        update={"scheduler": config.scheduler.model_copy(update={"results_refresh_s": 0.0})}
    )
    monitoring = Monitoring(engine, config)
    monitoring(now=T0)
    _elsewhere(engine, "a", 0.4)
    monitoring(now=T0 + timedelta(seconds=10))
    assert _drift(monitoring, "a")["extra"].value == pytest.approx(0.4)


def test_the_in_process_tick_keeps_decoded_baselines_between_ticks(
    monitored: tuple[Engine, Config, Monitoring],
) -> None:
    engine, config, monitoring = monitored
    monitoring(now=T0)
    assert monitoring.windows.references.loads == 2  # a's and b's, decoded once
    ingest(engine, config.models, events("b", ["f0"], 2, 40)[40:], 80)
    assert [e.window.model for e in monitoring(now=T0 + timedelta(seconds=60))] == ["b"]
    assert monitoring.windows.references.loads == 2  # b's baseline came from the cache
