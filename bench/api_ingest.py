"""HTTP ingest throughput: `POST /v1/events` from N clients vs `Ingestor.ingest` in-process.

A real `modelwatch serve` on loopback; N client threads (httpx) post batches of 100 events with
20 features, each with its own Idempotency-Key, until all batches are sent. The ceiling is the
same payloads, in the same batches and positions, through `collectors.Ingestor` in this
process on a fresh database. Usage:

    PYTHONPATH=. python bench/api_ingest.py [--events 20000] [--clients 1,4] \\
        [--db sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import os
import platform
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.ingest import make_events  # noqa: E402
from migrations import upgrade  # noqa: E402
from monitor.config import parse_config  # noqa: E402
from monitor.storage import make_engine  # noqa: E402
from tests.services.net import free_port  # noqa: E402

TOKEN = "bench-ingest-token"
BATCH = 100
CONFIG = """\
database_url: {url}
models:
  - name: fraud
    slices: [region]
api:
  tokens: [{{name: bench, scopes: [ingest], token: {token}}}]
  max_body_bytes: 10485760
collect:
  window: 1h
"""


def make_batches(n: int) -> list[list[bytes]]:
    """The Kafka benchmark's events (16 numeric, 4 categorical features) in batches of BATCH."""
    events = make_events(n)
    return [events[i : i + BATCH] for i in range(0, n, BATCH)]


@contextmanager
def database(kind: str, directory: Path, name: str) -> Iterator[str]:
    """A fresh database URL at schema head."""
    if kind == "sqlite":
        url = f"sqlite:///{directory / name}.db"
    else:
        url = PG.create_database()
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    yield url


@contextmanager
def server(url: str, directory: Path) -> Iterator[str]:
    config = directory / f"mw-{time.monotonic_ns()}.yaml"
    config.write_text(CONFIG.format(url=url, token=TOKEN))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MODELWATCH_DATABASE_URL", None)
    args = ["-m", "monitor", "serve", "--config", str(config), "--port", str(port)]
    proc = subprocess.Popen([sys.executable, *args], env=env, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(30)


def over_http(base: str, batches: list[list[bytes]], clients: int) -> float:
    """Events per second with `clients` threads posting the batches."""
    work: queue.Queue[tuple[int, bytes]] = queue.Queue()
    for i, batch in enumerate(batches):
        work.put((i, b"[" + b",".join(batch) + b"]"))
    accepted = [0] * clients

    def client(slot: int) -> None:
        headers = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
        with httpx.Client(base_url=base, headers=headers, timeout=120) as http:
            while True:
                try:
                    i, body = work.get_nowait()
                except queue.Empty:
                    return
                resp = http.post("/v1/events", content=body, headers={"Idempotency-Key": f"b{i}"})
                resp.raise_for_status()
                accepted[slot] += resp.json()["accepted"]

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    total = sum(len(b) for b in batches)
    assert sum(accepted) == total, (sum(accepted), total)
    return total / elapsed


def in_process(url: str, batches: list[list[bytes]]) -> float:
    """Events per second through `Ingestor.ingest`, the same batches and positions."""
    from collectors import Batch, Ingestor, RawRecord

    config = parse_config({"models": [{"name": "fraud", "slices": ["region"]}]})
    engine = make_engine(url)
    ingestor = Ingestor(engine, "http", "http", config.models, config.collect)
    started = time.perf_counter()
    for i, batch in enumerate(batches):
        key = f"idem:b{i}"
        records = [RawRecord(key, j, j + 1, p) for j, p in enumerate(batch)]
        ingestor.ingest(Batch(records))
        ingestor.states.pop(key, None)
    elapsed = time.perf_counter() - started
    engine.dispose()
    return sum(len(b) for b in batches) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--clients", default="1,4")
    parser.add_argument("--db", default="sqlite,postgresql")
    args = parser.parse_args()
    batches = make_batches(args.events)
    cpu = platform.processor() or platform.machine()
    print(f"{args.events} events in batches of {BATCH}, 20 features; {os.cpu_count()} cores {cpu}")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for kind in args.db.split(","):
            with database(kind, directory, "ceiling") as url:
                ceiling = in_process(url, batches)
            print(f"{kind:10s} in-process Ingestor.ingest: {ceiling:9,.0f} events/s (ceiling)")
            for clients in (int(c) for c in args.clients.split(",")):
                with database(kind, directory, f"http{clients}") as url:
                    with server(url, directory) as base:
                        rate = over_http(base, batches, clients)
                print(
                    f"{kind:10s} POST /v1/events, {clients} client(s): {rate:9,.0f} events/s "
                    f"({rate / ceiling:.2f}x the ceiling)"
                )


class _LazyPostgres:
    """Starts the throwaway PostgreSQL on first use and stops it at exit."""

    server: object | None = None

    def create_database(self) -> str:
        if self.server is None:
            import atexit

            from tests.services.postgres import PostgresServer

            pg = PostgresServer()
            pg.start()
            atexit.register(pg.stop)
            self.server = pg
        url: str = self.server.create_database()  # type: ignore[attr-defined]
        return url


PG = _LazyPostgres()

if __name__ == "__main__":
    main()
