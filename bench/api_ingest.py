"""HTTP ingest throughput: `POST /v1/events` against a floor measured in the same run.

A real `modelwatch serve` on loopback; N client threads (httpx) post batches of 100 events with
20 features, each with its own Idempotency-Key, until all batches are sent. Two rates: *acked*
(all requests answered: appended to the intake log) and *aggregated* (until the drain has
counted every event in the window aggregates: the sustained rate). Before the clients start,
one request posted with `?wait=` makes sure the drain's worker process is up (its start-up is
no part of the measured seconds), and each server process's CPU per request while
acknowledging is read from /proc, as is the drain worker's until everything is counted, and
the share of that time the drain was runnable but waiting for a CPU (a shared host's load).
*Sustained* = events / seconds until all are counted: what the API keeps up with.

The floor and the API run side by side: both servers are up together and the batches go in
`--slices` parts, each to the floor and then to the API (until counted), so the load of a shared
machine, which moves by 2-3x within a minute, falls on both alike; the rates are events over the
summed seconds of the slices.

The floor is a minimal endpoint on the same stack (FastAPI + uvicorn in its own process, the
same engine settings) that parses the same JSON and INSERTs the raw body with its key, one
transaction per request, posted to by the same clients. Usage:

    PYTHONPATH=. python bench/api_ingest.py [--events 40000] [--clients 4] \\
        [--db sqlite,postgresql] [--rounds 2] [--slices 4]
"""

from __future__ import annotations

import argparse
import contextlib
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
from fastapi import FastAPI, Request
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.ingest import make_events  # noqa: E402
from migrations import upgrade  # noqa: E402
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
def server(url: str, directory: Path, extra: str = "") -> Iterator[tuple[str, int]]:
    """`modelwatch serve` on `url` with the benchmark's config plus `extra` (more YAML keys)."""
    config = directory / f"mw-{time.monotonic_ns()}.yaml"
    config.write_text(CONFIG.format(url=url, token=TOKEN) + extra)
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
        warm_up(base, url)
        yield base, proc.pid
    finally:
        proc.terminate()
        proc.wait(30)


# Events posted before the measurement (counted by the drain, so `aggregated` waits for them).
WARM_UP_EVENTS = 1


def warm_up(base: str, url: str) -> None:
    """One request answered only once drained (`?wait=`): the drain's worker process is up
    (spawned, imported, its ingestor made), as in a daemon that has been running a while, so
    its start-up CPU does not fall into the measured seconds."""
    body = b"[" + b",".join(make_events(WARM_UP_EVENTS, seed=99)) + b"]"
    headers = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    resp = httpx.post(
        f"{base}/v1/events?wait=10",
        content=body,
        headers={**headers, "Idempotency-Key": "warm"},
        timeout=30,  # the drain's worker starts slowly on a busy machine
    )
    assert resp.status_code in (200, 202), (resp.status_code, resp.text)
    deadline = time.monotonic() + 300  # a loaded machine starts the drain's worker slowly
    while aggregated(url) < WARM_UP_EVENTS:
        assert time.monotonic() < deadline, "the drain never counted the warm-up request"
        time.sleep(0.1)


FLOOR_TABLE = "bench_floor_log"


def floor_app(url: str) -> object:
    """The floor: parse the JSON, INSERT raw body + key in one transaction per request."""
    from sqlalchemy import Column, LargeBinary, MetaData, String, Table, insert

    engine = make_engine(url)
    table = Table(
        FLOOR_TABLE,
        MetaData(),
        Column("key", String(260), primary_key=True),
        Column("body", LargeBinary),
    )
    table.create(engine, checkfirst=True)
    app = FastAPI()

    @app.post("/v1/events", status_code=202)
    async def events(request: Request) -> dict[str, int]:
        body = await request.body()
        n = len(orjson.loads(body))
        key = request.headers["idempotency-key"]

        def store() -> None:
            with engine.begin() as conn:
                conn.execute(insert(table), {"key": key, "body": body})

        await run_in_threadpool(store)
        return {"queued": n}

    return app


@contextmanager
def floor_server(url: str) -> Iterator[tuple[str, int]]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [str(Path(__file__)), "--serve-floor", url, "--port", str(port)]
    proc = subprocess.Popen([sys.executable, *args], env=env, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_up(f"{base}/docs")
        yield base, proc.pid
    finally:
        proc.terminate()
        proc.wait(30)


def _wait_up(url: str) -> None:
    for _ in range(300):
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)


def aggregated(url: str | Engine) -> int:
    """Events the drain has counted so far (`url`: polled often, pass an engine)."""
    from sqlalchemy.orm import Session

    from monitor.storage import IngestCounter

    engine = make_engine(url) if isinstance(url, str) else url
    try:
        with Session(engine) as session:
            row = session.get(IngestCounter, "http", populate_existing=True)
            return row.events if row else 0
    finally:
        if isinstance(url, str):
            engine.dispose()


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of process `pid` so far (its own, not its children's)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu(pid: int) -> float:
    """CPU seconds so far of the live child processes of `pid` (serve: the drain's worker)."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):  # exited meanwhile
                total += cpu_seconds(int(child))
    return total


def children_queued(pid: int) -> float:
    """Seconds the threads of `pid`'s live child processes have waited for a CPU so far
    (/proc schedstat): on a shared host, the part of the drain's time it was runnable but
    not running."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                for thread in Path(f"/proc/{child}/task").iterdir():
                    total += int((thread / "schedstat").read_text().split()[1])
    return total / 1e9


@dataclass(frozen=True)
class Rates:
    """One run's rates (events/s) and CPU per request (ms): the API's and its drain's."""

    acked: float
    aggregated: float
    cpu_ms: float
    drain_ms: float = 0.0
    # Seconds until all was counted, and the drain's seconds waiting for a CPU meanwhile.
    seconds: float = 0.0
    queued: float = 0.0


def over_http(
    base: str,
    batches: list[list[bytes]],
    clients: int,
    pid: int,
    url: str | None = None,
    prefix: str = "b",
) -> Rates:
    """Acked and aggregated events per second with `clients` threads posting the batches, the
    server process's CPU ms per request while acknowledging, and its drain worker's CPU ms per
    request until all is counted; without `url` (the floor) both rates are the acked rate."""
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
                key = {"Idempotency-Key": f"{prefix}{i}"}
                resp = http.post("/v1/events", content=body, headers=key)
                resp.raise_for_status()
                accepted[slot] += resp.json()["queued"]

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    counted = 0 if url is None else aggregated(url)  # what earlier slices posted
    started, cpu, drain_cpu = time.perf_counter(), cpu_seconds(pid), children_cpu(pid)
    queued = children_queued(pid) if url is not None else 0.0
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    acked = time.perf_counter() - started
    cpu_ms = (cpu_seconds(pid) - cpu) * 1e3 / len(batches)
    total = sum(len(b) for b in batches)
    assert sum(accepted) == total, (sum(accepted), total)
    if url is None:
        return Rates(total / acked, total / acked, cpu_ms)
    engine = make_engine(url)  # one connection, polled: no connection set-up per poll
    while aggregated(engine) < counted + total:
        time.sleep(0.02)
    done = time.perf_counter() - started
    engine.dispose()
    drain_ms = (children_cpu(pid) - drain_cpu) * 1e3 / len(batches)
    queued = children_queued(pid) - queued
    return Rates(total / acked, total / done, cpu_ms, drain_ms, done, queued)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=40_000)
    parser.add_argument("--clients", default="4")
    parser.add_argument("--db", default="sqlite,postgresql")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--slices", type=int, default=4, help="floor/API alternations per run")
    parser.add_argument("--serve-floor", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_floor:
        import uvicorn

        app: Any = floor_app(args.serve_floor)
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
        return
    batches = make_batches(args.events)
    cpu = platform.processor() or platform.machine()
    print(f"{args.events} events in batches of {BATCH}, 20 features; {os.cpu_count()} cores {cpu}")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for r in range(args.rounds):
            for kind in args.db.split(","):
                for clients in (int(c) for c in args.clients.split(",")):
                    _one(kind, directory, batches, clients, r, args.slices)


def _one(
    kind: str, directory: Path, batches: list[list[bytes]], clients: int, r: int, slices: int
) -> None:
    """The floor and the API side by side: both servers up, the batches posted in `slices`
    parts, each part to the floor and then to the API (until counted), so a shared machine's
    changing load falls on both alike."""
    size = -(-len(batches) // slices)
    parts = [batches[i : i + size] for i in range(0, len(batches), size)]
    floors: list[Rates] = []
    apis: list[Rates] = []
    with (
        database(kind, directory, f"floor{clients}-{r}") as floor_url,
        floor_server(floor_url) as (floor_base, floor_pid),
        database(kind, directory, f"http{clients}-{r}") as url,
        server(url, directory) as (base, pid),
    ):
        for n, part in enumerate(parts):
            floors.append(over_http(floor_base, part, clients, floor_pid, prefix=f"s{n}-"))
            apis.append(over_http(base, part, clients, pid, url, prefix=f"s{n}-"))
    floor, api = _combined(floors, parts), _combined(apis, parts)
    ack, done, fl = api.acked, api.aggregated, floor.acked
    print(
        f"round {r + 1} {kind:10s} {clients} client(s): floor {fl:9,.0f} ev/s; "
        f"POST /v1/events acked {ack:9,.0f} ev/s ({ack / fl:.0%} of floor), "
        f"sustained (all counted) {done:9,.0f} ev/s ({done / fl:.0%} of floor); CPU per "
        f"request: floor {floor.cpu_ms:.2f} ms, API {api.cpu_ms:.2f} ms, drain "
        f"{api.drain_ms:.2f} ms; drain waiting for a CPU {api.queued / api.seconds:.0%} of "
        f"the time; load {os.getloadavg()[0]:.1f}"
    )


def _combined(rates: list[Rates], parts: list[list[list[bytes]]]) -> Rates:
    """The rates of all slices together: events over the summed seconds; CPU per request."""
    events = [sum(len(b) for b in part) for part in parts]
    requests = [len(part) for part in parts]
    total, n = sum(events), sum(requests)
    return Rates(
        total / sum(e / r.acked for e, r in zip(events, rates, strict=True)),
        total / sum(e / r.aggregated for e, r in zip(events, rates, strict=True)),
        sum(r.cpu_ms * k for r, k in zip(rates, requests, strict=True)) / n,
        sum(r.drain_ms * k for r, k in zip(rates, requests, strict=True)) / n,
        sum(r.seconds for r in rates),
        sum(r.queued for r in rates),
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
