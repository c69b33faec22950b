"""Measures at the edge (monitor.common.measures): aliases in their units, one sketch per measure
per window and slice on both paths; bad values and generative measures on a model that is not
generative are dead letters naming the field."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Ingestor
from collectors._base import DecodeError
from collectors._serving import serving_fields
from monitor.config import CollectConfig, ModelConfig
from monitor.profiles.serving import ServingSummary
from monitor.storage import DeadLetter, WindowServing
from tests.collectors.conftest import event
from tests.collectors.test_serving import records, summaries

MODELS = [ModelConfig(name="fraud", slices=["region"]), ModelConfig(name="chat", generative=True)]


def test_aliases_are_stored_under_the_canonical_name_in_its_unit_on_both_paths(
    engine: Engine,
) -> None:
    ing = Ingestor(engine, "src", "kafka", MODELS, CollectConfig())
    batch = [
        event(0, model="chat", ttft_ms=200.0, input_tokens=10, output_tokens=50, latency_ms=1000),
        event(1, model="chat", **{"gen_ai.server.time_to_first_token": 0.2,
                                  "gen_ai.usage.output_tokens": 50, "mean_itl_ms": 16.0}),
        event(2, model="chat", time_to_first_token_seconds=0.2, tokens_per_second=80.0,
              completion_tokens=50, DCGM_FI_DEV_FB_USED=20_000),
        event(3, model="chat", ttft_ms=None, latency_ms=None),  # null: not carried
        event(4, model="chat", ttft_ms=200.0, **{"gen_ai.server.time_to_first_token": 0.2}),
    ]  # fmt: skip
    for version, columnar in (("1", True), ("2", False)):  # each path its own version
        ing.planner.columnar = columnar
        got = [{**e, "model_version": version} for e in batch]
        assert ing.ingest(records(got, first=10 * int(version))).events == 5
    with Session(engine) as s:
        rows = s.scalars(select(WindowServing).where(WindowServing.slice_key == "")).all()
    by_version = {r.version: ServingSummary.from_row(r).measures for r in rows}
    assert by_version["1"] == by_version["2"]  # both paths accept and store the same
    got = by_version["1"]
    assert {k: v.n for k, v in got.items()} == {
        "ttft_ms": 4, "tpot_ms": 1, "tokens_per_s": 2, "input_tokens": 1, "output_tokens": 3,
        "gpu_memory_mb": 1,
    }  # fmt: skip
    assert math.isclose(got["ttft_ms"].quantile(0.5) or 0, 200, rel_tol=0.01)
    # tokens/s derived for event 0 (50 tokens in 1 s), given for event 2
    low, high = (got["tokens_per_s"].quantile(q) or 0 for q in (0, 1))
    assert math.isclose(low, 50, rel_tol=0.01) and math.isclose(high, 80, rel_tol=0.01)


def test_bad_measures_are_dead_letters_with_a_reason(engine: Engine) -> None:
    ing = Ingestor(engine, "src", "kafka", MODELS, CollectConfig())
    bad = [
        event(0, model="chat", ttft_ms=-1),
        event(1, model="chat", **{"gen_ai.server.time_per_output_token": -0.5}),
        event(2, model="chat", input_tokens="12"),
        event(3, model="chat", ttft_ms=100.0, time_to_first_token_seconds=0.2),
        event(4, output_tokens=5),  # fraud is not generative
        event(5, gpu_utilization_percent=-3),
    ]
    ok = [event(6, gpu_utilization_percent=55.0, batch_size=8), event(7, model="chat")]
    assert ing.ingest(records([*bad, *ok])).events == 2
    with Session(engine) as s:
        rows = sorted(tuple(r) for r in s.execute(select(DeadLetter.reason, DeadLetter.detail)))
    assert rows == [
        ("not_generative", "output_tokens: a generative measure, but the model is not declared "
         "generative"),
        ("wrong_type", "gen_ai.server.time_per_output_token: expected a non-negative finite "
         "number, got -0.5"),
        ("wrong_type", "gpu_utilization_percent: expected a non-negative finite number, got -3"),
        ("wrong_type", "input_tokens: expected a non-negative finite number, got '12'"),
        ("wrong_type",
         "ttft_ms: differs from time_to_first_token_seconds (one measure, two names)"),
        ("wrong_type", "ttft_ms: expected a non-negative finite number, got -1"),
    ]  # fmt: skip
    assert summaries(engine)[""].measure("batch_size").n == 1


def test_resource_measures_need_no_generative_model() -> None:
    assert serving_fields({"queue_depth": 3, "cpu_percent": 150.0}) == {
        "queue_depth": 3.0, "cpu_percent": 150.0,
    }  # fmt: skip
    with pytest.raises(DecodeError, match="not declared generative"):
        serving_fields({"prompt_tokens": 3})
    for value in (math.inf, math.nan):  # JSON cannot carry them; other adapters might
        with pytest.raises(DecodeError, match="non-negative finite"):
            serving_fields({"gen_ai.server.time_to_first_token": value}, generative=True)
    assert serving_fields({"prompt_tokens": 3}, generative=True) == {"input_tokens": 3.0}
