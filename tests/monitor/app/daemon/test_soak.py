"""Soak: `modelwatch serve` on PostgreSQL for about a minute while a driver mixes poisoned
input with normal traffic for two models, and the database goes away once.

Afterwards every normal event is counted exactly once, both models have drift and outcome
results computed after the outage, alerts were delivered (signed), and `/healthz` answered
throughout, the outage included (within PROBE_TIMEOUT_S, well under the outage: an API that
waited on the database would miss; the bound does not depend on the machine's speed).
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from migrations import upgrade
from monitor.baselines.store import save_baseline
from monitor.profiles import OVERALL, profile_frame, specs_for
from monitor.storage import (
    DriftResultRow,
    OutcomeResultRow,
    WindowCount,
    make_engine,
    session_factory,
)
from tests.alerts.receiver import RecordingReceiver
from tests.monitor.app.daemon.conftest import ServerProcess, auth
from tests.services.postgres import PostgresServer
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

DRIVE_S = 45.0  # every kind of poison is drawn many times over; the outage in the middle
OUTAGE_AT_S = 15.0
OUTAGE_S = 8.0
# Under the outage's length, so an API that waited on the database would miss; above what a
# loaded CI machine (four test workers on two cores) takes to schedule a process (3.1 s once).
PROBE_TIMEOUT_S = 5.0
SECRET = "soak-webhook-secret"

CONFIG = """\
database_url: {url}
models:
  - name: fraud
    slices: [region]
    outcomes: {{metrics: [accuracy], tolerance: 0.05, baseline: {{accuracy: 0.9}}}}
  - name: churn
    outcomes: {{metrics: [accuracy], tolerance: 0.05, baseline: {{accuracy: 0.9}}}}
collect:
  window: 1m
  allowed_lateness: 10m
api:
  tokens:
    - {{name: dash, scopes: [read], token_env: MW_T_READ}}
    - {{name: collector, scopes: [ingest], token_env: MW_T_INGEST}}
    - {{name: ops, scopes: [admin], token_env: MW_T_ADMIN}}
scheduler:
  evaluate_interval_s: 2
  alerts_interval_s: 2
  retry_initial_s: 2
  retry_max_s: 10
alerts:
  grouping: {{group_by: [alertname, model], group_wait: 0s, group_interval: 2s}}
  receivers:
    - {{name: hook, type: webhook, url: "{hook}", secret_env: MW_SOAK_SECRET, timeout_s: 5}}
  rules:
    - {{name: FeatureDrift, kind: drift, receivers: [hook]}}
  delivery: {{poll_interval: 0.2s, backoff_initial: 0.5s}}
"""


def _baselines(engine: Engine) -> None:
    rng = np.random.default_rng(1)
    n = 4000
    fraud = pd.DataFrame(
        {
            "f0": rng.normal(size=n),
            "f1": rng.normal(size=n),
            "region": rng.choice(["us", "eu"], size=n),
            "prediction": rng.random(n),
        }
    )
    save_baseline(
        engine,
        "fraud",
        "1",
        profile_frame(fraud, specs_for(["f0", "f1", "prediction"], fraud), ["region"]),
    )
    churn = pd.DataFrame(
        {
            "tenure": rng.normal(size=n),
            "is_new": rng.random(n) < 0.3,
            "legacy": rng.normal(size=n),  # retired: the events never carry it
        }
    )
    cols = ["tenure", "is_new", "legacy"]
    save_baseline(engine, "churn", "1", profile_frame(churn, specs_for(cols, churn)))


@dataclass
class Tally:
    """What the driver sent and what the server said it accepted."""

    normal: dict[str, int] = field(default_factory=lambda: {"fraud": 0, "churn": 0})
    poison_accepted: dict[str, int] = field(default_factory=lambda: {"fraud": 0, "churn": 0})
    poison_kinds: set[str] = field(default_factory=set)
    retries: int = 0


class Driver:
    """Normal traffic for both models, poisoned input mixed in at random."""

    def __init__(self, url: str, tally: Tally, seed: int = 5) -> None:
        self.url = url
        self.tally = tally
        self.rng = random.Random(seed)
        self.client = httpx.Client(timeout=30)
        self.serial = 0

    def _event(self, model: str, **over: Any) -> dict[str, Any]:
        self.serial += 1
        rid = f"{model}-{self.serial}"
        if model == "fraud":
            # f0 drifts: the reference is N(0, 1); the drift alert must reach the receiver.
            feats: dict[str, Any] = {"f0": self.rng.gauss(2.5, 1), "f1": self.rng.gauss(0, 1)}
            meta: dict[str, Any] = {"region": self.rng.choice(["us", "eu"])}
        else:
            feats = {"tenure": self.rng.gauss(0, 1), "is_new": self.rng.random() < 0.3}
            meta = {}
        event = {
            "request_id": rid,
            "model": model,
            "model_version": "1",
            "timestamp": datetime.now(UTC).isoformat(),
            "features": feats,
            "metadata": meta,
            "prediction": self.rng.random(),
        }
        event.update(over)
        return event

    def post(self, path: str, body: Any, key: str | None = None) -> dict[str, Any]:
        """POST until the server answers 2xx (a retry keeps its Idempotency-Key)."""
        headers = auth("MW_T_INGEST")
        if key:
            headers["Idempotency-Key"] = key
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                answer = self.client.post(f"{self.url}{path}", json=body, headers=headers)
            except httpx.TransportError:
                answer = None
            if answer is not None and answer.status_code < 300:
                result: dict[str, Any] = answer.json()
                return result
            assert answer is None or answer.status_code in (500, 502, 503, 504), answer.text
            self.tally.retries += 1
            time.sleep(0.5)
        raise AssertionError(f"{path} never accepted")

    def normal_batch(self, model: str, n: int) -> None:
        events = [self._event(model) for _ in range(n)]
        result = self.post("/v1/events", events, key=uuid.uuid4().hex)
        # Accepted now, or by an earlier attempt whose answer was lost (a duplicate).
        self.tally.normal[model] += result["queued"] + result["duplicates"]
        labels = [
            {
                "request_id": e["request_id"],
                "model": model,
                "label": int(self.rng.random() < 0.5),
                "timestamp": e["timestamp"],
            }
            for e in events
        ]
        self.post("/v1/labels", {"labels": labels}, key=uuid.uuid4().hex)

    def poison(self) -> None:
        kind = self.rng.choice(sorted(POISONS))
        self.tally.poison_kinds.add(kind)
        POISONS[kind](self)


def _huge(d: Driver) -> None:
    e = d._event("fraud")
    e["features"]["f1"] = 1e200
    result = d.post("/v1/events", [e], key=uuid.uuid4().hex)
    assert result["queued"] + result["duplicates"] == 1, result
    d.tally.poison_accepted["fraud"] += 1


def _future(d: Driver) -> None:
    ahead = (datetime.now(UTC) + timedelta(days=365 * 200)).isoformat()
    result = d.post("/v1/events", [d._event("churn", timestamp=ahead)], key=uuid.uuid4().hex)
    assert result["queued"] + result["duplicates"] == 1, result  # the drain dead-letters it


def _deep(d: Driver) -> None:
    nested: Any = 1
    for _ in range(300):
        nested = [nested]
    result = d.post("/v1/events", [d._event("fraud", prediction=nested)], key=uuid.uuid4().hex)
    assert result["queued"] + result["duplicates"] == 1, result  # the drain dead-letters it


def _wrong_type(d: Driver) -> None:
    e = d._event("churn")
    e["features"]["tenure"] = {"not": "a number"}
    result = d.post("/v1/events", [e], key=uuid.uuid4().hex)
    assert result["queued"] + result["duplicates"] == 1, result  # the drain dead-letters it


def _new_column(d: Driver) -> None:
    e = d._event("churn")
    e["features"]["brand_new"] = 3.0
    result = d.post("/v1/events", [e], key=uuid.uuid4().hex)
    assert result["queued"] + result["duplicates"] == 1, result
    d.tally.poison_accepted["churn"] += 1


def _bad_json(d: Driver) -> None:
    answer = d.client.post(
        f"{d.url}/v1/events",
        content=b'[{"request_id": "x", ',
        headers={**auth("MW_T_INGEST"), "Content-Type": "application/json"},
    )
    assert answer.status_code in (422, 503), answer.text


def _bad_silence(d: Driver) -> None:
    body = {"matchers": ['alertname=~"(.*){20}X"'], "author": "soak", "comment": "regex"}
    answer = d.client.post(f"{d.url}/v1/silences", json=body, headers=auth("MW_T_ADMIN"))
    assert answer.status_code in (201, 503), answer.text
    long = {**body, "matchers": ["model=none"], "duration": "9" * 400}
    answer = d.client.post(f"{d.url}/v1/silences", json=long, headers=auth("MW_T_ADMIN"))
    assert answer.status_code == 422, answer.text


def _guard_path(d: Driver) -> None:
    answer = d.client.post(
        f"{d.url}/v1/guard/fraud/2/run",
        json={"golden": "/etc/passwd"},
        headers=auth("MW_T_ADMIN"),
    )
    assert answer.status_code == 422, answer.text


POISONS = {
    "huge": _huge,
    "future": _future,
    "deep": _deep,
    "wrong_type": _wrong_type,
    "new_column": _new_column,
    "bad_json": _bad_json,
    "bad_silence": _bad_silence,
    "guard_path": _guard_path,
}


class HealthProbe(threading.Thread):
    """GET /healthz every 200 ms with a PROBE_TIMEOUT_S timeout; records every miss."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.misses: list[str] = []
        self.probes = 0
        self.slowest = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=PROBE_TIMEOUT_S) as client:
            while not self.stop.is_set():
                start = time.monotonic()
                try:
                    status = client.get(f"{self.url}/healthz").status_code
                    if status != 200:
                        self.misses.append(f"status {status}")
                except httpx.HTTPError as exc:
                    self.misses.append(
                        f"{type(exc).__name__} after {time.monotonic() - start:.2f}s"
                    )
                self.probes += 1
                self.slowest = max(self.slowest, time.monotonic() - start)
                self.stop.wait(0.2)


def _counted(engine: Engine) -> dict[str, int]:
    stmt = (
        select(WindowCount.model, func.sum(WindowCount.events))
        .where(WindowCount.slice_key == OVERALL)
        .group_by(WindowCount.model)
    )
    with session_factory(engine)() as s:
        return {m: int(n) for m, n in s.execute(stmt)}


def _fresh(engine: Engine, table: Any, since: datetime) -> set[str]:
    stmt = select(table.model).where(table.computed_at > since).distinct()
    with session_factory(engine)() as s:
        return set(s.scalars(stmt))


def _missing_columns(engine: Engine, model: str) -> set[str]:
    stmt = select(DriftResultRow.column).where(
        DriftResultRow.model == model, DriftResultRow.status == "missing"
    )
    with session_factory(engine)() as s:
        return set(s.scalars(stmt))


@pytest.fixture
def hook() -> Iterator[RecordingReceiver]:
    receiver = RecordingReceiver(secret=SECRET)
    receiver.start()
    yield receiver
    receiver.stop()


def test_serve_survives_poisoned_input_and_an_outage(
    own_postgres: PostgresServer, hook: RecordingReceiver, tmp_path: Path
) -> None:
    url = own_postgres.create_database()
    engine = make_engine(url)
    upgrade(engine)
    _baselines(engine)
    config = tmp_path / "mw.yaml"
    config.write_text(CONFIG.format(url=url, hook=hook.url))
    log = tmp_path / "serve.log"
    server = ServerProcess(config, env={"MW_SOAK_SECRET": SECRET}, log=log)
    probe = HealthProbe(server.url)
    tally = Tally()
    try:
        server.wait_ready()
        probe.start()
        driver = Driver(server.url, tally)
        outage_end = _drive(driver, own_postgres)
        _settle(engine, tally, outage_end)
        ready = httpx.get(f"{server.url}/readyz", timeout=5)
    finally:
        probe.stop.set()
        probe.join(5)
        code = server.terminate()
        print(log.read_text()[-6000:])  # shown by pytest when the test fails
    assert code == 0, log.read_text()[-3000:]

    assert not probe.misses, (
        f"/healthz missed {len(probe.misses)} of {probe.probes}: {probe.misses[:5]}"
    )
    assert probe.probes > 100 and probe.slowest < PROBE_TIMEOUT_S
    assert tally.retries > 0, "the outage was never seen by the driver"
    assert tally.poison_kinds == set(POISONS), "every kind of poison was sent"
    assert ready.status_code == 200, ready.text
    assert "legacy" in _missing_columns(engine, "churn")
    delivered = [r for r in hook.requests if r.status == 200]
    assert delivered and all(r.valid for r in hook.requests)
    assert any("FeatureDrift" in r.body.decode() and "fraud" in r.body.decode() for r in delivered)
    engine.dispose()


def _drive(driver: Driver, pg: PostgresServer) -> datetime:
    """Run the traffic mix for DRIVE_S seconds with one outage; returns when it ended."""
    start = time.monotonic()
    outage = threading.Thread(target=_outage, args=(pg,))
    started_outage = False
    while time.monotonic() - start < DRIVE_S:
        if not started_outage and time.monotonic() - start > OUTAGE_AT_S:
            outage.start()
            started_outage = True
        driver.normal_batch("fraud", 20)
        driver.normal_batch("churn", 20)
        if driver.rng.random() < 0.6:
            driver.poison()
        time.sleep(0.2)
    outage.join()
    return _OUTAGE_END[0]


_OUTAGE_END: list[datetime] = [datetime.now(UTC)]


def _outage(pg: PostgresServer) -> None:
    pg.pause()
    time.sleep(OUTAGE_S)
    pg.resume()
    _OUTAGE_END[0] = datetime.now(UTC)


def _settle(engine: Engine, tally: Tally, outage_end: datetime, timeout: float = 90) -> None:
    """Wait until every accepted event is counted and results after the outage exist."""
    expected = {m: tally.normal[m] + tally.poison_accepted[m] for m in tally.normal}
    state: list[object] = []

    def settled() -> bool:
        counted = _counted(engine)
        drift = _fresh(engine, DriftResultRow, outage_end)
        outcomes = _fresh(engine, OutcomeResultRow, outage_end)
        state[:] = [counted, drift, outcomes]
        return (
            counted == expected and {"fraud", "churn"} <= drift and {"fraud", "churn"} <= outcomes
        )

    try:
        wait_until(settled, f"counts {expected} and fresh results of both models", timeout, 1)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; (counted, drift, outcomes) = {state}") from None
