"""kill -9 of `modelwatch serve` while clients post: after restarts and the clients' retries
(same Idempotency-Keys), every event is counted exactly once, on SQLite and PostgreSQL."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.storage import IngestCounter, IntakeEntry, WindowCount, make_engine
from tests.monitor.app.daemon.conftest import ServerProcess, auth, migrated_url, write_config
from tests.monitor.app.daemon.test_api_ingest import event

pytestmark = pytest.mark.slow
BATCHES = 80
PER_BATCH = 50
KILLS = 2

Batches = list[tuple[str, list[dict[str, object]]]]


def _batches() -> Batches:
    return [
        (f"k{b:03d}", [event(b * PER_BATCH + i) for i in range(PER_BATCH)]) for b in range(BATCHES)
    ]


def _post_all(
    url: str,
    batches: Batches,
    acked: set[str],
    stop: threading.Event,
    pace: float = 0.0,
    limit: int | None = None,
) -> None:
    """Post each batch not yet acknowledged; a dead server ends the pass (retried later).
    `pace`: a pause between posts, so a kill lands while requests are still coming. `limit`:
    post at most this many, then wait for `stop`, so a slow machine cannot finish the stream
    before the kill."""
    todo = [(key, body) for key, body in batches if key not in acked]
    for posted, (key, body) in enumerate(todo):
        if stop.is_set():
            return
        if limit is not None and posted >= limit:
            stop.wait()
            return
        headers = {**auth("MW_T_INGEST"), "Idempotency-Key": key}
        try:
            r = httpx.post(f"{url}/v1/events", json=body, timeout=10, headers=headers)
        except httpx.TransportError:
            return
        assert r.status_code in (202, 503), r.text
        if r.status_code == 202:
            acked.add(key)
        time.sleep(pace)


def _progress(url: str) -> tuple[int, int]:
    """(events aggregated, requests accepted) so far."""
    engine = make_engine(url)
    try:
        with Session(engine) as s:
            counter = s.get(IngestCounter, "http")
            appended = s.scalar(select(func.count()).select_from(IntakeEntry)) or 0
            return (counter.events if counter else 0), int(appended)
    finally:
        engine.dispose()


def _kill_mid_stream(url: str, cfg: Path, batches: Batches, acked: set[str]) -> None:
    """Start serve, let the clients post until the drain has aggregated something new, then
    kill -9 it while requests are still coming in."""
    server = ServerProcess(cfg)
    server.wait_ready()
    before = _progress(url)[0]
    stop = threading.Event()
    limit = BATCHES // (KILLS + 1)
    client = threading.Thread(
        target=_post_all, args=(server.url, batches, acked, stop, 0.05, limit)
    )
    client.start()
    deadline = time.monotonic() + 120
    while _progress(url)[0] == before and client.is_alive():
        assert time.monotonic() < deadline, "no progress in 120 s"
        time.sleep(0.01)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(30)
    stop.set()
    client.join(30)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_kill9_mid_stream_then_retries_count_exactly_once(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = migrated_url(backend, tmp_path, request)
    cfg = write_config(tmp_path, url)
    batches = _batches()
    acked: set[str] = set()
    for _ in range(KILLS):
        _kill_mid_stream(url, cfg, batches, acked)
    assert 0 < len(acked) < BATCHES, "the kills did not land mid-stream"

    final = ServerProcess(cfg)
    try:
        final.wait_ready()
        retried: set[str] = set()  # every key again, acknowledged or not: clients cannot know
        _post_all(final.url, batches, retried, threading.Event())
        assert retried == {k for k, _ in batches}
        deadline = time.monotonic() + 60
        while _progress(url)[0] < BATCHES * PER_BATCH and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)  # a double count would land after the total was first reached
    finally:
        assert final.terminate() == 0
    engine = make_engine(url)
    with Session(engine) as s:
        overall = select(func.sum(WindowCount.events)).where(WindowCount.slice_key == "")
        windows = s.scalar(overall)
        pending = s.scalar(select(func.count()).where(IntakeEntry.consumed_at.is_(None)))
    engine.dispose()
    assert _progress(url) == (BATCHES * PER_BATCH, BATCHES)
    assert (windows, pending) == (BATCHES * PER_BATCH, 0)
