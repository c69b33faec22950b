"""Demo step: stream traffic into the running daemon through a followed serving log."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy.engine import Engine

from monitor.app.demo._traffic import Builds, Scorer, TrafficPlan, windows
from monitor.errors import ServiceError
from monitor.storage import IngestCounter, session_factory


def _append(path: Path, events: list[dict[str, Any]]) -> None:
    with path.open("ab") as fh:
        fh.write(b"".join(orjson.dumps(e) + b"\n" for e in events))


def ingested(engine: Engine, source: str) -> tuple[int, int]:
    """(events, labels) the collector has committed for `source`."""
    with session_factory(engine)() as s:
        row = s.get(IngestCounter, source)
        return (0, 0) if row is None else (row.events, row.labels)


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `check` until it holds, or fail naming what did not happen."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise ServiceError(f"demo: timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.2)


def _wait_ingested(engine: Engine, target: tuple[int, int], what: str) -> None:
    def done() -> bool:
        return ingested(engine, "serving-log") >= target

    wait_for(done, 60, f"the collector to ingest {what}")


def stream(
    engine: Engine,
    log: Path,
    plan: TrafficPlan,
    scorer: Scorer,
    on_window: Callable[[int], None],
    builds: Builds | None = None,
) -> tuple[int, int]:
    """Append each window's events (and the previous window's labels) to the serving log and
    wait until the collector has committed them; returns (events, labels) sent."""
    sent_events = sent_labels = 0
    pending: list[dict[str, Any]] = []
    for batch in windows(plan, scorer, builds):
        _append(log, batch.events + pending)
        sent_events += len(batch.events)
        sent_labels += len(pending)
        _wait_ingested(engine, (sent_events, sent_labels), f"window {batch.window_index}")
        pending = batch.labels
        on_window(batch.window_index)
    _append(log, pending)
    sent_labels += len(pending)
    wait_for(
        lambda: ingested(engine, "serving-log") == (sent_events, sent_labels),
        60,
        "the collector to ingest the last labels",
    )
    return sent_events, sent_labels
