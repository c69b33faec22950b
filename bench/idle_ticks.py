"""The evaluate tick's cost with N models and nothing changed: every model (as before issue 40's
fix) against the models with work due (`monitor.app.daemon._due`), alternating in one process.

A PostgreSQL database with N configured models and a history of H consumed windows per model in
`window_changes` (7 kinds each, nothing pending, no failing item). Four ticks, `--rounds` times
each, alternating:

- queue, every model: `WorkQueue.evaluate()` defers a unit per configured model and waits for
  this process's worker to run them (each unit evaluates its model and finds nothing);
- queue, models with work: `Monitoring._evaluate` (the producer's tick) defers the due models'
  units only;
- in process, every model / models with work: SQLite's path (`WindowEvaluator.run` over every
  model / `Monitoring._evaluate` without a queue), on the same PostgreSQL.

Reported per tick (median): wall and process CPU seconds (producer and worker are this process),
SQL statements sent through SQLAlchemy (procrastinate's own go through psycopg and are not
counted), PostgreSQL transactions of the database (`pg_stat_database`, every client: the
queue's included), and the units deferred. Usage:

    PYTHONPATH=. python bench/idle_ticks.py [--models 1000] [--history 100] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from sqlalchemy import event, select, text
from sqlalchemy.engine import Engine

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.api_ingest import PG  # noqa: E402
from bench.fleet import config_doc, model_names  # noqa: E402
from migrations import upgrade  # noqa: E402
from monitor.app.daemon._due import UNIT_KINDS  # noqa: E402
from monitor.app.daemon._work_queue import WorkQueue  # noqa: E402
from monitor.app.daemon.wiring import Monitoring  # noqa: E402
from monitor.config import parse_config  # noqa: E402
from monitor.storage import WindowChange, make_engine, utcnow  # noqa: E402

HISTORY = """
INSERT INTO window_changes (model, kind, version, window_start, window_end, seq, pending,
                            changed_at)
SELECT 'm' || lpad(m::text, 4, '0'), k, '1', now() - (w || ' minutes')::interval,
       now() - ((w - 1) || ' minutes')::interval, 1, false, now()
FROM generate_series(0, :n - 1) m, generate_series(1, :h) w, unnest(CAST(:kinds AS text[])) k
"""
# pg_stat_database lags an idle backend by up to 10 s (PostgreSQL 15): settle around each tick.
SETTLE_S = 11.0


def history(engine: Engine, n: int, h: int) -> int:
    with engine.begin() as conn:
        conn.execute(text(HISTORY), {"n": n, "h": h, "kinds": list(UNIT_KINDS[:7])})
        conn.execute(text("ANALYZE window_changes"))
        return int(conn.execute(text("SELECT count(*) FROM window_changes")).scalar_one())


def transactions(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT xact_commit + xact_rollback FROM pg_stat_database "
                    "WHERE datname = current_database()"
                )
            ).scalar_one()
        )


def pending_plan(engine: Engine, models: list[str]) -> list[str]:
    """The due query's plan on this history (EXPLAIN ANALYZE)."""
    stmt = (
        select(WindowChange.model)
        .where(
            WindowChange.model.in_(models),
            WindowChange.kind.in_(UNIT_KINDS),
            WindowChange.pending.is_(True),
        )
        .distinct()
    )
    with engine.connect() as conn:
        compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
        lines = conn.exec_driver_sql(f"EXPLAIN ANALYZE {compiled}", compiled.params).scalars()
        return [line[:120] for line in lines if "Index" in line or "Execution" in line]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--history", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    url = PG.create_database()
    engine = make_engine(url)
    upgrade(engine)
    models = model_names(args.models)
    rows = history(engine, args.models, args.history)
    print(f"{args.models} models, {rows} window_changes rows (none pending)")
    print("\n".join(pending_plan(engine, models)))
    cfg = parse_config(config_doc(url, models, timedelta(minutes=1), 10))
    shared, alone = Monitoring(engine, cfg), Monitoring(engine, cfg)
    queue = WorkQueue(engine, models, shared.unit, lease_s=600, holder="bench")
    shared.share(queue)
    stop = threading.Event()
    worker = threading.Thread(target=queue.work, args=(stop,), daemon=True)
    worker.start()
    statements = [0]

    def count(*_args: object) -> None:
        statements[0] += 1

    event.listen(engine, "before_cursor_execute", count)
    ticks: dict[str, Callable[[], int]] = {
        "queue, every model": lambda: queue.evaluate(),
        "queue, models with work": lambda: queue.evaluate(shared.due(utcnow())),
        "in process, every model": lambda: len(alone.windows.run(utcnow())),
        "in process, models with work": lambda: len(alone._evaluate(utcnow())),
    }
    seen: dict[str, list[tuple[float, float, int, int, int]]] = {k: [] for k in ticks}
    time.sleep(2)  # the worker is up
    for _ in range(args.rounds):
        for name, tick in ticks.items():
            time.sleep(SETTLE_S)
            statements[0], before = 0, transactions(engine)
            wall, cpu = time.perf_counter(), time.process_time()
            units = tick()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            sent = statements[0]
            time.sleep(SETTLE_S)
            xacts = transactions(engine) - before - 1  # less the first look's own
            seen[name].append((wall, cpu, sent, xacts, units))
            print(f"{name}: {seen[name][-1]}", flush=True)
    stop.set()
    worker.join(10)
    queue.close()
    print(f"\nload average {os.getloadavg()[0]:.1f}, {args.rounds} rounds")
    print("| tick | wall | process CPU | SQL statements | PG transactions | units deferred |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, runs in seen.items():

        def med(i: int, runs: list[tuple[float, float, int, int, int]] = runs) -> float:
            return statistics.median(r[i] for r in runs)

        print(f"| {name} | {med(0):.3f} s | {med(1):.3f} s | {med(2):,.0f} | {med(3):,.0f} | "
              f"{runs[-1][4]:,} |")  # fmt: skip
    engine.dispose()


if __name__ == "__main__":
    main()
