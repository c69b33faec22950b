"""kill -9 of a source's ingest worker process under `serve` (a JSONL file source or a Kafka
source, each ingesting in a worker process): the source is restarted with backoff, counted in
`modelwatch_component_restarts_total`, `/readyz` names it while it is down, and every event
written to the file (or the topic) is aggregated exactly once, on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml

from collectors._pipeline import WORKER_NAME
from monitor.storage import make_engine
from tests.collectors import conftest as collectors
from tests.collectors.conftest import aggregated, counters, event, kafka_source
from tests.monitor.app.daemon.conftest import ServerProcess, migrated_url, write_config
from tests.monitor.app.daemon.test_lifecycle import RESTART_S
from tests.services.kafka import KafkaBroker
from tests.waiting import wait_until

pytestmark = pytest.mark.slow
# The collectors' broker fixtures (one Kafka 0.9 broker per session, a fresh topic per test).
kafka, topic = collectors.kafka, collectors.topic
SOURCE = "stream"
FIRST, SECOND = 3000, 500
RESTARTS = re.compile(
    rf'^modelwatch_component_restarts_total\{{component="collectors:{SOURCE}"\}} (\S+)$',
    re.MULTILINE,
)


def _worker(server: ServerProcess) -> int | None:
    """The source's ingest worker (named by the pipeline), not the intake drain's."""
    return server.child(WORKER_NAME)


def _restarts(server: ServerProcess) -> float:
    found = RESTARTS.search(httpx.get(f"{server.url}/metrics", timeout=10).text)
    return float(found.group(1)) if found else 0.0


def _serve(tmp_path: Path, url: str, source: dict[str, Any]) -> ServerProcess:
    config = write_config(tmp_path, url)
    text = config.read_text().replace(
        "scheduler:\n", f"scheduler:\n  restart_initial_s: {RESTART_S}\n"
    )
    text = text.replace("collect:\n", "collect:\n  pipeline: true\n")
    config.write_text(text + yaml.safe_dump({"sources": [source]}))
    server = ServerProcess(config)
    server.wait_ready()
    return server


def _watch_readyz(
    server: ServerProcess, seen: list[tuple[int, str]], done: threading.Event
) -> None:
    """Every /readyz answer (status, the source's check) until `done`."""
    while not done.is_set():
        try:
            ready = httpx.get(f"{server.url}/readyz", timeout=10)
        except httpx.TransportError:
            continue
        seen.append((ready.status_code, ready.json()["checks"].get(f"collectors:{SOURCE}", "")))


def _kill_worker_mid_stream(
    server: ServerProcess, write: Callable[[int, int], None], url: str
) -> None:
    """Write FIRST events, kill the worker once some are aggregated (more are in flight), then
    write SECOND more: all FIRST + SECOND are aggregated exactly once after the restart."""
    engine = make_engine(url)
    seen: list[tuple[int, str]] = []
    done = threading.Event()
    watcher = threading.Thread(target=_watch_readyz, args=(server, seen, done))
    try:
        killed = wait_until(lambda: _worker(server), "the source's ingest worker", 60)
        write(0, FIRST)
        wait_until(lambda: aggregated(engine) > 0, "the first events aggregated", 60)
        watcher.start()
        os.kill(killed, signal.SIGKILL)
        wait_until(lambda: _restarts(server) == 1, "the restart counted in /metrics", 60)
        new = wait_until(lambda: _worker(server), "a new ingest worker", 60)
        assert new != killed
        write(FIRST, SECOND)
        total = FIRST + SECOND
        wait_until(lambda: aggregated(engine) == total, f"{total} events aggregated", 120)
        assert counters(engine, SOURCE).events == total
        wait_until(lambda: seen and seen[-1][0] == 200, "/readyz 200 again", 30)
    finally:
        done.set()
        watcher.join(30) if watcher.is_alive() else None
        engine.dispose()
    down = [check for status, check in seen if status == 503 and check != "ok"]
    assert down and all("restarting" in check for check in down), seen
    assert aggregated(make_engine(url)) == FIRST + SECOND  # nothing more came late


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_killed_file_ingest_worker_is_restarted_and_loses_nothing(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = migrated_url(backend, tmp_path, request)
    log = tmp_path / "events.jsonl"
    log.touch()
    source = {"name": SOURCE, "type": "jsonl", "path": str(log), "poll_interval": "0.2s"}
    server = _serve(tmp_path, url, source)

    def write(start: int, n: int) -> None:
        with log.open("ab") as f:
            f.writelines(orjson.dumps(event(i)) + b"\n" for i in range(start, start + n))

    try:
        _kill_worker_mid_stream(server, write, url)
    finally:
        assert server.terminate(timeout=30, group=True) == 0


def test_a_killed_kafka_ingest_worker_is_restarted_and_loses_nothing(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    broker: KafkaBroker = request.getfixturevalue("kafka")
    name: str = request.getfixturevalue("topic")
    url = migrated_url("sqlite", tmp_path, request)
    server = _serve(tmp_path, url, kafka_source("kafka-python", broker, name, "g-kill"))

    def write(start: int, n: int) -> None:
        broker.produce(name, [orjson.dumps(event(i)) for i in range(start, start + n)])

    try:
        _kill_worker_mid_stream(server, write, url)
    finally:
        assert server.terminate(timeout=30, group=True) == 0
