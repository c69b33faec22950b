"""A canary's latency criterion names the stage that moved (monitor.slo.breakdown)."""

from __future__ import annotations

from monitor.canary._criteria import latency
from monitor.canary._evidence import Evidence
from monitor.config import ModelConfig
from monitor.config.serving import CanaryConfig
from monitor.profiles._latency import LatencySketch
from monitor.profiles.serving import ServingSummary

CFG = ModelConfig(name="m", canary=CanaryConfig(min_events=100, min_labels=50))


def served(n: int, total: float, model: float, queue: float) -> Evidence:
    summary = ServingSummary(
        n,
        0,
        LatencySketch.of([total] * n),
        LatencySketch.of([model] * n),
        stages={"queue": LatencySketch.of([queue] * n)},
    )
    return Evidence("v", {}, summary, ())


def test_a_slower_canary_names_the_stage_that_moved() -> None:
    got = latency(0.95, None, served(500, 100.0, 50.0, 10.0), served(500, 130.0, 78.0, 10.0), CFG)
    assert got.status == "fail"
    assert got.detail == "ratio 1.3; p95 +30 ms, of which model +28 ms"
