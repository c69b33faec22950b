"""Synthetic fraud-like traffic: a training set, hourly windows with drift in one slice midway,
and labels that arrive late.

Features f0..f7 feed the reference model (f0 is the "amount"-like feature); `region` and
`channel` are metadata used as slices. From `drift_from` on, region `drift_region` sees f0
shifted by `shift_sd` standard deviations and its labels lose their relation to the score, so
both feature drift and an outcome degradation exist only in that slice.

The last windows also carry the releases scenes (`monitor.app.demo._releases`): from
`canary_from` a share of requests is served by the canary version, whose scores in region
`drift_region` alone are `canary_boost` times too high (as if it applied that region's fraud
prior twice: a per-slice regression the whole traffic hides); from `shadow_from`
every request of the stable version is also scored by the shadow version (`role: shadow`, the
same request id), paired by shadow mode. Their draws use their own seeded generator, so the
stable traffic is the same with or without them.

Every request reports its stage timings (`queue_ms`, `preprocess_ms`, `model_ms`,
`postprocess_ms`, `network_ms`; `latency_ms` is their sum), drawn from their own generator too.
The canary build's model stage is `canary_model_ms` slower (and its preprocessing 2 ms): a
latency regression the canary's evaluation explains by its stage ("p95 +20 ms, of which model
+18 ms"). Every window also carries a few requests of the generative `assistant`
(`monitor.app.demo._generative`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from monitor.app.demo._generative import assistant_events

N_FEATURES = 8
FEATURES = tuple(f"f{i}" for i in range(N_FEATURES))
REGIONS = ("us", "eu", "apac", "latam")
REGION_P = (0.4, 0.3, 0.2, 0.1)
CHANNELS = ("web", "app", "pos")

CANARY_VERSION = "6-canary"
SHADOW_VERSION = "3-int8"

Scorer = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class TrafficPlan:
    """How much traffic, when, and where the drift goes."""

    start: datetime = datetime(2026, 11, 29, 0, 0, tzinfo=UTC)
    windows: int = 6
    window: timedelta = timedelta(hours=1)
    per_window: int = 2500
    drift_from: int = 3
    drift_region: str = "eu"
    shift_sd: float = 1.5
    label_lag: timedelta = timedelta(minutes=90)
    seed: int = 7
    canary_from: int = 3
    canary_share: float = 0.5
    canary_boost: float = 1.8  # the canary's scores in `drift_region`, times this
    shadow_from: int = 5
    canary_model_ms: float = 18.0  # the canary build's model stage, this much slower

    @property
    def end(self) -> datetime:
        """The end of the last window."""
        return self.start + self.windows * self.window


@dataclass(frozen=True)
class Builds:
    """The canary's and the shadow's models (None: no such scene)."""

    canary: Scorer | None = None
    shadow: Scorer | None = None


def feature_matrix(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.normal(0.0, 1.0, size=(n, N_FEATURES)).astype(np.float32)
    x[:, 0] = rng.lognormal(0.0, 0.6, size=n).astype(np.float32) - 1.2  # skewed "amount"
    return x


def training_frame(scorer: Scorer, n: int = 20_000, seed: int = 3) -> Any:
    """A labelled training set with the model's score as `prediction`."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = feature_matrix(rng, n)
    score = scorer(x)
    frame = pd.DataFrame(x, columns=list(FEATURES))
    frame["region"] = rng.choice(REGIONS, size=n, p=REGION_P)
    frame["channel"] = rng.choice(CHANNELS, size=n)
    frame["prediction"] = score
    frame["label"] = (rng.random(n) < score).astype(int)
    return frame


@dataclass(frozen=True)
class Batch:
    """One window's prediction events and the label events due after it."""

    window_index: int
    events: list[dict[str, Any]]
    labels: list[dict[str, Any]]


def windows(plan: TrafficPlan, scorer: Scorer, builds: Builds | None = None) -> Iterator[Batch]:
    """Prediction events window by window; each window's labels come `label_lag` later."""
    rng = np.random.default_rng(plan.seed)
    for w in range(plan.windows):
        yield _window(plan, scorer, rng, w, builds or Builds())


def _window(
    plan: TrafficPlan, scorer: Scorer, rng: np.random.Generator, w: int, builds: Builds
) -> Batch:
    n = plan.per_window
    x = feature_matrix(rng, n)
    regions = rng.choice(REGIONS, size=n, p=REGION_P)
    drifted = (regions == plan.drift_region) if w >= plan.drift_from else np.zeros(n, bool)
    x[drifted, 0] += np.float32(plan.shift_sd * 0.6)
    score = scorer(x)
    truth = np.where(drifted, rng.random(n) < 0.35, rng.random(n) < score)
    offsets = np.sort(rng.random(n)) * plan.window.total_seconds()
    base = plan.start + w * plan.window
    events, labels = [], []
    channels = rng.choice(CHANNELS, size=n)
    versions, served = _releases(plan, builds, x, regions, score, w)
    timings = _timings(plan, w, versions)
    shadow = builds.shadow(x) if builds.shadow is not None and w >= plan.shadow_from else None
    for i in range(n):
        ts = base + timedelta(seconds=float(offsets[i]))
        rid = f"w{w}-{i}"
        event = {
            "request_id": rid,
            "model": "fraud",
            "model_version": str(versions[i]),
            "timestamp": ts.isoformat(),
            "features": {f: float(x[i, j]) for j, f in enumerate(FEATURES)},
            "prediction": float(served[i]),
            "metadata": {"region": str(regions[i]), "channel": str(channels[i])},
            **{name: float(ms[i]) for name, ms in timings.items()},
        }
        events.append(event)
        if shadow is not None and versions[i] == "1":
            event["role"] = "primary"
            pair = {**event, "model_version": SHADOW_VERSION, "prediction": float(shadow[i])}
            events.append({**pair, "role": "shadow"})
        labels.append(
            {
                "request_id": rid,
                "model": "fraud",
                "label": int(truth[i]),
                "timestamp": (ts + plan.label_lag).isoformat(),
            }
        )
    events += assistant_events(plan.seed, w, plan.windows, plan.start, plan.window)
    return Batch(w, events, labels)


def _releases(
    plan: TrafficPlan,
    builds: Builds,
    x: np.ndarray,
    regions: np.ndarray,
    score: np.ndarray,
    w: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Which version served each request, and its prediction: from `canary_from` a share of
    requests goes to the canary build, over-confident in `drift_region` only."""
    versions = np.full(len(score), "1", dtype=object)
    if builds.canary is None or w < plan.canary_from:
        return versions, score
    rng = np.random.default_rng(plan.seed * 1000 + w)  # the stable traffic's draws unchanged
    canary = rng.random(len(score)) < plan.canary_share
    boosted = builds.canary(x)
    local = regions == plan.drift_region
    boosted[local] = np.minimum(boosted[local] * plan.canary_boost, 1.0)
    served = np.where(canary, boosted, score)
    versions[canary] = CANARY_VERSION
    return versions, served


# Each stage's median (ms) and log-normal spread on the stable build.
STAGE_MS = {"queue_ms": (2.0, 0.6), "preprocess_ms": (3.0, 0.3), "model_ms": (12.0, 0.25),
            "postprocess_ms": (1.0, 0.3), "network_ms": (6.0, 0.4)}  # fmt: skip


def _timings(plan: TrafficPlan, w: int, versions: np.ndarray) -> dict[str, np.ndarray]:
    """Per request: each stage's time and `latency_ms`, their sum (the canary's model stage
    `canary_model_ms` slower, its preprocessing 2 ms); rounded to 0.01 ms."""
    rng = np.random.default_rng(plan.seed * 7919 + w)  # the stable traffic's draws unchanged
    n = len(versions)
    out = {k: rng.lognormal(np.log(median), spread, n) for k, (median, spread) in STAGE_MS.items()}
    canary = versions == CANARY_VERSION
    out["model_ms"] = out["model_ms"] + plan.canary_model_ms * canary
    out["preprocess_ms"] = out["preprocess_ms"] + 2.0 * canary
    out = {k: np.round(v, 2) for k, v in out.items()}
    out["latency_ms"] = np.round(sum(out.values()), 2)
    return out
