"""The cost of a canary analysis over a day of hourly windows, against rescanning the raw events.

`PYTHONPATH=. python bench/canary.py [--per-hour 2000] [--hours 24] [--repeat 5]`.
Ingests a stable and a canary version (5 features, a prediction, latency, errors) into a
temporary SQLite database, one hour per window, then times `analyze_canary` over the day (a
merge of the stored window profiles and serving sketches) against the floor: the same
statistics computed with numpy from the raw events already in memory (exact p95/p99 over
every latency, PSI of predictions and features on the stable's quantile edges, error counts),
which is what an analysis that rescans raw rows cannot beat. Medians over repeats.

Also the evaluate job's per-window SLO work (`monitor.slo.evaluate.store_window_slo`: read a
window's
serving rows, evaluate five objectives, upsert the `slo_results` rows) against its floor, exact
p95/p99 and error rate of that window's raw latencies in memory.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from collectors import Ingestor, RawRecord
from migrations import upgrade
from monitor.canary import analyze_canary
from monitor.config import CollectConfig, ModelConfig
from monitor.config.serving import CostConfig, SloConfig
from monitor.slo.evaluate import store_window_slo
from monitor.storage import make_engine

FEATURES = 5


def raw_events(version: str, hours: int, per_hour: int, start: float, shift: float) -> dict:
    rng = np.random.default_rng(int(version))
    n = hours * per_hour
    return {
        "ts": start + np.repeat(np.arange(hours), per_hour) * 3600 + rng.uniform(0, 3599, n),
        "x": rng.normal(0, 1, (n, FEATURES)),
        "pred": np.clip(rng.beta(2, 5, n) + shift, 0, 1),
        "lat": rng.lognormal(3, 0.3, n) * (1 + shift),
        "err": rng.random(n) < 0.01,
    }


def records(version: str, ev: dict, first: int) -> list[RawRecord]:
    out = []
    for i in range(len(ev["ts"])):
        e = {"request_id": f"{version}-{i}", "model": "m", "model_version": version,
             "timestamp": float(ev["ts"][i]),
             "features": {f"x{j}": float(ev["x"][i, j]) for j in range(FEATURES)},
             "prediction": float(ev["pred"][i]), "latency_ms": float(ev["lat"][i]),
             "error": "e" if ev["err"][i] else None}  # fmt: skip
        out.append(RawRecord("p0", first + i, first + i + 1, orjson.dumps(e)))
    return out


def psi(a: np.ndarray, b: np.ndarray) -> float:
    edges = np.quantile(a, np.linspace(0, 1, 65)[1:-1])
    pa = np.bincount(np.searchsorted(edges, a), minlength=64) / len(a) + 1e-6
    pb = np.bincount(np.searchsorted(edges, b), minlength=64) / len(b) + 1e-6
    return float(((pb - pa) * np.log(pb / pa)).sum())


def floor(stable: dict, canary: dict) -> None:
    for ev in (stable, canary):
        np.percentile(ev["lat"], [95, 99])
        int(ev["err"].sum())
    psi(stable["pred"], canary["pred"])
    for j in range(FEATURES):
        psi(stable["x"][:, j], canary["x"][:, j])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-hour", type=int, default=2000)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start = (now - timedelta(hours=args.hours)).timestamp()
    stable = raw_events("1", args.hours, args.per_hour, start, 0.0)
    canary = raw_events("2", args.hours, args.per_hour, start, 0.2)
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'bench.db'}")
        upgrade(engine)
        cfg = ModelConfig(name="m")
        ing = Ingestor(engine, "bench", "kafka", [cfg], CollectConfig())
        t0 = time.perf_counter()
        n = len(stable["ts"])
        for version, ev, first in (("1", stable, 0), ("2", canary, n)):
            batch = records(version, ev, first)
            for i in range(0, len(batch), 5000):
                ing.ingest(batch[i : i + 5000])
        ingest_s = time.perf_counter() - t0
        ours, base = [], []
        since = now - timedelta(hours=args.hours)
        for _ in range(args.repeat):
            t1 = time.perf_counter()
            report = analyze_canary(engine, cfg, "2", "1", since, now, 3600)
            t2 = time.perf_counter()
            floor(stable, canary)
            t3 = time.perf_counter()
            ours.append(t2 - t1)
            base.append(t3 - t2)
        slo_ours, slo_base = _slo_per_window(engine, (stable, canary), start, args, now)
        engine.dispose()
    o, b = statistics.median(ours), statistics.median(base)
    print(
        f"windows={args.hours} per version, events={2 * n} (ingest {ingest_s:.1f} s), "
        f"criteria={len(report.criteria)}, verdict={report.verdict}\n"
        f"canary analysis from stored windows: {o * 1000:.1f} ms\n"
        f"floor, numpy over raw events in memory: {b * 1000:.1f} ms\n"
        f"ratio: {o / b:.2f}x the floor\n"
        f"SLO rows per window (evaluate job): {slo_ours * 1000:.2f} ms; floor (numpy over the "
        f"window's raw events) {slo_base * 1000:.2f} ms; ratio {slo_ours / slo_base:.2f}x"
    )


def _slo_per_window(
    engine: Any, versions: tuple[dict, dict], start: float, args: Any, now: datetime
) -> tuple[float, float]:
    """Median seconds per window of `store_window_slo` and of its in-memory floor."""
    cfg = SloConfig(latency_p95_ms=50, latency_p99_ms=80, error_rate=0.02, min_rps=0.1,
                    cost_per_1k=CostConfig(hourly_price=0.7, replicas=2, max=1.0))  # fmt: skip
    ours, base = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        for version in ("1", "2"):
            for h in range(args.hours):
                begin = datetime.fromtimestamp(start + h * 3600, UTC)
                store_window_slo(engine, cfg, "m", version, begin, now)
        # The floor's events are already grouped by window (in hour order, as generated).
        cuts = [np.searchsorted((ev["ts"] - start) // 3600, np.arange(args.hours + 1))
                for ev in versions]  # fmt: skip
        t1 = time.perf_counter()
        for ev, cut in zip(versions, cuts, strict=True):
            for h in range(args.hours):
                np.percentile(ev["lat"][cut[h] : cut[h + 1]], [95, 99])
                float(ev["err"][cut[h] : cut[h + 1]].mean())
        t2 = time.perf_counter()
        ours.append((t1 - t0) / (2 * args.hours))
        base.append((t2 - t1) / (2 * args.hours))
    return statistics.median(ours), statistics.median(base)


if __name__ == "__main__":
    main()
