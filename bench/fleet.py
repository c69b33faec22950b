"""A fleet on one database: N models x F features x S slices of live traffic, end to end.

Synthetic traffic at R events/s (timestamps = now) goes through the real HTTP collector
(`POST /v1/events`, batches per model) into `--replicas` `modelwatch serve` processes on one
PostgreSQL database, which aggregate it and evaluate every model's windows against its
baseline (one per model, F numeric features sliced by `seg` with S values). Reported, after
`--duration` seconds of traffic and the last closed window's evaluation:

- evaluation lag: per (model, window) that closed during the run, its newest stored drift
  result's `computed_at` minus the window's end (0 when the result was final at the close),
  p50 and p99;
- ingest rate: events counted by the drain per second of traffic;
- CPU per stored result: the serve processes' CPU (with their workers) over the run, per
  (model, window) with stored results;
- RSS per 1,000 models: the serve processes' resident memory at the end, scaled;
- database growth per day: `pg_database_size` over the run, scaled to a day;
- the split across replicas (with `--replicas` > 1): evaluation units and windows each replica
  ran (from its `/metrics`: `modelwatch_evaluation_units_total`,
  `modelwatch_window_evaluation_seconds_count`), the largest and smallest window share; units
  run twice (units run over all replicas beyond those deferred and put back, from
  `modelwatch_evaluation_units_deferred_total` and `..._retried_total`), and window evaluations
  per distinct stored (model, window) (compare with one replica: an open window is evaluated
  again when it changes, so this is above 1 for any replica count).

The default is small (a smoke run); the target case is `--models 1000 --features 20 --slices 5
--window 1m` (measured in bench/README.md, "Fleet"; the baselines alone take ~2 minutes). Usage:

    PYTHONPATH=. python bench/fleet.py [--models 20] [--features 5] [--slices 3] [--rate 300]
        [--window 1m] [--duration 150] [--replicas 1] [--clients 2] [--interval SECONDS]
        [--drain-delay SECONDS] [--tick-offset SECONDS] [--events-per-request K]
        [--units-at-once N]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np
import orjson
import pandas as pd
import yaml
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select, text
from sqlalchemy.engine import Engine

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.api_ingest import PG, children_cpu, cpu_seconds  # noqa: E402
from migrations import upgrade  # noqa: E402
from monitor.baselines.store import save_baseline  # noqa: E402
from monitor.config import parse_duration  # noqa: E402
from monitor.profiles import profile_frame, specs_for  # noqa: E402
from monitor.storage import DriftResultRow, IngestCounter, make_engine  # noqa: E402
from tests.services.net import free_port  # noqa: E402

TOKEN = "bench-fleet-token"
BATCH = 100  # events per request at most (one model's events of one send)


def model_names(n: int) -> list[str]:
    return [f"m{i:04d}" for i in range(n)]


def baselines(engine: Engine, models: list[str], features: int, slices: int) -> None:
    """Version 1 of every model with a baseline of 2,000 rows (the traffic's distribution)."""
    rng = np.random.default_rng(7)
    columns = [f"f{j}" for j in range(features)]
    for name in models:
        frame = pd.DataFrame({c: rng.normal(j, 1 + j, 2000) for j, c in enumerate(columns)})
        frame["prediction"] = rng.random(2000)
        frame["seg"] = rng.choice([f"s{k}" for k in range(slices)], 2000)
        cols = [*columns, "prediction"]
        save_baseline(engine, name, "1", profile_frame(frame, specs_for(cols, frame), ["seg"]))


def config_doc(
    url: str, models: list[str], window: timedelta, interval_s: float,
    drain_delay_s: float = 0.0, rate: float = 0.0, tick_offset_s: float | None = None,
    units_at_once: int | None = None,
) -> object:  # fmt: skip
    tokens = [{"name": "bench", "scopes": ["ingest", "read"], "token": TOKEN}]
    collect: dict[str, object] = {
        "window": f"{window.total_seconds():.0f}s",
        "allowed_lateness": "5s",
    }
    if drain_delay_s:
        collect |= drain_settings(drain_delay_s, rate)
    return {
        "database_url": url,
        "models": [{"name": m, "slices": ["seg"]} for m in models],
        "api": {"tokens": tokens, "max_body_bytes": 10 << 20},
        "collect": collect,
        "scheduler": {"evaluate_interval_s": interval_s}
        | ({} if tick_offset_s is None else {"tick_offset_s": tick_offset_s})
        | ({} if units_at_once is None else {"units_at_once": units_at_once}),
    }


def drain_settings(delay_s: float, rate: float) -> dict[str, object]:
    """What docs/how-to/scale-out.md says to set with `collect.drain_max_delay` raised to
    `delay_s`: a batch, a backlog and a lag bound that hold `delay_s` of `rate` events/s
    (one request per event at thin traffic) with room to spare."""
    held = rate * delay_s
    return {
        "drain_max_delay": f"{delay_s:g}s",
        "batch_size": int(max(5000, 2 * held)),
        "http_max_backlog": int(max(10_000, 3 * held)),
        "http_max_lag": f"{max(60.0, 3 * delay_s):g}s",
    }


@contextlib.contextmanager
def servers(config: Path, replicas: int) -> Iterator[list[tuple[str, int]]]:
    """`replicas` `modelwatch serve` processes on the config: (base URL, pid) each."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MODELWATCH_DATABASE_URL", None)
    procs, out = [], []
    try:
        for _ in range(replicas):
            port = free_port()
            args = ["-m", "monitor", "serve", "--config", str(config), "--port", str(port)]
            procs.append(
                subprocess.Popen([sys.executable, *args], env=env, stderr=subprocess.DEVNULL)
            )
            out.append((f"http://127.0.0.1:{port}", procs[-1].pid))
        for base, _ in out:
            _wait_ready(base)
        yield out
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)


def _wait_ready(base: str) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise SystemExit(f"{base}: serve did not start within 180 s")


def traffic(
    bases: list[str], models: list[str], features: int, slices: int, rate: float,
    duration: float, clients: int, per_request: int = 1,
) -> tuple[int, list[float]]:  # fmt: skip
    """Post `rate` events/s for `duration` s, round-robin over models and replicas; events sent,
    and each request's delay: its first event's timestamp to its send (the clients' queue).
    `per_request` > 1: requests of that many events of consecutive models (a gateway that
    batches); 1: each model's share of a quarter second in its own request (one event each at
    a fleet's thin traffic)."""
    work: queue.Queue[tuple[str, bytes, float] | None] = queue.Queue(maxsize=1000)
    delays: list[float] = []
    rng = random.Random(3)
    segs = [f"s{k}" for k in range(slices)]

    def event(model: str, i: int) -> dict[str, object]:
        feats = {f"f{j}": rng.gauss(j, 1 + j) for j in range(features)}
        return {
            "request_id": f"{model}-{i}", "model": model, "model_version": "1",
            "timestamp": time.time(), "features": feats, "prediction": rng.random(),
            "metadata": {"seg": rng.choice(segs)},
        }  # fmt: skip

    def client() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
        with httpx.Client(headers=headers, timeout=60) as http:
            while (item := work.get()) is not None:
                delays.append(time.time() - item[2])
                with contextlib.suppress(httpx.HTTPError):  # counted as not ingested
                    http.post(f"{item[0]}/v1/events", content=item[1])

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    sent, tick, started = 0, 0.25, time.monotonic()
    cycle = itertools.cycle(models)
    replica = itertools.cycle(bases)
    while (elapsed := time.monotonic() - started) < duration:
        due = int(rate * elapsed) - sent
        while due > 0:  # one request per model's share of the tick's events
            created = time.time()
            if per_request > 1:
                n = min(due, per_request)
                body = orjson.dumps([event(next(cycle), sent + k) for k in range(n)])
            else:
                model, n = next(cycle), min(due, max(1, min(BATCH, due // len(models) + 1)))
                body = orjson.dumps([event(model, sent + k) for k in range(n)])
            work.put((next(replica), body, created))
            sent, due = sent + n, due - n
        time.sleep(tick)
    for _ in threads:
        work.put(None)
    for t in threads:
        t.join()
    return sent, delays


def process_cpu(pids: list[int]) -> float:
    return sum(cpu_seconds(p) + children_cpu(p) for p in pids)


def rss_bytes(pids: list[int]) -> int:
    """Resident memory of the serve processes and their children (workers)."""
    total = 0
    for pid in pids:
        family = [pid]
        for task in Path(f"/proc/{pid}/task").iterdir():
            family += [int(c) for c in (task / "children").read_text().split()]
        for p in family:
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{p}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
    return total


def evaluation_lags(engine: Engine, start: datetime, end: datetime) -> list[tuple[datetime, float]]:
    """(window end, seconds from it to the newest drift result) of each (model, window) that
    closed within [start, end)."""
    r = DriftResultRow
    stmt = (
        select(r.model, r.window_end, func.max(r.computed_at))
        .where(r.window_end > start, r.window_end <= end)
        .group_by(r.model, r.window_end)
    )
    with engine.connect() as conn:
        rows = conn.execute(stmt).all()
    return [(w_end, max(0.0, (done - w_end).total_seconds())) for _, w_end, done in rows]


def warm_lags(ended: list[tuple[datetime, float]]) -> list[float]:
    """The lags of the windows after the first one that closed (its events are aggregated and
    evaluated on cold caches: every model's spec and baseline decoded for the first time)."""
    first = min((w for w, _ in ended), default=None)
    return [lag for w, lag in ended if w != first]


COUNTED = {
    "modelwatch_evaluation_units_total": "run",
    "modelwatch_evaluation_units_deferred_total": "deferred",
    "modelwatch_evaluation_units_retried_total": "retried",
    "modelwatch_window_evaluation_seconds_count": "windows",
}


def replica_counts(base: str) -> dict[str, float]:
    """Units run (done or failed), deferred, retried and windows evaluated: one replica's
    `/metrics`."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body = httpx.get(f"{base}/metrics", headers=headers, timeout=30).text
    counts = dict.fromkeys(COUNTED.values(), 0.0)
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name in COUNTED:
                counts[COUNTED[sample.name]] += sample.value
    return counts


def distinct_results(engine: Engine) -> int:
    """Distinct (model, window) with stored drift results, all time."""
    r = DriftResultRow
    pairs = select(r.model, r.window_start).distinct().subquery()
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(pairs)).scalar_one())


def split_report(counts: list[dict[str, float]], distinct: int) -> str:
    """The work per replica, the max/min share and the units run more often than deferred."""
    total = {k: sum(c[k] for c in counts) for k in COUNTED.values()}
    shares = [c["windows"] / (total["windows"] or 1.0) for c in counts]
    per = ", ".join(
        f"r{i}: {c['run']:,.0f} units / {c['windows']:,.0f} windows" for i, c in enumerate(counts)
    )
    twice = max(0.0, total["run"] - total["deferred"] - total["retried"])
    return (
        f"  split: {per}; window share max {max(shares):.0%} / min {min(shares):.0%}\n"
        f"  duplicates: {total['run']:,.0f} units run over all replicas of {total['deferred']:,.0f}"
        f" deferred (+{total['retried']:,.0f} put back): {twice:,.0f} run twice; "
        f"{total['windows']:,.0f} window evaluations for {distinct:,} distinct stored "
        f"(model, window)s ({total['windows'] / (distinct or 1):.2f} each: an open window is "
        f"evaluated again when it changes)"
    )


def db_size(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one())


def counted(engine: Engine) -> int:
    with engine.connect() as conn:
        found = conn.execute(select(IngestCounter.events).where(IngestCounter.source == "http"))
        return int(found.scalar_one_or_none() or 0)


def run(args: argparse.Namespace, directory: Path) -> None:
    window = parse_duration(args.window)
    models = model_names(args.models)
    url = PG.create_database()
    engine = make_engine(url)
    upgrade(engine)
    baselines(engine, models, args.features, args.slices)
    config = directory / "fleet.yaml"
    interval = args.interval or min(10.0, max(1.0, window.total_seconds() / 6))
    doc = config_doc(url, models, window, interval, args.drain_delay, args.rate, args.tick_offset,
                     args.units_at_once)  # fmt: skip
    config.write_text(yaml.safe_dump(doc))
    with servers(config, args.replicas) as procs:
        pids = [pid for _, pid in procs]
        size0, cpu0 = db_size(engine), process_cpu(pids)
        t0 = datetime.now(UTC)
        sent, delays = traffic([b for b, _ in procs], models, args.features, args.slices, args.rate,
                       args.duration, args.clients, args.events_per_request)  # fmt: skip
        t1 = datetime.now(UTC)
        traffic_s = (t1 - t0).total_seconds()
        ingested = counted(engine)
        # The windows that closed during the traffic, given time for their last evaluation.
        time.sleep(5 + 2 * interval)
        drained = counted(engine)
        ended = evaluation_lags(engine, t0, t1)
        lags = [lag for _, lag in ended]
        cpu, rss, size1 = process_cpu(pids) - cpu0, rss_bytes(pids), db_size(engine)
        counts = [replica_counts(base) for base, _ in procs]
        distinct = distinct_results(engine)
    engine.dispose()
    p50 = statistics.median(lags) if lags else float("nan")
    p99 = float(np.percentile(lags, 99)) if lags else float("nan")
    warm = warm_lags(ended)
    warm99 = float(np.percentile(warm, 99)) if warm else float("nan")
    per_day = (size1 - size0) * 86400 / traffic_s
    print(
        f"{args.models} models x {args.features} features x {args.slices} slices, "
        f"{args.rate:g} ev/s for {traffic_s:.0f} s, window {args.window}, {args.replicas} "
        f"replica(s), evaluate every {interval:g} s, drain delay "
        f"{args.drain_delay or 2:g} s; load {os.getloadavg()[0]:.1f}\n"
        f"  evaluation lag (window close -> stored result): p50 {p50:.1f} s, p99 {p99:.1f} s "
        f"over {len(lags)} closed (model, window)s; after the first window p50 "
        f"{statistics.median(warm) if warm else float('nan'):.1f} s, p99 {warm99:.1f} s\n"
        f"  ingest: {sent:,} sent, {ingested:,} counted by the end of traffic "
        f"({ingested / traffic_s:,.0f} ev/s), {drained:,} by the last evaluation; sent "
        f"{statistics.median(delays):.2f} s / {np.percentile(delays, 99):.2f} s (p50 / p99) "
        f"after their events' timestamps (the clients' queue)\n"
        f"  CPU per stored (model, window) result: "
        f"{(cpu / len(lags) * 1e3) if lags else float('nan'):.0f} ms "
        f"({cpu:.1f} s of serve CPU in all)\n"
        f"  RSS per 1,000 models: {rss / args.models * 1000 / 2**20:,.0f} MiB "
        f"({rss / 2**20:,.0f} MiB in all)\n"
        f"  database growth: {per_day / 2**30:,.2f} GiB/day ({(size1 - size0) / 2**20:,.1f} MiB "
        f"in {traffic_s:.0f} s)"
    )
    print(split_report(counts, distinct))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--features", type=int, default=5)
    parser.add_argument("--slices", type=int, default=3)
    parser.add_argument("--rate", type=float, default=300.0, help="events per second")
    parser.add_argument("--window", default="1m")
    parser.add_argument("--duration", type=float, default=150.0, help="seconds of traffic")
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument(
        "--events-per-request", type=int, default=1,
        help="events of consecutive models per request (default 1: each model's own requests)",
    )  # fmt: skip
    parser.add_argument(
        "--interval", type=float, default=0.0,
        help="scheduler.evaluate_interval_s (default: a sixth of the window, at most 10 s)",
    )  # fmt: skip
    parser.add_argument(
        "--drain-delay", type=float, default=0.0,
        help="collect.drain_max_delay in seconds, with the batch and backlog bounds it needs "
        "(default: the config's, 2 s); the window's length writes each window's profiles once",
    )  # fmt: skip
    parser.add_argument(
        "--tick-offset", type=float, default=None,
        help="scheduler.tick_offset_s (default: the config's, 2 s): how long after a window's "
        "end its evaluation (and the drain's batch after it) waits for its last events",
    )  # fmt: skip
    parser.add_argument(
        "--units-at-once", type=int, default=None,
        help="scheduler.units_at_once (default: the config's, 2)",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":
    main()
