"""SIGTERM to serve's whole process group (what systemd and container runtimes send) while
clients are posting: every process exits, serve with 0 within the 30 s grace; after a restart
and the clients' retries (same Idempotency-Keys), every event is counted exactly once."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import httpx

from migrations import upgrade
from monitor.storage import make_engine
from tests.monitor.app.daemon.conftest import ServerProcess, auth, write_config
from tests.monitor.app.daemon.test_api_ingest import drained, event, totals, window_events
from tests.waiting import wait_until

BATCHES = 60
PER_BATCH = 50


def _batches() -> list[tuple[str, list[dict[str, object]]]]:
    return [
        (f"b{b:03d}", [event(b * PER_BATCH + i) for i in range(PER_BATCH)]) for b in range(BATCHES)
    ]


def _client(
    url: str,
    batches: list[tuple[str, list[dict[str, object]]]],
    acked: set[str],
    stop: threading.Event,
) -> None:
    headers = auth("MW_T_INGEST")
    for key, body in batches:
        if stop.is_set():
            return
        try:
            r = httpx.post(
                f"{url}/v1/events",
                json=body,
                timeout=10,
                headers={**headers, "Idempotency-Key": key},
            )
        except httpx.TransportError:
            return  # the server went away mid-request: the client will retry later
        if r.status_code == 202:
            acked.add(key)


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def test_sigterm_mid_ingest_then_retries_count_exactly(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mw.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    cfg = write_config(tmp_path, url)
    batches = _batches()
    first = ServerProcess(cfg)
    first.wait_ready()
    acked: set[str] = set()
    stop = threading.Event()
    client = threading.Thread(target=_client, args=(first.url, batches, acked, stop))
    client.start()
    wait_until(lambda: len(acked) >= 5, "5 acknowledged batches", timeout=60, interval=0.05)
    # The drain worker gets the same SIGTERM; serve used to hang forever stopping it.
    assert first.terminate(timeout=30, group=True) == 0
    wait_until(lambda: _group_gone(first.proc.pid), "serve's process group to exit", timeout=10)
    stop.set()
    client.join(30)
    assert 0 < len(acked) < BATCHES, "the shutdown did not land mid-ingest"

    second = ServerProcess(cfg)
    try:
        second.wait_ready()
        retried: set[str] = set()
        _client(second.url, batches, retried, threading.Event())
        assert retried == {k for k, _ in batches}
        drained(tmp_path)
    finally:
        assert second.terminate() == 0
    total = BATCHES * PER_BATCH
    assert totals(tmp_path) == (total, 0, 0)
    assert window_events(tmp_path) == total
