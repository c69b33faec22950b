"""Alerts: evaluation cost per batch, and outbox delivery against its floor (plain POSTs).

Run: python -m bench.alerts_bench [--db sqlite,postgresql] [--concurrency 1,8]
(SQLite in a temporary directory, a throwaway PostgreSQL, a loopback receiver)
"""

from __future__ import annotations

import argparse
import atexit
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from alerts import DeliveryWorker, Evaluator, Signal
from migrations import upgrade
from monitor.config.alerts import AlertsConfig
from monitor.storage import make_engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.alerts.receiver import RecordingReceiver  # noqa: E402
from tests.services.postgres import PostgresServer  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _signals(models: int, columns: int, firing: bool) -> list[Signal]:
    return [
        Signal("drift", {"model": f"m{m}", "column": f"c{c}"}, 0.3, 0.2, firing, T0)
        for m in range(models)
        for c in range(columns)
    ]


def _plain_posts(client: httpx.Client, url: str, bodies: list[bytes], concurrency: int) -> float:
    """Seconds to POST `bodies` with `concurrency` requests in flight, no outbox."""

    def post(body: bytes) -> None:
        client.post(url, content=body, headers={"Idempotency-Key": "x"})

    start = time.perf_counter()
    if concurrency == 1:
        for body in bodies:
            post(body)
    else:
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(post, bodies))
    return time.perf_counter() - start


def _config(url: str, concurrency: int) -> AlertsConfig:
    return AlertsConfig.model_validate(
        {
            "grouping": {"group_by": ["model", "column"]},
            "receivers": [{"name": "hook", "type": "webhook", "url": url}],
            "rules": [{"name": "Drift", "kind": "drift", "receivers": ["hook"]}],
            "delivery": {"concurrency": concurrency},
        }
    )


def run(url: str, kind: str, receiver: RecordingReceiver, concurrency: int) -> None:
    """Queue 1,000 notifications in a fresh database, deliver them, compare with plain POSTs."""
    cfg = _config(receiver.url, concurrency)
    engine = make_engine(url)
    upgrade(engine)
    ev = Evaluator(engine, cfg)
    batch = _signals(50, 20, True)
    start = time.perf_counter()
    ev.evaluate(batch, T0)
    first = time.perf_counter() - start
    start = time.perf_counter()
    result = ev.evaluate(batch, T0 + timedelta(seconds=30))
    flush = time.perf_counter() - start
    print(
        f"{kind:10s} evaluate {len(batch)} signals: new {first:.3f}s, steady+queue "
        f"{result.notifications} notifications {flush:.3f}s"
    )
    receiver.requests.clear()
    with httpx.Client() as client:
        worker = DeliveryWorker(engine, cfg, client, env={})
        start = time.perf_counter()
        sent = worker.run(once=True).sent
        outbox_s = time.perf_counter() - start
        bodies = [r.body for r in receiver.requests]
        sequential_s = _plain_posts(client, receiver.url, bodies, 1)
        if concurrency > 1:
            parallel_s = _plain_posts(client, receiver.url, bodies, concurrency)
    engine.dispose()
    line = (
        f"{kind:10s} concurrency {concurrency}: outbox {sent / outbox_s:.0f}/s; plain POSTs "
        f"one at a time {len(bodies) / sequential_s:.0f}/s (ratio {sequential_s / outbox_s:.2f})"
    )
    if concurrency > 1:
        line += f", {concurrency} at a time {len(bodies) / parallel_s:.0f}/s "
        line += f"(ratio {parallel_s / outbox_s:.2f})"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", default="sqlite,postgresql")
    parser.add_argument("--concurrency", default="1,8")
    args = parser.parse_args()
    receiver = RecordingReceiver()
    receiver.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for kind in args.db.split(","):
                for concurrency in (int(c) for c in args.concurrency.split(",")):
                    url = (
                        f"sqlite:///{tmp}/{concurrency}.db"
                        if kind == "sqlite"
                        else PG.create_database()
                    )
                    run(url, kind, receiver, concurrency)
    finally:
        receiver.stop()


class _LazyPostgres:
    """Starts the throwaway PostgreSQL on first use and stops it at exit."""

    server: PostgresServer | None = None

    def create_database(self) -> str:
        if self.server is None:
            self.server = PostgresServer()
            self.server.start()
            atexit.register(self.server.stop)
        return self.server.create_database()


PG = _LazyPostgres()


if __name__ == "__main__":
    main()
