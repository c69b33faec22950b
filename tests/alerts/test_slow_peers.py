"""A receiver that trickles its answer never delays another's deliveries, and its attempt ends at
its deadline (the symptom: one byte a second held every delivery for ~120 s)."""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import select as sql_select
from sqlalchemy.engine import Engine

from alerts import deadline_client
from alerts._deadline import attempt_deadline
from alerts._evaluator import Evaluator
from alerts.delivery import DeliveryReport, DeliveryWorker, Lane
from monitor.storage import AlertNotification, transaction
from tests.alerts.conftest import alerts_config, at, drift
from tests.alerts.receiver import RecordingReceiver
from tests.waiting import wait_until

DEADLINE_S = 4.0


class TricklingReceiver:
    """Reads each request, then answers a never-ending header one byte every `interval` s.

    `open` is how many attempts are connected now; `ended` the seconds each connection lasted
    until the sender closed it."""

    def __init__(self, interval: float = 0.3) -> None:
        self.interval = interval
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"
        self.open = 0
        self.ended: list[float] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        started = time.monotonic()
        with self._lock:
            self.open += 1
        with conn:
            conn.recv(65536)  # the request (its content does not matter here)
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not self._stop.is_set():
                readable, _, _ = select.select([conn], [], [], self.interval)
                try:
                    if readable and not conn.recv(65536):
                        break  # the sender gave up and closed
                    if not readable:
                        conn.sendall(b"x")
                except OSError:
                    break
        with self._lock:
            self.open -= 1
            self.ended.append(time.monotonic() - started)

    def stop(self) -> None:
        self._stop.set()
        self.server.close()


@pytest.fixture
def slow() -> Iterator[TricklingReceiver]:
    rec = TricklingReceiver()
    yield rec
    rec.stop()


@pytest.fixture
def fast() -> Iterator[RecordingReceiver]:
    rec = RecordingReceiver()
    rec.start()
    yield rec
    rec.stop()


def notify_both(evaluator: Evaluator, models: list[str], t: float) -> None:
    """The rule firing for `models` at `t`, flushed after the group wait: rows per receiver."""
    for when in (t, t + 30):
        evaluator.evaluate([drift(model=m) for m in models], at(when))


@pytest.mark.slow  # ~8 s of a real trickle up to the deadline: the full lane's
def test_trickling_receiver_never_delays_another_and_ends_at_its_deadline(
    engine: Engine, slow: TricklingReceiver, fast: RecordingReceiver
) -> None:
    rule = {"name": "FeatureDrift", "kind": "drift", "receivers": ["slow", "fast"]}
    cfg = alerts_config(
        receivers=[
            {"name": "slow", "type": "webhook", "url": slow.url, "timeout_s": DEADLINE_S},
            {"name": "fast", "type": "webhook", "url": fast.url, "timeout_s": DEADLINE_S},
        ],
        rules=[rule],
        delivery={"poll_interval": "100ms", "backoff_initial": "1h"},
    )
    evaluator = Evaluator(engine, cfg)
    notify_both(evaluator, ["fraud"], 0)
    stop = threading.Event()
    with deadline_client() as client:
        # Every row is due at this clock; a failed one is due again an hour later.
        worker = DeliveryWorker(engine, cfg, client, clock=lambda: at(3600))
        thread = threading.Thread(target=worker.run, args=(stop,))
        thread.start()
        try:
            wait_until(lambda: fast.delivered() and slow.open, "fast delivered, slow in flight")
            # While the slow attempt is still held, a new notification reaches the fast one.
            notify_both(evaluator, ["fraud", "churn"], 100)
            wait_until(lambda: any(b"churn" in r.body for r in fast.delivered()), "churn, fast")
            assert slow.open == 1 and not slow.ended, "the slow attempt was still in flight"
            wait_until(lambda: slow.ended, "the slow attempt to end", timeout=60)
        finally:
            stop.set()
            thread.join(timeout=60)
    assert not thread.is_alive()
    # It ended at its deadline, not after a per-read timeout it never tripped (generous bound).
    assert DEADLINE_S - 0.5 <= slow.ended[0] < DEADLINE_S + 30
    assert errors_of(engine, "slow") and all("Timeout" in e for e in errors_of(engine, "slow"))


def errors_of(engine: Engine, receiver: str) -> list[str]:
    with transaction(engine) as session:
        rows = session.scalars(
            sql_select(AlertNotification.last_error).where(
                AlertNotification.receiver == receiver,
                AlertNotification.last_error.is_not(None),
            )
        )
        return [str(e) for e in rows]


def test_deadline_covers_a_whole_exchange_not_each_read(slow: TricklingReceiver) -> None:
    """The client alone: a 10 s per-read timeout the trickle never trips, a 1 s deadline."""
    with (
        deadline_client(timeout=10.0) as client,
        attempt_deadline(1.0),
        pytest.raises(httpx.ReadTimeout, match="deadline"),
    ):
        client.post(slow.url, content=b"{}")


def test_a_lane_that_raises_stops_the_others_and_the_worker_raises(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So the supervisor restarts the whole worker, not a worker with a lane missing."""
    with httpx.Client() as client:
        worker = DeliveryWorker(sqlite_engine, alerts_config(), client)
    assert [lane.name for lane in worker.lanes()] == ["receiver hook", "unrouted"]

    def run_once(now: object = None, lane: Lane | None = None) -> DeliveryReport:
        if lane is not None and lane.name == "unrouted":
            raise RuntimeError("the database went away")
        return DeliveryReport()

    monkeypatch.setattr(worker, "run_once", run_once)
    with pytest.raises(RuntimeError, match="went away"):
        worker.run(threading.Event())
