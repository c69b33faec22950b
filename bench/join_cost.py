"""The label join's CPU per event, in-process: `Ingestor.ingest` with the join on minus off.

`PYTHONPATH=. python bench/join_cost.py [--events 40000] [--reps 3] [--fetch N] [--no-postgres]
[--profile sqlite|postgresql]` feeds the stream of `bench/ingest.py` (N events of 20 features, a
label for each prediction 1,000 messages after it; with `--fetch`, in a consumer's order) to
`Ingestor.ingest` in 5,000-record batches, with the join off and on, alternating, on SQLite
and PostgreSQL; prints the client's CPU (`process_time`)
per event and, on PostgreSQL, the server's (its backends' CPU from /proc), each rep and the
medians, and the client CPU spent inside `join_labels` itself ("in join_labels": the join's
own cost, far steadier than the difference of two whole runs). CPU time is less sensitive than
wall time to a shared machine's load, not immune to it. `--fetch 20000` reads whole partitions
in turn (at 40,000 events): the predictions of a partition wait for labels read later, the
order of a consumer starting on a backlog and the direction of production, where labels come
after their predictions. `--profile sqlite|postgresql` prints where the join's time goes
(cProfile of one join-on run, callees of `join_labels` and its parts).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ingest import load, make_events, with_labels  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def server_cpu(datadir: Path) -> float:
    """CPU seconds of a PostgreSQL server: the postmaster with its reaped children, and the
    children still running."""
    postmaster = int((datadir / "postmaster.pid").read_text().split()[0])
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry.name), int(fields[1])
        if pid == postmaster:
            total += sum(int(f) for f in fields[11:15]) / _TICK  # utime stime cutime cstime
        elif ppid == postmaster:
            total += sum(int(f) for f in fields[11:13]) / _TICK
    return total


def consumer_order(messages: list[bytes], fetch: int, partitions: int = 4) -> list[bytes]:
    """The messages as a consumer of a topic they were produced to round-robin reads them,
    `fetch` messages of each partition in turn (0: as produced)."""
    if fetch <= 0:
        return messages
    parts = [messages[p::partitions] for p in range(partitions)]
    longest = max(len(p) for p in parts)
    return [
        m for start in range(0, longest, fetch) for p in parts for m in p[start : start + fetch]
    ]


class _Timed:
    """`join_labels` that adds its own CPU seconds to `spent` (the join's in-call cost)."""

    def __init__(self, join: Any) -> None:
        self.join, self.spent = join, 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return self.join(*args, **kwargs)
        finally:
            self.spent += time.process_time() - start


def run(
    url: str, messages: list[bytes], join: bool, pg: Any, profile: bool
) -> tuple[float, float, float]:
    """(client CPU s, server CPU s, client CPU s inside `join_labels`) of ingesting the
    messages after the first batch."""
    import collectors._ingest as ingest_module
    from collectors import Ingestor, RawRecord
    from migrations import upgrade
    from monitor.config import CollectConfig, ModelConfig
    from monitor.storage import make_engine

    engine = make_engine(url)
    upgrade(engine)
    settings = CollectConfig(join_labels=join, pipeline=False)
    models = [ModelConfig(name="fraud", slices=["region"])]
    ing = Ingestor(engine, "bench", "kafka", models, settings)
    records = [RawRecord("p", i, i + 1, m) for i, m in enumerate(messages)]
    batches = [records[i : i + 5000] for i in range(0, len(records), 5000)]
    ing.ingest(batches[0])
    timed = _Timed(ingest_module.join_labels)
    ingest_module.join_labels = timed  # type: ignore[assignment]
    profiler = cProfile.Profile(time.process_time) if profile else None  # CPU, not waits
    server = server_cpu(pg.datadir) if pg is not None else 0.0
    start = time.process_time()
    if profiler is not None:
        profiler.enable()
    try:
        for batch in batches[1:]:
            ing.ingest(batch)
    finally:
        ingest_module.join_labels = timed.join  # type: ignore[assignment]
    if profiler is not None:
        profiler.disable()
    client = time.process_time() - start
    engine.dispose()
    if pg is not None:
        time.sleep(0.3)  # the backends exit and are reaped into the postmaster's counts
        server = server_cpu(pg.datadir) - server
    if profiler is not None:
        stats = pstats.Stats(profiler)
        for name in (
            "join_labels",
            "_match",
            "_take_predictions",
            "_take_labels",
            "take",
            "_read_bodies",
            "_mark",
            "_wait",
            "wait",
            "add_joined",
            "merge_stored",
            "summarize_pairs",
            "expire",
        ):
            stats.sort_stats("cumulative").print_callees(f"\\({name}\\)", 40)
        stats.sort_stats("tottime").print_stats(25)
    return client, server, timed.spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=40_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--profile", choices=["sqlite", "postgresql"])
    parser.add_argument(
        "--fetch",
        type=int,
        default=0,
        help="read as a consumer of the 4-partition topic does: N messages of each partition "
        "in turn (0: topic order; in partition order most labels wait for their predictions)",
    )
    args = parser.parse_args()
    messages = consumer_order(with_labels(make_events(args.events)), args.fetch)
    per_event = (len(messages) - 5000) / 2 / 1e6  # the first batch is left out
    pg = None
    if not args.no_postgres:
        from tests.services.postgres import PostgresServer

        pg = PostgresServer()
        pg.start()
    try:
        if args.profile:
            with tempfile.TemporaryDirectory() as tmp:
                url = (
                    pg.create_database()
                    if args.profile != "sqlite" and pg
                    else f"sqlite:///{tmp}/p.db"
                )
                run(url, messages, True, None, True)
            return
        order = f"partitions read {args.fetch} at a time" if args.fetch else "topic order"
        print(f"{args.events} events + labels, {order}, 5,000-record batches; load {load()}")
        dbs = ["sqlite"] + (["postgresql"] if pg is not None else [])
        costs: dict[str, list[float]] = {}
        for rep in range(args.reps):
            for db in dbs:
                got = {}
                for join in (False, True):
                    with tempfile.TemporaryDirectory() as tmp:
                        url = (
                            pg.create_database()
                            if db != "sqlite" and pg
                            else f"sqlite:///{tmp}/b.db"
                        )
                        got[join] = run(url, messages, join, pg if db != "sqlite" else None, False)
                row = {
                    f"{db} client off": got[False][0] / per_event,
                    f"{db} client on": got[True][0] / per_event,
                    f"{db} client join": (got[True][0] - got[False][0]) / per_event,
                    f"{db} in join_labels": got[True][2] / per_event,
                }
                if db != "sqlite":
                    row[f"{db} server off"] = got[False][1] / per_event
                    row[f"{db} server on"] = got[True][1] / per_event
                    row[f"{db} server join"] = (got[True][1] - got[False][1]) / per_event
                print(f"rep {rep + 1} (load {load()}): " + ", ".join(
                    f"{k} {v:.1f}" for k, v in row.items()))  # fmt: skip
                for k, v in row.items():
                    costs.setdefault(k, []).append(v)
        print(f"medians, CPU µs per event (load {load()}):")
        for key, values in costs.items():
            print(f"  {key}: {statistics.median(values):.1f}")
    finally:
        if pg is not None:
            pg.stop()


if __name__ == "__main__":
    main()
