"""Canary criteria on measures: a canary whose time to first token grew fails `ttft_p95`
(ratio to the stable's, and the SLO when tighter); no criterion where the stable lacks it."""

from __future__ import annotations

from monitor.canary._analysis import criteria_of
from monitor.canary._evidence import Evidence
from monitor.config import ModelConfig
from monitor.config.serving import CanaryConfig, SloConfig
from monitor.profiles._latency import LatencySketch
from monitor.profiles.serving import ServingSummary

CFG = ModelConfig(name="chat", generative=True, canary=CanaryConfig(min_events=100))


def served(n: int, **measures: float) -> Evidence:
    sketches = {k: LatencySketch.of([v] * n) for k, v in measures.items()}
    return Evidence("v", {}, ServingSummary(n, 0, measures=sketches), ())


def by_name(stable: Evidence, canary: Evidence, cfg: ModelConfig = CFG) -> dict[str, object]:
    return {c.name: c for c in criteria_of(stable, canary, cfg)}


def test_a_canary_with_a_slower_first_token_fails_ttft_p95() -> None:
    got = by_name(served(500, ttft_ms=200.0, tokens_per_s=50.0),
                  served(500, ttft_ms=300.0, tokens_per_s=49.0))  # fmt: skip
    ttft, speed = got["ttft_p95"], got["tokens_per_s_p5"]
    assert ttft.status == "fail" and ttft.detail.startswith("ratio 1.5")  # type: ignore[attr-defined]
    assert speed.status == "ok"  # type: ignore[attr-defined]
    assert "tpot_p95" not in got  # the stable version's events carry no tpot


def test_the_slo_bound_decides_when_tighter_and_few_samples_are_insufficient() -> None:
    cfg = CFG.model_copy(update={"slo": SloConfig(measures={"ttft_p95_ms": 220})})
    got = by_name(served(500, ttft_ms=200.0), served(500, ttft_ms=230.0), cfg)["ttft_p95"]
    assert (got.status, got.threshold) == ("fail", 220)  # type: ignore[attr-defined]
    few = by_name(served(500, ttft_ms=200.0), served(20, ttft_ms=200.0))["ttft_p95"]
    assert few.status == "insufficient_data"  # type: ignore[attr-defined]
    assert few.detail == "too few ttft_ms samples"  # type: ignore[attr-defined]
