"""Paired shadow mode's cost: pairing at ingest, and the evaluate job's shadow tick.

`PYTHONPATH=. python bench/shadow.py [--requests 10000] [--reps 3] [--pairs 100] [--slices 10]`

1. Ingest: the same 2 x N events (N requests, a primary and a shadow side each, 16 numeric and 4
   categorical features, 3 regions, latencies; the shadow side 200 messages after its primary,
   as a mirrored copy of the stream arrives) fed to `Ingestor.ingest` in 5,000-record batches
   on SQLite, once with `shadow` configured (pairing in `shadow_pending`, summaries merged into
   `shadow_windows`) and once without (the floor: the events profiled, counted and joined as
   usual, no pairing), alternating; client CPU (`process_time`) per event, medians.
2. Tick: `shadow_windows` seeded with 24 hourly windows of `--pairs` version pairs x (overall +
   `--slices` slices); CPU of one `ShadowSignals` call (the newest window of each version pair
   judged per slice, signals and gauges) and of `shadow_results` over the day (every row merged
   per version pair and slice), medians of `--reps`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import CollectorRegistry  # noqa: E402

from collectors import Ingestor, RawRecord  # noqa: E402
from dashboards.metrics import ModelwatchMetrics  # noqa: E402
from migrations import upgrade  # noqa: E402
from monitor.app.daemon._shadow_signals import ShadowSignals  # noqa: E402
from monitor.config import CollectConfig, ModelConfig  # noqa: E402
from monitor.config.shadow import ShadowConfig  # noqa: E402
from monitor.shadow import PairOutcome, ShadowSummary, shadow_results  # noqa: E402
from monitor.storage import ShadowWindow, make_engine, transaction  # noqa: E402

BATCH = 5000


def paired_events(n: int, lag: int = 200, seed: int = 1) -> list[bytes]:
    """2n events: each request's primary, and its shadow `lag` messages later."""
    rng = random.Random(seed)
    t0 = time.time() - 3600
    primaries, shadows = [], []
    for i in range(n):
        features: dict[str, object] = {f"num{j}": round(rng.gauss(j, 1 + j), 4) for j in range(16)}
        features.update({f"cat{j}": rng.choice("abcde") for j in range(4)})
        base = {
            "request_id": f"req-{i}", "model": "fraud", "timestamp": t0 + i * 0.05,
            "features": features, "metadata": {"region": rng.choice(["eu", "us", "apac"])},
        }  # fmt: skip
        score = round(rng.random(), 4)
        primaries.append({**base, "model_version": "3", "role": "primary", "prediction": score,
                          "latency_ms": 10.0})  # fmt: skip
        shadows.append({**base, "model_version": "4", "role": "shadow",
                        "prediction": round(min(1.0, score + rng.gauss(0, 0.05)), 4),
                        "latency_ms": 7.5})  # fmt: skip
    out: list[dict[str, object]] = []
    for i, event in enumerate(primaries):
        out.append(event)
        if i >= lag:
            out.append(shadows[i - lag])
    out.extend(shadows[n - lag :])
    return [orjson.dumps(e) for e in out]


def ingest_cpu(events: list[bytes], shadow: bool, directory: Path, rep: int) -> float:
    engine = make_engine(f"sqlite:///{directory / f'ingest-{shadow}-{rep}.db'}")
    upgrade(engine)
    model = ModelConfig(name="fraud", slices=["region"], shadow=ShadowConfig() if shadow else None)
    ingestor = Ingestor(engine, "bench", "kafka", [model], CollectConfig())
    records = [RawRecord("p0", i, i + 1, raw) for i, raw in enumerate(events)]
    start = time.process_time()
    for first in range(0, len(records), BATCH):
        ingestor.ingest(records[first : first + BATCH])
    spent = time.process_time() - start
    engine.dispose()
    return spent / len(events)


def seed_windows(directory: Path, pairs: int, slices: int) -> tuple[object, ModelConfig]:
    engine = make_engine(f"sqlite:///{directory / 'tick.db'}")
    upgrade(engine)
    names = [f"s{k}" for k in range(slices)]
    model = ModelConfig(name="fraud", slices=["segment"], max_slice_values=slices,
                        shadow=ShadowConfig())  # fmt: skip
    rng = random.Random(3)
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    rows = []
    for hour in range(24):
        start = now - timedelta(hours=hour)
        for p in range(pairs):
            for key in ["", *(f'{{"segment":"{n}"}}' for n in names)]:
                outcomes = [PairOutcome(False, rng.random() / 10, 1.2) for _ in range(20)]
                flips = rng.randrange(0, 12)
                summary = replace(ShadowSummary.of(outcomes), pairs=200, decided=200, flips=flips)
                rows.append({"model": "fraud", "primary_version": f"p{p}",
                             "shadow_version": f"c{p}", "window_start": start,
                             "slice_key": key, "window_end": start + timedelta(hours=1),
                             "updated_at": now, **summary.to_row()})  # fmt: skip
    with transaction(engine) as session:
        session.execute(ShadowWindow.__table__.insert(), rows)
    return engine, model


def cpu(action: object) -> float:
    start = time.process_time()
    action()  # type: ignore[operator]
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--slices", type=int, default=10)
    args = parser.parse_args()
    events = paired_events(args.requests)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        on, off = [], []
        ingest_cpu(events[:BATCH], True, directory, -1)  # imports and first-use costs
        for rep in range(args.reps):
            off.append(ingest_cpu(events, False, directory, rep))
            on.append(ingest_cpu(events, True, directory, rep))
            print(f"rep {rep}: {off[-1] * 1e6:.1f} us/event floor, {on[-1] * 1e6:.1f} paired")
        floor, paired = statistics.median(off), statistics.median(on)
        print(f"ingest CPU per event: floor {floor * 1e6:.1f} us, paired {paired * 1e6:.1f} us "
              f"(+{(paired / floor - 1) * 100:.0f}%)")  # fmt: skip
        engine, model = seed_windows(directory, args.pairs, args.slices)
        metrics = ModelwatchMetrics(CollectorRegistry(), [model])
        signals = ShadowSignals(engine, model, 3600.0, metrics)  # type: ignore[arg-type]
        now = datetime.now(UTC)
        ticks = [cpu(lambda: signals(now)) for _ in range(args.reps)]
        day = [cpu(lambda: shadow_results(model, engine, now - timedelta(days=1), now))  # type: ignore[arg-type]
               for _ in range(args.reps)]  # fmt: skip
        got = len(signals(now))
        tick, merged = statistics.median(ticks), statistics.median(day)
        print(f"tick ({args.pairs} version pairs x {args.slices + 1} slices, {got} signals): "
              f"{tick:.3f} s CPU; a day merged: {merged:.3f} s")  # fmt: skip


if __name__ == "__main__":
    main()
