"""Latency per stage: sketches merge exactly, shares and the stage that moved (known answers)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.profiles._latency import RELATIVE_ERROR, LatencySketch
from monitor.profiles.serving import STAGES, ServingSummary
from monitor.slo.breakdown import latency_breakdown, latency_shift

MS = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
STAGE_COLUMN = {s: "model_latency_ms" if s == "model" else f"{s}_ms" for s in STAGES}


def columns(rows: list[dict[str, float | None]]) -> dict[str, list[float | None]]:
    names = {"latency_ms", *STAGE_COLUMN.values()}
    return {n: [r.get(n) for r in rows] for n in names}


def summary(rows: list[dict[str, float | None]]) -> ServingSummary:
    return ServingSummary.of(columns(rows), range(len(rows)))


EVENT = st.fixed_dictionaries({}, optional={n: MS for n in ("latency_ms", *STAGE_COLUMN.values())})


@settings(max_examples=60, deadline=None)
@given(st.lists(EVENT, max_size=30), st.lists(EVENT, max_size=30))
def test_merged_summaries_are_the_summary_of_the_concatenated_events(a: list, b: list) -> None:
    merged, whole = summary(a).merge(summary(b)), summary(a + b)
    assert merged.latency == whole.latency
    for stage in STAGES:
        assert merged.stage(stage) == whole.stage(stage), stage
    # stored and read back unchanged
    assert ServingSummary.from_row(_Row(merged.to_row())).stages == merged.stages


@settings(max_examples=60, deadline=None)
@given(st.lists(MS, max_size=40), st.lists(MS, max_size=40))
def test_sketch_merge_is_the_sketch_of_the_concatenation(a: list, b: list) -> None:
    assert LatencySketch.of(a).merge(LatencySketch.of(b)) == LatencySketch.of(a + b)


class _Row:
    def __init__(self, doc: dict) -> None:
        self.__dict__.update(doc)


def test_stage_percentiles_are_within_the_sketch_error_of_the_exact_ones() -> None:
    rng = np.random.default_rng(7)
    model = rng.lognormal(3, 0.5, 2000)
    queue = rng.exponential(5, 2000)
    rows = [{"latency_ms": m + q, "model_latency_ms": m, "queue_ms": q}
            for m, q in zip(model, queue, strict=True)]  # fmt: skip
    got = latency_breakdown(summary(rows))
    assert [s.stage for s in got.stages] == ["queue", "model"]  # the order requests pass them
    for stage, values in (("queue", queue), ("model", model)):
        row = next(s for s in got.stages if s.stage == stage)
        for q, value in ((0.5, row.p50), (0.95, row.p95), (0.99, row.p99)):
            exact = np.quantile(values, q, method="lower")
            assert value == pytest.approx(exact, rel=2 * RELATIVE_ERROR), (stage, q)
    model_row = got.stages[1]
    assert model_row.p95_share == pytest.approx(model_row.p95 / got.p95)
    # means add: every event carries both stages and latency is their sum
    assert sum(s.mean_share or 0 for s in got.stages) == pytest.approx(1, rel=2 * RELATIVE_ERROR)


def _requests(n: int, total: float, **stages: float) -> list[dict[str, float | None]]:
    row: dict[str, float | None] = {"latency_ms": total}
    row.update({STAGE_COLUMN[k]: v for k, v in stages.items()})
    return [dict(row) for _ in range(n)]


def test_the_stage_that_moved_is_named_with_its_change() -> None:
    stable = summary(_requests(200, 100.0, queue=10.0, model=50.0, network=30.0))
    canary = summary(_requests(200, 118.0, queue=12.0, model=66.0, network=30.0))
    shift = latency_shift(stable, canary)
    # each value within 1 %: 100 -> 100.49, 118 -> 117.93, 50 -> 49.90, 66 -> 66.03
    assert shift.delta == pytest.approx(17.44, abs=0.01)
    assert shift.stage is not None and shift.stage.stage == "model"
    assert shift.text() == "p95 +17 ms, of which model +16 ms"
    network = next(s for s in shift.stages if s.stage == "network")
    assert network.delta == 0 and not network.moved
    assert latency_shift(stable, canary, q=0.99).text().startswith("p99 +17 ms")


def test_no_stage_named_without_stage_timings_or_when_none_moved() -> None:
    stable = summary(_requests(50, 100.0))
    assert latency_shift(stable, summary(_requests(50, 118.0))).text() == "p95 +17 ms"
    flat = summary(_requests(50, 100.0, model=50.0))
    up = summary(_requests(50, 150.0, model=50.0))
    assert latency_shift(flat, up).text() == "p95 +49 ms, no reported stage moved"
    # a faster total names the stage that got faster, not one that got slower
    down = summary(_requests(50, 80.0, model=30.0, queue=15.0))
    before = summary(_requests(50, 100.0, model=50.0, queue=10.0))
    assert latency_shift(before, down).text() == "p95 -20 ms, of which model -20 ms"
    assert latency_shift(ServingSummary(), up).text() == ""


def test_shares_of_p95_are_defined_per_stage_and_need_not_add_up() -> None:
    # the slow queue requests are not the slow model requests: each stage is slow in only 5 % of
    # requests, so neither stage's p95 sees it, while 10 % of requests are slow end to end
    rows = [{"latency_ms": 20.0, "queue_ms": 10.0, "model_latency_ms": 10.0}] * 90
    rows += [{"latency_ms": 110.0, "queue_ms": 100.0, "model_latency_ms": 10.0}] * 5
    rows += [{"latency_ms": 110.0, "queue_ms": 10.0, "model_latency_ms": 100.0}] * 5
    got = latency_breakdown(summary(rows))
    shares = {s.stage: s.p95_share for s in got.stages}
    assert shares == {
        "queue": pytest.approx(0.091, abs=0.001),
        "model": pytest.approx(0.091, abs=0.001),
    }
    assert got.text() == "p95 111 ms; stage p95: queue 10.1 ms (9%), model 10.1 ms (9%)"
    # the means do add: (14.5 + 14.5) / 29
    assert [s.mean_share for s in got.stages] == [pytest.approx(0.5, rel=0.02)] * 2
    assert latency_breakdown(ServingSummary()).text() == "no latency"
