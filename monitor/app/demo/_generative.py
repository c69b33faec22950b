"""The demo's generative model: an assistant whose time to first token rises with its GPU.

Each window a few requests of `assistant` (declared `generative`) carry OpenTelemetry GenAI
fields as a serving stack exports them (`gen_ai.server.time_to_first_token` in seconds, token
usage) and the GPU utilisation of the replica. In the last window the GPU saturates and the time
to first token triples: its p95 breaches the `ttft_p95_ms` objective, and the latency breakdown
shows the GPU beside it. Draws use their own seeded generator: the fraud traffic is unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.engine import Engine

from monitor.config.serving import SloConfig
from monitor.profiles.serving import ServingSummary
from monitor.slo.evaluate import slo_results
from monitor.storage import WindowServing, session_factory

MODEL = "assistant"
PER_WINDOW = 120
TTFT_SLO_MS = 600.0


def assistant_events(
    seed: int, w: int, windows: int, start: datetime, window: timedelta
) -> list[dict[str, Any]]:
    """Window `w`'s assistant requests (the last of `windows` on a saturated GPU)."""
    rng = np.random.default_rng(seed * 7919 + w)
    saturated = w == windows - 1
    ttft = rng.lognormal(np.log(600 if saturated else 200), 0.25, PER_WINDOW)
    tpot = rng.lognormal(np.log(30 if saturated else 20), 0.2, PER_WINDOW)
    inputs = rng.integers(50, 800, PER_WINDOW)
    outputs = rng.integers(20, 400, PER_WINDOW)
    gpu = np.clip(rng.normal(98 if saturated else 60, 2 if saturated else 8, PER_WINDOW), 0, 100)
    offsets = np.sort(rng.random(PER_WINDOW)) * window.total_seconds()
    return [
        {
            "request_id": f"a{w}-{i}",
            "model": MODEL,
            "model_version": "1",
            "timestamp": (start + w * window + timedelta(seconds=float(offsets[i]))).isoformat(),
            "features": {"prompt_tokens": float(inputs[i])},
            "prediction": "answered",
            "latency_ms": float(ttft[i] + outputs[i] * tpot[i]),
            "gen_ai.server.time_to_first_token": float(ttft[i]) / 1000,
            "gen_ai.server.time_per_output_token": float(tpot[i]) / 1000,
            "gen_ai.usage.input_tokens": int(inputs[i]),
            "gen_ai.usage.output_tokens": int(outputs[i]),
            "gpu_utilization_percent": float(gpu[i]),
        }
        for i in range(PER_WINDOW)
    ]


def generative_scene(
    engine: Engine, slo: SloConfig, start: datetime, end: datetime
) -> dict[str, Any]:
    """The assistant's TTFT p95 and GPU utilisation p95 per window in [start, end), and how
    many windows breached the `ttft_p95_ms` objective (as `GET .../slo` judges them)."""
    t = WindowServing
    stmt = select(t).where(t.model == MODEL, t.slice_key == "").order_by(t.window_start)
    with session_factory(engine)() as s:
        summaries = [ServingSummary.from_row(r) for r in s.scalars(stmt)]
    judged = slo_results(engine, MODEL, slo, start, end, datetime.now(UTC))
    breaches = sum(
        r.objective == "ttft_p95_ms" and r.slice_key == "" and r.status == "breach" for r in judged
    )
    return {
        "model": MODEL,
        "events": sum(x.requests for x in summaries),
        "ttft_p95_ms": [_round(x.measure("ttft_ms").quantile(0.95)) for x in summaries],
        "gpu_utilization_p95": [
            _round(x.measure("gpu_utilization_percent").quantile(0.95)) for x in summaries
        ],
        "ttft_slo_ms": TTFT_SLO_MS,
        "ttft_breached_windows": breaches,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value)
