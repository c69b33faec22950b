"""SLO objectives on measures (monitor.common.measures): percentiles per window from the
mergeable sketch, TTFT and GPU memory bounds, lower bounds where higher is better, the reason
for insufficient data, cost per 1,000 tokens, and names checked against the registry."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from monitor.common.measures import MEASURES, objective_of, objectives
from monitor.config.serving import CostConfig, SloConfig, TokenCostConfig
from monitor.profiles._latency import LatencySketch
from monitor.profiles.serving import ServingSummary
from monitor.slo.evaluate import ServingWindow, evaluate_slo

START = datetime(2026, 1, 1, tzinfo=UTC)
END = START + timedelta(hours=1)


def window(n: int = 200, **measures: list[float]) -> ServingWindow:
    sketches = {k: LatencySketch.of(v) for k, v in measures.items()}
    summary = ServingSummary(n, 0, LatencySketch.of([10.0] * n), measures=sketches)
    return ServingWindow("chat", "1", START, END, "", summary)


def judged(w: ServingWindow, **slo: object) -> dict[str, tuple[float | None, str, str | None]]:
    cfg = SloConfig(min_events=100, **slo)  # type: ignore[arg-type]
    return {r.objective: (r.value, r.status, r.detail) for r in evaluate_slo(w, cfg, END)}


def test_percentiles_per_window_come_from_the_merged_sketches() -> None:
    ttft = [float(i) for i in range(1, 1001)]  # 1..1000 ms
    halves = [ServingSummary(500, measures={"ttft_ms": LatencySketch.of(ttft[i::2])})
              for i in (0, 1)]  # fmt: skip
    merged = halves[0].merge(halves[1]).measure("ttft_ms")
    for q in (0.5, 0.95, 0.99):
        exact = ttft[round(q * 999)]
        assert math.isclose(merged.quantile(q) or 0, exact, rel_tol=0.011)


def test_ttft_and_gpu_memory_objectives_breach_above_their_bounds() -> None:
    w = window(ttft_ms=[100.0] * 180 + [900.0] * 20, gpu_memory_mb=[30_000.0] * 199 + [75_000.0])
    got = judged(w, measures={"ttft_p95_ms": 500, "ttft_p50_ms": 500, "gpu_memory_max_mb": 70_000})
    assert got["ttft_p95_ms"][1] == "breach" and math.isclose(
        got["ttft_p95_ms"][0], 900, rel_tol=0.01
    )  # type: ignore[arg-type]
    assert got["ttft_p50_ms"][1] == "ok"
    assert got["gpu_memory_max_mb"][1] == "breach"


def test_higher_is_better_measures_are_bounded_from_below() -> None:
    w = window(tokens_per_s=[50.0] * 190 + [5.0] * 10)
    assert judged(w, measures={"tokens_per_s_p5": 20})["tokens_per_s_p5"][1] == "breach"
    assert judged(w, measures={"tokens_per_s_p50": 20})["tokens_per_s_p50"][1] == "ok"


def test_missing_or_too_few_samples_are_insufficient_data_with_a_reason() -> None:
    got = judged(window(tpot_ms=[20.0] * 12), measures={"ttft_p95_ms": 500, "tpot_p95_ms": 50})
    assert got["ttft_p95_ms"] == (None, "insufficient_data", "no event carried ttft_ms")
    assert got["tpot_p95_ms"][1:] == (
        "insufficient_data", "12 events carried tpot_ms, fewer than slo.min_events (100)",
    )  # fmt: skip


def test_cost_per_1k_tokens_per_token_or_per_hour() -> None:
    w = window(input_tokens=[100.0] * 200, output_tokens=[300.0] * 200)  # 80,000 tokens
    per_token = TokenCostConfig(input_price=0.001, output_price=0.003)
    got = judged(w, cost_per_1k_tokens=per_token)["cost_per_1k_tokens"][0]
    assert math.isclose(got or 0, (0.001 * 100 + 0.003 * 300) / 400, rel_tol=0.01)
    hourly = judged(w, cost_per_1k=CostConfig(hourly_price=8.0),
                    cost_per_1k_tokens=TokenCostConfig())["cost_per_1k_tokens"][0]  # fmt: skip
    assert math.isclose(hourly or 0, 8.0 / 80_000 * 1000, rel_tol=0.02)


def test_objective_names_are_checked_against_the_registry() -> None:
    assert {"ttft_p95_ms", "tpot_p95_ms", "gpu_memory_max_mb", "tokens_per_s_p5"} <= set(
        objectives()
    )
    assert (
        objective_of("gpu_utilization_p95_percent").measure is MEASURES["gpu_utilization_percent"]
    )
    with pytest.raises(ValidationError, match="unknown measure objective 'ttft_p96_ms'"):
        SloConfig(measures={"ttft_p96_ms": 1})
    with pytest.raises(ValidationError, match="cost_per_1k_tokens: give input_price"):
        SloConfig(cost_per_1k_tokens=TokenCostConfig())
