"""Stable and canary events whose canary regresses in one slice only (`region=eu`)."""

from __future__ import annotations

import random
from typing import Any

import orjson

from collectors import RawRecord


def events(
    version: str, n: int, start: float, eu_shift: bool = False, seed: int = 1,
    eu_share: float = 0.1, slices: int = 2,
) -> list[dict[str, Any]]:  # fmt: skip
    """`n` events over one minute from `start` (unix seconds); with `eu_shift` the predictions
    of `region=eu` (a tenth of the traffic) move up: beta(5, 2) instead of beta(2, 5)."""
    rng = random.Random(seed)
    regions = ["us", *(f"r{i}" for i in range(slices - 2))]
    out = []
    for i in range(n):
        region = "eu" if rng.random() < eu_share else rng.choice(regions)
        score = rng.betavariate(2, 5)
        if eu_shift and region == "eu":
            score = rng.betavariate(5, 2)
        out.append({
            "request_id": f"{version}-{seed}-{i}", "model": "fraud", "model_version": version,
            "timestamp": start + rng.uniform(0, 60),
            "features": {"amount": rng.lognormvariate(3, 1)}, "prediction": score,
            "metadata": {"region": region}, "latency_ms": rng.lognormvariate(0, 0.2) * 20,
        })  # fmt: skip
    return out


def records(items: list[dict[str, Any]], source: str = "s") -> list[RawRecord]:
    return [RawRecord(source, i, i + 1, orjson.dumps(x)) for i, x in enumerate(items)]
