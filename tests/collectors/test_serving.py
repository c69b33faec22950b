"""Operational event fields (latency, errors, attributions) through the Ingestor, on SQLite
and PostgreSQL: validated with one-line dead letters, stored per window and slice, merged."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Ingestor, RawRecord
from monitor.config import CollectConfig, ModelConfig
from monitor.profiles._latency import RELATIVE_ERROR, LatencySketch
from monitor.profiles.serving import ServingSummary
from monitor.storage import DeadLetter, WindowServing
from tests.collectors.conftest import event

MODELS = [ModelConfig(name="fraud", slices=["region"])]


def records(objs: list[Any], first: int = 0) -> list[RawRecord]:
    return [RawRecord("p0", first + i, first + i + 1, orjson.dumps(o)) for i, o in enumerate(objs)]


def summaries(engine: Engine) -> dict[str, ServingSummary]:
    with Session(engine) as s:
        rows = s.scalars(select(WindowServing)).all()
        return {r.slice_key: ServingSummary.from_row(r) for r in rows}


@pytest.mark.parametrize("columnar", [True, False])
def test_latency_errors_and_attributions_are_stored_per_slice_and_merged(
    engine: Engine, columnar: bool
) -> None:
    ing = Ingestor(engine, "src", "kafka", MODELS, CollectConfig())
    ing.planner.columnar = columnar  # both paths store the same (test_columnar holds them equal)
    first = [
        event(i, latency_ms=float(i + 1), model_latency_ms=0.5, error="timeout" if i < 2 else None,
              attributions={"amount": -0.5 if i % 2 else 0.25})
        for i in range(10)
    ]  # fmt: skip
    second = [event(i, latency_ms=100.0) for i in range(10, 20)]  # later batch, same window
    assert ing.ingest(records(first)).events == 10
    assert ing.ingest(records(second, first=10)).events == 10
    got = summaries(engine)
    overall = got[""]
    assert (overall.requests, overall.errors) == (20, 2)  # errored requests still count
    assert overall.latency.n == 20 and overall.model_latency.n == 10
    p50 = overall.latency.quantile(0.5)
    assert p50 is not None and abs(p50 - 10.0) <= 10.0 * RELATIVE_ERROR
    assert overall.mean_abs_attribution() == pytest.approx({"amount": 0.375})
    eu = got['{"region":"eu"}']
    assert eu.requests == 10 and eu.errors == 1


def test_bad_operational_fields_are_dead_letters_naming_the_field(engine: Engine) -> None:
    ing = Ingestor(engine, "src", "kafka", MODELS, CollectConfig())
    bad = [
        event(0, latency_ms=-3),
        event(1, model_latency_ms="fast"),
        event(2, error=500),
        event(3, attributions={"amount": "high"}),
        event(4, latency_ms=True),
    ]
    result = ing.ingest(records([*bad, event(5, latency_ms=4.0)]))
    assert result.events == 1  # one bad event never costs its neighbours
    with Session(engine) as s:
        details = sorted(s.scalars(select(DeadLetter.detail)).all())
    assert details == [
        "attributions.amount: expected a finite number, got 'high'",
        "error: expected string or null, got int",
        "latency_ms: expected a non-negative finite number, got -3",
        "latency_ms: expected a non-negative finite number, got True",
        "model_latency_ms: expected a non-negative finite number, got 'fast'",
    ]


def test_events_without_operational_fields_write_no_serving_rows(engine: Engine) -> None:
    ing = Ingestor(engine, "src", "kafka", MODELS, CollectConfig())
    assert ing.ingest(records([event(i) for i in range(5)])).events == 5
    assert summaries(engine) == {}


@pytest.mark.parametrize("n", [1, 2, 100, 5000])
def test_sketch_quantiles_are_within_the_stated_relative_error(n: int) -> None:
    values = [0.37 * 1.013**i for i in range(n)]
    sketch = LatencySketch.of(values)
    for q in (0.0, 0.5, 0.95, 0.99, 1.0):
        exact = sorted(values)[int(q * (n - 1))]
        got = sketch.quantile(q)
        assert got is not None and abs(got - exact) <= exact * RELATIVE_ERROR


def test_sketch_merge_equals_the_sketch_of_the_concatenation() -> None:
    a, b = [0.0, 1.0, 2.5, 1e4], [3.0, 0.0005, 7.0]
    merged = LatencySketch.of(a).merge(LatencySketch.of(b))
    assert merged == LatencySketch.of(a + b)
    assert LatencySketch.from_json(merged.to_json()) == merged
    assert LatencySketch().quantile(0.95) is None  # empty: no value, never NaN
    assert LatencySketch.of([0.0, 0.0]).quantile(0.99) == 0.0
