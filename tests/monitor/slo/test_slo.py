"""Serving SLOs: objectives per window and slice from stored serving summaries, `slo` signals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest
from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Ingestor, RawRecord
from monitor.app.daemon.signals import slo_signals
from monitor.config import CollectConfig, ModelConfig
from monitor.config.serving import CostConfig, SloConfig
from monitor.evaluation.windows import WindowEvaluator
from monitor.failures import list_failures
from monitor.profiles._latency import LatencySketch
from monitor.profiles.serving import ServingSummary
from monitor.slo.evaluate import ServingWindow, cost_per_1k, evaluate_slo, slo_item
from monitor.storage import SloResultRow, WindowServing

START = datetime(2026, 1, 1, tzinfo=UTC)
END = START + timedelta(hours=1)


def window(requests: int, errors: int = 0, latencies: list[float] | None = None) -> ServingWindow:
    summary = ServingSummary(requests, errors, LatencySketch.of(latencies or []))
    return ServingWindow("fraud", "1", START, END, "", summary)


def by_objective(w: ServingWindow, cfg: SloConfig, now: datetime = END) -> dict[str, tuple]:
    return {r.objective: (r.status, r.value, r.threshold) for r in evaluate_slo(w, cfg, now)}


def test_percentiles_decide_latency_not_the_average() -> None:
    # 94 fast requests, 6 very slow: the mean (~64 ms) is under 80, p95 is not
    latencies = [10.0] * 94 + [1000.0] * 6
    got = by_objective(
        window(100, latencies=latencies), SloConfig(latency_p95_ms=80, min_events=100)
    )
    status, value, threshold = got["latency_p95_ms"]
    assert status == "breach" and threshold == 80 and value == pytest.approx(1000, rel=0.01)


def test_error_rate_at_the_exact_threshold_is_ok_and_one_more_breaches() -> None:
    cfg = SloConfig(error_rate=0.02, min_events=100)
    assert by_objective(window(100, errors=2), cfg)["error_rate"][0] == "ok"
    assert by_objective(window(100, errors=3), cfg)["error_rate"][0] == "breach"


def test_too_few_requests_is_insufficient_data_and_no_traffic_has_no_cost() -> None:
    cfg = SloConfig(latency_p99_ms=50, error_rate=0.01, min_rps=1,
                    cost_per_1k=CostConfig(hourly_price=0.70, replicas=2, max=0.2))  # fmt: skip
    got = by_objective(window(0), cfg)
    assert got["latency_p99_ms"][0] == "insufficient_data"
    assert got["error_rate"] == ("insufficient_data", None, 0.01)
    assert got["min_rps"] == ("breach", 0.0, 1)  # no traffic at all is below a throughput floor
    assert got["cost_per_1k"] == ("insufficient_data", None, 0.2)


def test_throughput_and_cost_use_the_elapsed_part_of_the_newest_window() -> None:
    cfg = SloConfig(min_rps=1, cost_per_1k=CostConfig(hourly_price=0.72, replicas=1, max=0.2))
    half = START + timedelta(minutes=30)  # 1,800 requests in 30 minutes: 1 request per second
    got = by_objective(window(1800), cfg, now=half)
    assert got["min_rps"] == ("ok", pytest.approx(1.0), 1)
    assert got["cost_per_1k"][1] == pytest.approx(0.2)  # $0.72 per 3,600 requests
    assert got["cost_per_1k"][0] == "ok"  # exactly the bound
    assert cost_per_1k(0.72, 2, 1.0) == pytest.approx(0.4)


def test_slo_signals_per_objective_and_slice_from_ingested_events(engine: Engine) -> None:
    cfg = ModelConfig(name="fraud", slices=["region"],
                      slo=SloConfig(latency_p95_ms=50, min_events=10))  # fmt: skip
    ing = Ingestor(engine, "src", "kafka", [cfg], CollectConfig())
    now = datetime.now(UTC)
    events = [
        {"request_id": f"r{i}", "model": "fraud", "model_version": "1",
         "timestamp": now.timestamp() - 1, "features": {"x": 1.0}, "prediction": 0.5,
         "metadata": {"region": "eu" if i < 20 else "us"},
         "latency_ms": 20.0 if i < 20 else 200.0}
        for i in range(30)
    ]  # fmt: skip
    records = [RawRecord("p0", i, i + 1, orjson.dumps(e)) for i, e in enumerate(events)]
    assert ing.ingest(records).events == 30
    signals = {s.labels["slice"]: s for s in slo_signals(engine, cfg, now)}
    assert signals["region=eu"].firing is False and signals["region=us"].firing is True
    assert signals["region=us"].kind == "slo" and signals["region=us"].threshold == 50
    assert signals["region=us"].labels["objective"] == "latency_p95_ms"
    assert signals[""].firing is True  # 10 of 30 requests at 200 ms: p95 overall breaches
    assert slo_signals(engine, ModelConfig(name="fraud"), now) == []  # no slo: no signals


def _served(engine: Engine, cfg: ModelConfig, latencies: list[float], first: int = 0) -> None:
    ing = Ingestor(engine, "src", "kafka", [cfg], CollectConfig())
    events = [
        {"request_id": f"r{first + i}", "model": "fraud", "model_version": "1",
         "timestamp": START.timestamp() + 60 + i, "features": {"x": 1.0}, "prediction": 0.5,
         "metadata": {"region": "eu" if i % 2 else "us"}, "latency_ms": ms,
         "error": "timeout" if i == 0 else None}
        for i, ms in enumerate(latencies)
    ]  # fmt: skip
    records = [RawRecord("p0", first + i, first + i + 1, orjson.dumps(e))
               for i, e in enumerate(events)]  # fmt: skip
    assert ing.ingest(records).events == len(events)


def _stored(engine: Engine) -> dict[tuple[str, str], tuple[str, float | None, int]]:
    with Session(engine) as s:
        rows = s.scalars(select(SloResultRow)).all()
        return {(r.slice_key, r.objective): (r.status, r.value, r.n) for r in rows}


def test_evaluate_job_stores_slo_rows_per_slice_for_changed_windows_only(engine: Engine) -> None:
    slo = SloConfig(latency_p95_ms=50, error_rate=0.05, min_events=25)
    cfg = ModelConfig(name="fraud", slices=["region"], slo=slo)
    _served(engine, cfg, [20.0] * 30 + [300.0] * 10)  # no baseline: SLOs are stored anyway
    evaluator = WindowEvaluator(engine, [cfg], 3600)
    evaluator.run()
    got = _stored(engine)
    eu, us = '{"region":"eu"}', '{"region":"us"}'
    assert {k[0] for k in got} == {"", eu, us}
    assert got[("", "latency_p95_ms")][0] == "breach" and got[("", "latency_p95_ms")][2] == 40
    assert got[("", "error_rate")] == ("ok", 1 / 40, 40)  # exactly 1 errored of 40
    assert got[(eu, "latency_p95_ms")][0::2] == ("insufficient_data", 20)  # under min_events
    with Session(engine) as s, s.begin():
        s.execute(delete(SloResultRow))
    evaluator.run()  # nothing changed: nothing re-evaluated
    assert _stored(engine) == {}
    _served(engine, cfg, [20.0] * 60, first=100)  # the window changes: evaluated again
    evaluator.run()
    got = _stored(engine)
    assert got[("", "latency_p95_ms")][2] == 100
    assert got[(eu, "latency_p95_ms")][0] == "breach"  # 5 of 50 at 300 ms
    assert got[("", "error_rate")] == ("ok", 2 / 100, 100)


def test_a_corrupt_window_fails_alone_and_is_retried_after_its_backoff(engine: Engine) -> None:
    cfg = ModelConfig(name="fraud", slo=SloConfig(latency_p95_ms=50, min_events=5))
    _served(engine, cfg, [20.0] * 10)
    later = [dict(e, timestamp=START.timestamp() + 3600 + i) for i, e in enumerate(
        {"request_id": f"x{i}", "model": "fraud", "model_version": "1", "features": {"x": 1.0},
         "prediction": 0.5, "latency_ms": 30.0} for i in range(10))]  # fmt: skip
    ing = Ingestor(engine, "src2", "kafka", [cfg], CollectConfig())
    ing.ingest([RawRecord("p0", i, i + 1, orjson.dumps(e)) for i, e in enumerate(later)])
    with Session(engine) as s, s.begin():  # the first window's sketch is unreadable
        s.execute(update(WindowServing).where(WindowServing.window_start == START)
                  .values(latency={"a": 0.5, "bins": {}, "zero": 0}))  # fmt: skip
    evaluator = WindowEvaluator(engine, [cfg], 3600)
    now = datetime.now(UTC)
    evaluator.run(now)
    assert list(_stored_by_window(engine)) == [(END, "latency_p95_ms")]  # the other window
    [failure] = list_failures(engine, "evaluate")
    assert failure.item == slo_item("fraud", "1", START) and "latency sketch" in failure.error
    with Session(engine) as s, s.begin():  # repaired; the window itself does not change again
        s.execute(update(WindowServing).where(WindowServing.window_start == START)
                  .values(latency={}))  # fmt: skip
    evaluator.run(now)  # before its backoff: not retried
    assert len(_stored_by_window(engine)) == 1
    evaluator.run(now + timedelta(days=1))
    assert (START, "latency_p95_ms") in _stored_by_window(engine)
    assert list_failures(engine, "evaluate") == []


def _stored_by_window(engine: Engine) -> dict[tuple[datetime, str], str]:
    with Session(engine) as s:
        rows = s.scalars(select(SloResultRow).where(SloResultRow.slice_key == "")).all()
        return {(r.window_start, r.objective): r.status for r in rows}
