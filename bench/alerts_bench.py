"""Alerts: evaluation cost per batch, and outbox delivery against its floor (plain POSTs).

Run: python -m bench.alerts_bench  (SQLite in a temporary directory, loopback receiver)
"""

from __future__ import annotations

import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from alerts import DeliveryWorker, Evaluator, Signal
from monitor.config.alerts import AlertsConfig
from monitor.storage import make_engine, upgrade

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.alerts.receiver import RecordingReceiver  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _signals(models: int, columns: int, firing: bool) -> list[Signal]:
    return [
        Signal("drift", {"model": f"m{m}", "column": f"c{c}"}, 0.3, 0.2, firing, T0)
        for m in range(models)
        for c in range(columns)
    ]


def main() -> None:
    receiver = RecordingReceiver()
    receiver.start()
    cfg = AlertsConfig.model_validate(
        {
            "grouping": {"group_by": ["model", "column"]},
            "receivers": [{"name": "hook", "type": "webhook", "url": receiver.url}],
            "rules": [{"name": "Drift", "kind": "drift", "receivers": ["hook"]}],
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/b.db")
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
            f"evaluate {len(batch)} signals: new {first:.3f}s, steady+queue "
            f"{result.notifications} notifications {flush:.3f}s"
        )
        with httpx.Client() as client:
            worker = DeliveryWorker(engine, cfg, client, env={})
            start = time.perf_counter()
            sent = worker.run(once=True).sent
            outbox_s = time.perf_counter() - start
            bodies = [r.body for r in receiver.requests]
            start = time.perf_counter()
            for body in bodies:
                client.post(receiver.url, content=body, headers={"Idempotency-Key": "x"})
            plain_s = time.perf_counter() - start
    receiver.stop()
    print(
        f"outbox delivery: {sent / outbox_s:.0f}/s; "
        f"plain POST floor: {len(bodies) / plain_s:.0f}/s; ratio {plain_s / outbox_s:.2f}"
    )


if __name__ == "__main__":
    main()
