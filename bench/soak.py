"""Soak: the evaluate tick on PostgreSQL with 7, 28 and 90 days of hourly history.

For each history length, a fresh database gets a baseline and then `days * 24` hourly windows of
back-dated traffic written through the real ingest path (`Ingestor.ingest`, one batch per day):
20 features (16 numeric, 4 categorical), 10 values of the `region` slice, and a label for every
prediction. Per-window traffic is scaled down (`--per-window`, default 20 events) to keep the run
reasonable on 2 shared cores. With 20 events a slice holds ~2 rows, so every slice result is
`insufficient_data` and the detectors never run: a production-like burst needs slices of at least
`min_n` rows (`--per-window 400`: ~40 per region) and windows of differing sizes (`--vary-n 0.25`:
each window's event count drawn uniformly within +-25% of `--per-window`, seeded), since the
detectors' bootstrap null is cached per sample size. `--vary-n 0` (the default) keeps the old
fixed-size windows, so earlier numbers stay reproducible. Then it records:

- the first tick (every window changed: the burst of the whole history), its time per result;
- the idle tick (nothing changed), median of 5, right after that burst and after VACUUM ANALYZE;
- the tick after one new window (ingested with labels), median of 3;
- a burst of `--burst` changed windows (markers set on existing windows), time per result,
  evaluated in batches (the evaluator's default) and, unless `--no-compare`, first window by
  window (batches of one: the path before batching), with an md5 of the drift rows after each
  (`same_rows`: the two paths stored identical rows);
- the database size per day of history, and the day and week result rows stored (0017: the ticks
  above include evaluating the changed windows' days and weeks; those rows are not counted as
  results in the ms-per-result figures);
- "before": the per-tick queries of the previous evaluator (GROUP BY over every profile row, every
  joined row loaded, GROUP BY over every result row) timed on the same database.

Usage: python bench/soak.py [--days 7,28,90] [--per-window 20] [--vary-n 0] [--burst 1000]
[--profile OUT] [--no-compare]
(`--profile OUT`: cProfile of the burst tick written to OUT, for `python -m pstats`.)
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sqlalchemy import func, select, text  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402

import monitor.evaluation.windows  # noqa: E402
from collectors import Ingestor, RawRecord  # noqa: E402
from migrations import upgrade  # noqa: E402
from monitor.app.daemon.wiring import Monitoring  # noqa: E402
from monitor.baselines.store import save_baseline  # noqa: E402
from monitor.config import Config, parse_config  # noqa: E402
from monitor.storage import (  # noqa: E402
    DriftResultRow,
    LabeledPrediction,
    OutcomeResultRow,
    WindowProfile,
    make_engine,
    mark_changed,
    session_factory,
    transaction,
)
from tests.services.postgres import PostgresServer  # noqa: E402

END = datetime(2026, 6, 1, tzinfo=UTC)
REGIONS = [f"r{i}" for i in range(10)]


def features(rng: random.Random) -> dict[str, object]:
    out: dict[str, object] = {f"num{j}": round(rng.gauss(j, 1 + j), 4) for j in range(16)}
    out.update({f"cat{j}": rng.choice("abcde") for j in range(4)})
    return out


def window_records(rng: random.Random, start: datetime, n: int, tag: str) -> list[bytes]:
    """n predictions in the window starting at `start`, each with its label."""
    out = []
    for i in range(n):
        ts = start.timestamp() + (i + 0.5) * 3600 / n
        rid = f"{tag}-{i}"
        score = round(rng.random(), 4)
        out.append(
            orjson.dumps(
                {
                    "request_id": rid,
                    "model": "fraud",
                    "model_version": "1",
                    "timestamp": ts,
                    "features": features(rng),
                    "prediction": score,
                    "metadata": {"region": rng.choice(REGIONS)},
                }
            )
        )
        label = int(rng.random() < score)
        out.append(
            orjson.dumps({"request_id": rid, "model": "fraud", "label": label, "timestamp": ts})
        )
    return out


def config(url: str) -> Config:
    model = {"name": "fraud", "slices": ["region"], "outcomes": {"baseline": {"accuracy": 0.6}}}
    return parse_config({"database_url": url, "models": [model]}, env={})


def save_reference(engine: Engine) -> None:
    import pandas as pd

    from monitor.profiles import profile_frame, specs_for

    rng = random.Random(7)
    rows = [
        {**features(rng), "prediction": rng.random(), "region": rng.choice(REGIONS)}
        for _ in range(5000)
    ]
    frame = pd.DataFrame(rows)
    cols = [c for c in frame.columns if c != "region"]
    save_baseline(engine, "fraud", "1", profile_frame(frame, specs_for(cols, frame), ["region"]))


def window_size(rng: random.Random, per_window: int, vary: float) -> int:
    """One window's event count: `per_window`, or uniform within +-`vary` of it (at least 1)."""
    if vary <= 0:
        return per_window
    low, high = round(per_window * (1 - vary)), round(per_window * (1 + vary))
    return max(1, rng.randint(low, high))


class Feed:
    def __init__(self, engine: Engine, cfg: Config, vary: float = 0.0) -> None:
        self.ing = Ingestor(engine, "soak", "http", cfg.models, cfg.collect)
        self.offset = 0
        self.rng = random.Random(1)
        # A generator of its own: with vary 0 the events are those of the fixed-size soak.
        self.sizes = random.Random(2)
        self.vary = vary

    def windows(self, starts: list[datetime], per_window: int) -> None:
        records = []
        for start in starts:
            n = window_size(self.sizes, per_window, self.vary)
            for payload in window_records(self.rng, start, n, f"w{start.timestamp():.0f}"):
                records.append(RawRecord("soak", self.offset, self.offset + 1, payload))
                self.offset += 1
        self.ing.ingest(records)


def results(engine: Engine) -> int:
    with session_factory(engine)() as s:
        drift = s.scalar(select(func.count()).select_from(DriftResultRow)) or 0
        outcome = s.scalar(select(func.count()).select_from(OutcomeResultRow)) or 0
    return int(drift) + int(outcome)


def server_cpu_s(server: PostgresServer) -> float:
    """CPU seconds used so far by the PostgreSQL server's backends (children of the postmaster):
    with the client's `time.process_time()`, a cost that the machine's load barely moves."""
    postmaster = (server.datadir / "postmaster.pid").read_text().split()[0]
    tick_s = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        if fields[1] == postmaster:  # ppid; then utime, stime at 11, 12 (after the comm)
            total += int(fields[11]) + int(fields[12])
    return total / tick_s


def cpu_burst(server: PostgresServer, run: Any) -> tuple[float, int, float]:
    """`run()`'s (seconds, results) and the CPU seconds it cost, client and server."""
    cpu = time.process_time() + server_cpu_s(server)
    seconds, count = run()
    return seconds, count, time.process_time() + server_cpu_s(server) - cpu


def tick(monitoring: Monitoring) -> tuple[float, int]:
    started = time.perf_counter()
    done = monitoring(now=END)
    seconds = time.perf_counter() - started
    return seconds, sum(len(e.drift) + len(e.outcomes) for e in done)


CHECKSUM = """
SELECT md5(string_agg(concat_ws('|', model, version, window_start, slice_key, "column", method,
                                value, threshold, threshold_by, p_value, n_reference, n_current,
                                status), ',' ORDER BY window_start, slice_key, "column", method))
FROM drift_results
"""


def checksum(engine: Engine) -> str:
    """md5 of every drift row but its id and computation time: equal rows, equal checksum."""
    with engine.connect() as conn:
        return str(conn.execute(text(CHECKSUM)).scalar_one())


def mark_burst(engine: Engine, starts: list[datetime]) -> None:
    with transaction(engine) as s:
        for kind in ("drift", "outcome"):
            mark_changed(s, kind, [("fraud", "1", st, st + timedelta(hours=1)) for st in starts])


def window_by_window(monitoring: Monitoring) -> tuple[float, int]:
    """The burst tick with batches of one window: the per-window path (before batching)."""
    batched = monitor.evaluation.windows.batches
    monitor.evaluation.windows.batches = functools.partial(batched, size=1)
    try:
        return tick(monitoring)
    finally:
        monitor.evaluation.windows.batches = batched


def vacuum(engine: Engine) -> None:
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("VACUUM ANALYZE")


def before_idle(engine: Engine) -> float:
    """The previous evaluator's per-tick queries on this database (idle: they found nothing)."""
    started = time.perf_counter()
    with session_factory(engine)() as s:
        p = WindowProfile
        s.execute(
            select(p.version, p.window_start, func.max(p.updated_at))
            .where(p.model == "fraud")
            .group_by(p.version, p.window_start)
        ).all()
        lp = LabeledPrediction
        s.execute(select(lp.version, lp.ts, lp.joined_at).where(lp.model == "fraud")).all()
        for table in (DriftResultRow, OutcomeResultRow):
            s.execute(
                select(table.version, table.window_start, func.max(table.computed_at))
                .where(table.model == "fraud")
                .group_by(table.version, table.window_start)
            ).all()
            s.execute(
                select(table.version, func.max(table.window_start))
                .where(table.model == "fraud")
                .group_by(table.version)
            ).all()
    return time.perf_counter() - started


def soak(
    server: PostgresServer,
    days: int,
    per_window: int,
    burst: int,
    profile: str | None = None,
    compare: bool = True,
    vary: float = 0.0,
) -> dict[str, Any]:
    url = server.create_database()
    engine = make_engine(url)
    upgrade(engine)
    cfg = config(url)
    save_reference(engine)
    feed = Feed(engine, cfg, vary)
    first = END - timedelta(days=days)
    started = time.perf_counter()
    for day in range(days):
        feed.windows([first + timedelta(days=day, hours=h) for h in range(24)], per_window)
    ingest_s = time.perf_counter() - started
    monitoring = Monitoring(engine, cfg)
    all_s, all_results = tick(monitoring)
    # Right after a burst, the consumed markers' old row versions are still in the index until
    # (auto)vacuum; steady state is measured after VACUUM ANALYZE, as autovacuum leaves it.
    after_burst = statistics.median(tick(monitoring)[0] for _ in range(5))
    vacuum(engine)
    idle = statistics.median(tick(monitoring)[0] for _ in range(5))
    new = []
    for i in range(3):
        feed.windows([END + timedelta(hours=i)], per_window)
        new.append(tick(monitoring)[0])
    out: dict[str, Any] = {
        "days": days,
        "per_window": per_window,
        "vary_n": vary,
        "windows": days * 24,
        "ingest_s": ingest_s,
        "first_tick_s": all_s,
        "first_tick_results": all_results,
        "idle_tick_ms": idle * 1000,
        "idle_tick_right_after_burst_ms": after_burst * 1000,
        "new_window_tick_s": statistics.median(new),
        "before_idle_tick_ms": statistics.median(before_idle(engine) for _ in range(3)) * 1000,
    }
    if days * 24 >= burst:
        starts = [first + timedelta(hours=h) for h in range(burst)]
        # Each burst starts from a vacuumed table, as autovacuum leaves it between bursts: the
        # second would otherwise wade through the first one's dead row versions.
        if compare:
            vacuum(engine)
            mark_burst(engine, starts)
            one_s, _, one_cpu = cpu_burst(server, lambda: window_by_window(monitoring))
            out |= {"burst_window_by_window_cpu_s": one_cpu}
            out |= {
                "burst_window_by_window_s": one_s,
                "burst_window_by_window_sum": checksum(engine),
            }
        vacuum(engine)
        mark_burst(engine, starts)
        profiler = cProfile.Profile() if profile else None
        if profiler is not None:
            profiler.enable()
        server_cpu = server_cpu_s(server)
        b_s, b_results, b_cpu = cpu_burst(server, lambda: tick(monitoring))
        out["burst_server_cpu_s"] = server_cpu_s(server) - server_cpu  # PostgreSQL's share
        if profiler is not None and profile:
            profiler.disable()
            profiler.dump_stats(profile)
        out |= {"burst_s": b_s, "burst_results": b_results, "burst_sum": checksum(engine)}
        out |= {"burst_cpu_s": b_cpu}
    with engine.connect() as conn:
        size = conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
        periods = conn.execute(
            text("SELECT (SELECT count(*) FROM drift_period_results) + "
                 "(SELECT count(*) FROM outcome_period_results)")
        ).scalar_one()  # fmt: skip
    out["period_rows"] = periods  # day and week results (0017), not counted as results above
    out["mb_per_day"] = size / 2**20 / days
    out["load_average_1m"] = os.getloadavg()[0]
    engine.dispose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", default="7,28,90")
    parser.add_argument("--per-window", type=int, default=20)
    parser.add_argument(
        "--vary-n", type=float, default=0.0,
        help="each window's event count uniform within +-this fraction of --per-window",
    )  # fmt: skip
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--profile", default=None)
    parser.add_argument("--no-compare", action="store_true", help="skip the per-window burst")
    args = parser.parse_args()
    if not 0 <= args.vary_n < 1:
        parser.error(f"--vary-n: {args.vary_n} is not in [0, 1)")
    server = PostgresServer()
    server.start()
    try:
        for days in (int(d) for d in args.days.split(",")):
            row = soak(server, days, args.per_window, args.burst, args.profile,
                       not args.no_compare, args.vary_n)  # fmt: skip
            per = row["first_tick_s"] / max(row["first_tick_results"], 1) * 1000
            row["first_tick_ms_per_result"] = per
            if "burst_s" in row:
                row["burst_ms_per_result"] = row["burst_s"] / max(row["burst_results"], 1) * 1000
                row["burst_cpu_ms_per_result"] = row["burst_cpu_s"] / row["burst_results"] * 1000
                if "burst_window_by_window_s" in row:
                    for k in ("burst_window_by_window_s", "burst_window_by_window_cpu_s"):
                        per = row[k] / max(row["burst_results"], 1) * 1000
                        row[k.removesuffix("_s") + "_ms_per_result"] = per
                    row["same_rows"] = row["burst_sum"] == row["burst_window_by_window_sum"]
            print(orjson.dumps(row, option=orjson.OPT_INDENT_2).decode(), flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
