"""The cost of one scheduled canary tick: 100 canary versions × 10 slices against one stable.

`PYTHONPATH=. python bench/canary_tick.py [--versions 100] [--slices 10] [--per-slice 200] [--hours
1] [--repeat 3] [--no-baseline]`. Stores a baseline of the stable version (so every version's
windows share its edges, as in a deployment with a baseline), ingests a stable version and
`--versions` canary versions (one feature, a prediction, latency; `--slices` values of `region`,
`--per-slice` events each per hour) into a temporary SQLite database, declares one pair per canary
version, then times the `canary` job's tick (every pair due: read both versions' stored summaries by
slice, judge every criterion overall and per slice, correct, store) and the signals it feeds
(`canary_signals`: newest stored verdict per pair, gauges) against the floor: PSI of the prediction
and the feature per pair and slice with numpy from the raw events already in memory, which is what a
tick that rescans raw rows cannot beat. `--no-baseline`: each version's windows get their own edges,
so every comparison first moves the canary's profile onto the stable's (`rebin`), the worst case.
CPU seconds of this process (the target: < 1 s per tick); medians over repeats.
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
from prometheus_client import CollectorRegistry

from collectors import Ingestor, RawRecord
from dashboards.metrics import ModelwatchMetrics
from migrations import upgrade
from monitor.app.daemon._canary_job import CanaryWatch, canary_signals
from monitor.baselines.store import save_baseline
from monitor.config import Config, parse_config
from monitor.storage import make_engine


def raw_events(version: int, args: argparse.Namespace, start: float) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(version)
    n = args.per_slice * args.slices * args.hours
    return {
        "ts": start + rng.uniform(0, 3600 * args.hours - 1, n),
        "region": np.tile(np.arange(args.slices), n // args.slices),
        "x": rng.lognormal(3, 1, n),
        "pred": rng.beta(2, 5, n),
        "lat": rng.lognormal(3, 0.2, n),
    }


def events(version: int, ev: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    return [
        {"request_id": f"{version}-{i}", "model": "m", "model_version": str(version),
         "timestamp": float(ev["ts"][i]), "features": {"x": float(ev["x"][i])},
         "prediction": float(ev["pred"][i]), "latency_ms": float(ev["lat"][i]),
         "metadata": {"region": f"r{ev['region'][i]}"}}
        for i in range(len(ev["ts"]))
    ]  # fmt: skip


def psi(a: np.ndarray, b: np.ndarray) -> float:
    edges = np.quantile(a, np.linspace(0, 1, 11)[1:-1])
    pa = np.bincount(np.searchsorted(edges, a), minlength=10) / len(a) + 1e-6
    pb = np.bincount(np.searchsorted(edges, b), minlength=10) / len(b) + 1e-6
    return float(((pb - pa) * np.log(pb / pa)).sum())


def floor(stable: dict[str, np.ndarray], canaries: list[dict[str, np.ndarray]], k: int) -> None:
    for canary in canaries:
        for s in [None, *range(k)]:
            a = stable["region"] == s if s is not None else slice(None)
            b = canary["region"] == s if s is not None else slice(None)
            for col in ("pred", "x"):
                psi(stable[col][a], canary[col][b])
            np.percentile(canary["lat"][b], [95, 99])


def save_reference(engine: Any, stable: dict[str, np.ndarray]) -> None:
    import pandas as pd

    from monitor.profiles import profile_frame, specs_for

    frame = pd.DataFrame({"x": stable["x"], "prediction": stable["pred"],
                          "region": [f"r{r}" for r in stable["region"]]})  # fmt: skip
    specs = specs_for(["x", "prediction"], frame)
    save_baseline(engine, "m", "0", profile_frame(frame, specs, ["region"]))


def config(url: str, versions: int, hours: int) -> Config:
    pairs = [{"model": "m", "canary": str(v), "stable": "0", "since": f"{hours}h",
              "interval": "1m"} for v in range(1, versions + 1)]  # fmt: skip
    # Every version in one window: past the default 20 per window events would be dead letters.
    collect = {"max_versions_per_window": versions + 1}
    return parse_config({"database_url": url, "canaries": pairs, "collect": collect,
                         "models": [{"name": "m", "slices": ["region"]}]}, env={})  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--versions", type=int, default=100)
    parser.add_argument("--slices", type=int, default=10)
    parser.add_argument("--per-slice", type=int, default=200)
    parser.add_argument("--hours", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args()
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start = (now - timedelta(hours=args.hours)).timestamp()
    versions = [raw_events(v, args, start) for v in range(args.versions + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        engine = make_engine(url)
        upgrade(engine)
        cfg = config(url, args.versions, args.hours)
        if not args.no_baseline:
            save_reference(engine, versions[0])
        ing = Ingestor(engine, "bench", "kafka", cfg.models, cfg.collect)
        t0 = time.perf_counter()
        # In time order, as traffic arrives: events far behind the watermark would be late.
        everything = sorted((e for v, ev in enumerate(versions) for e in events(v, ev)),
                            key=lambda e: e["timestamp"])  # fmt: skip
        first = len(everything)
        for i in range(0, first, 5000):
            batch = everything[i : i + 5000]
            ing.ingest([RawRecord("p0", i + j, i + j + 1, orjson.dumps(e))
                        for j, e in enumerate(batch)])  # fmt: skip
        ingest_s = time.perf_counter() - t0
        metrics = ModelwatchMetrics(CollectorRegistry(), cfg.models)
        ticks, walls, signals_cpu, floors = [], [], [], []
        for r in range(args.repeat):
            tick_at = now + timedelta(minutes=r)  # a new interval: every pair is due
            c0, w0 = time.process_time(), time.perf_counter()
            done = CanaryWatch(engine, cfg, f"bench-{r}")(now=tick_at)
            c1, w1 = time.process_time(), time.perf_counter()
            signals = canary_signals(engine, cfg, metrics, tick_at)
            c2 = time.process_time()
            floor(versions[0], versions[1:], args.slices)
            c3 = time.process_time()
            assert done == args.versions, done
            judged = sum(s.kind == "canary" and s.labels["slice"] != "all" for s in signals)
            assert judged == args.versions * args.slices * 5, judged  # every slice judged
            ticks.append(c1 - c0)
            walls.append(w1 - w0)
            signals_cpu.append(c2 - c1)
            floors.append(c3 - c2)
        engine.dispose()
    tick, floor_s = statistics.median(ticks), statistics.median(floors)
    print(
        f"pairs={args.versions} slices={args.slices} events={first} windows per version="
        f"{args.hours} (ingest {ingest_s:.1f} s), signals={len(signals)}\n"
        f"canary tick: {tick:.3f} s CPU ({statistics.median(walls):.3f} s wall), "
        f"{tick / args.versions * 1000:.1f} ms per pair\n"
        f"signals and gauges from the stored verdicts: {statistics.median(signals_cpu):.3f} s CPU\n"
        f"floor, numpy PSI and percentiles over raw events in memory: {floor_s:.3f} s CPU\n"
        f"ratio: {tick / floor_s:.2f}x the floor"
    )


if __name__ == "__main__":
    main()
