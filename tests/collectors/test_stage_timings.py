"""Stage timings (queue, preprocess, model, postprocess, network) at the edge, on SQLite and
PostgreSQL: any subset stored per window and slice; a bad one a dead letter naming the field."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Ingestor
from collectors._base import DecodeError
from collectors._serving import serving_fields
from monitor.config import CollectConfig
from monitor.storage import DeadLetter
from tests.collectors.conftest import event
from tests.collectors.test_serving import MODELS, records, summaries


@pytest.mark.parametrize("columnar", [True, False])
def test_any_subset_of_stages_is_stored_and_model_ms_is_model_latency_ms(
    engine: Engine, columnar: bool
) -> None:
    ing = Ingestor(engine, "src", "kafka", MODELS, CollectConfig())
    ing.planner.columnar = columnar
    batch = [
        event(0, latency_ms=30.0, queue_ms=5.0, model_ms=20.0, network_ms=5.0),
        event(1, latency_ms=30.0, preprocess_ms=2.0, model_latency_ms=20.0, postprocess_ms=1),
        event(2, latency_ms=30.0, model_ms=20.0, model_latency_ms=20.0),  # both, the same
        event(3, latency_ms=30.0),
    ]
    assert ing.ingest(records(batch)).events == 4
    overall = summaries(engine)[""]
    assert overall.model_latency.n == 3
    assert {k: v.n for k, v in overall.stages.items()} == {
        "queue": 1, "preprocess": 1, "postprocess": 1, "network": 1,
    }  # fmt: skip
    assert ing.ingest(records([event(4, queue_ms=7.0)], first=4)).events == 1  # merged in place
    assert summaries(engine)[""].stage("queue").n == 2


def test_bad_stage_timings_are_dead_letters_naming_the_field(engine: Engine) -> None:
    ing = Ingestor(engine, "src", "kafka", MODELS, CollectConfig())
    bad = [
        event(0, queue_ms=-1),
        event(1, preprocess_ms="2"),
        event(2, model_ms=True),
        event(3, postprocess_ms=[1]),
        event(4, model_ms=4.0, model_latency_ms=5.0),
        event(5, network_ms=-0.001),
    ]
    assert ing.ingest(records([*bad, event(6, network_ms=None)])).events == 1  # missing is fine
    with Session(engine) as s:
        details = sorted(s.scalars(select(DeadLetter.detail)).all())
    assert details == [
        "model_ms: differs from model_latency_ms (one field, two names)",
        "model_ms: expected a non-negative finite number, got True",
        "network_ms: expected a non-negative finite number, got -0.001",
        "postprocess_ms: expected a non-negative finite number, got [1]",
        "preprocess_ms: expected a non-negative finite number, got '2'",
        "queue_ms: expected a non-negative finite number, got -1",
    ]


@pytest.mark.parametrize("field", ["queue_ms", "model_ms", "network_ms"])
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_non_finite_stage_timings_are_refused(field: str, value: float) -> None:
    # JSON cannot carry them (the payload is invalid JSON); an adapter building events could
    with pytest.raises(
        DecodeError, match=f"^wrong_type: {field}: expected a non-negative finite number"
    ):
        serving_fields({field: value})
