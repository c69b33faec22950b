"""Batched delivery: mixed results in one batch, bounded concurrency, rows given back untried."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alerts._evaluator import Evaluator
from alerts._outbox import Ack, acknowledge, claim, enqueue
from alerts.delivery import DeliveryWorker
from monitor.config.alerts import AlertsConfig
from monitor.storage import AlertNotification, transaction
from tests.alerts.conftest import alerts_config, at, drift
from tests.alerts.receiver import RecordingReceiver

SECRET = "batch-secret"
ENV = {"HOOK_SECRET": SECRET}
MODELS = [f"m{i}" for i in range(4)]


def _hook(name: str, url: str) -> dict[str, Any]:
    return {"name": name, "type": "webhook", "url": url, "secret_env": "HOOK_SECRET"}


def config(receivers: list[RecordingReceiver], **delivery: Any) -> AlertsConfig:
    hooks = [_hook(f"hook{i}", r.url) for i, r in enumerate(receivers)]
    rule = {"name": "FeatureDrift", "kind": "drift", "receivers": [h["name"] for h in hooks]}
    return alerts_config(
        receivers=hooks,
        rules=[rule],
        delivery={"backoff_initial": "1s", "backoff_max": "30s", **delivery},
    )


def queue_firing(engine: Engine, cfg: AlertsConfig, models: list[str]) -> None:
    """One firing notification per model (its own group) and receiver."""
    ev = Evaluator(engine, cfg)
    ev.evaluate([drift(model=m) for m in models], at(0))
    ev.evaluate([drift(model=m) for m in models], at(30))


def outbox(engine: Engine) -> list[AlertNotification]:
    with transaction(engine) as s:
        return list(s.scalars(select(AlertNotification).order_by(AlertNotification.id)))


@pytest.fixture
def receivers() -> Iterator[list[RecordingReceiver]]:
    made = [RecordingReceiver(secret=SECRET) for _ in range(2)]
    for r in made:
        r.start()
    yield made
    for r in made:
        r.stop()


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


def test_mixed_batch_records_each_result_once(
    engine: Engine, receivers: list[RecordingReceiver], client: httpx.Client
) -> None:
    good, flaky = receivers
    cfg = config(receivers)
    queue_firing(engine, cfg, MODELS)
    flaky.fail_next = len(MODELS)  # every request of the first batch to hook1 gets a 503
    worker = DeliveryWorker(engine, cfg, client, env=ENV, rng=random.Random(3))

    first = worker.run_once(at(30))
    assert (first.claimed, first.sent, first.retried, first.dead) == (8, 4, 4, 0)
    by_receiver = {(r.receiver, r.status, r.attempts, r.last_error) for r in outbox(engine)}
    assert by_receiver == {("hook0", "sent", 1, None), ("hook1", "pending", 1, "HTTP 503: ")}

    for t in range(31, 120, 5):
        worker.run_once(at(t))
    rows = outbox(engine)
    assert [r.status for r in rows] == ["sent"] * 8
    # The successes were never sent again; each failure was re-sent once with its own key.
    assert Counter(Counter(r.key for r in good.requests).values()) == {1: 4}
    assert Counter(Counter(r.key for r in flaky.requests).values()) == {2: 4}
    keys = {r.idempotency_key for r in rows}
    assert {r.key for r in good.delivered() + flaky.delivered()} == keys
    assert all(r.valid for r in good.requests + flaky.requests)


# Real waits of a slow receiver (~2 s): the full lane's.
@pytest.mark.slow
@pytest.mark.parametrize("concurrency", [1, 3])
def test_requests_in_flight_are_bounded_by_concurrency(
    sqlite_engine: Engine,
    receivers: list[RecordingReceiver],
    client: httpx.Client,
    concurrency: int,
) -> None:
    receiver = receivers[0]
    receiver.delay_s = 0.2
    cfg = config([receiver], concurrency=concurrency)
    queue_firing(sqlite_engine, cfg, [f"m{i}" for i in range(9)])
    report = DeliveryWorker(sqlite_engine, cfg, client, env=ENV).run_once(at(30))
    assert report.sent == 9 and len(receiver.delivered()) == 9
    if concurrency == 1:
        assert receiver.max_in_flight == 1
    else:
        assert 1 < receiver.max_in_flight <= concurrency


def test_rows_not_started_within_half_the_lease_are_given_back(
    engine: Engine, receivers: list[RecordingReceiver], client: httpx.Client
) -> None:
    receiver = receivers[0]
    receiver.delay_s = 0.5  # longer than half the lease: the rest of the batch must wait
    cfg = config([receiver], lease="0.4s", concurrency=1)
    queue_firing(engine, cfg, MODELS[:3])
    worker = DeliveryWorker(engine, cfg, client, env=ENV)

    first = worker.run_once(at(30))
    assert (first.claimed, first.sent, first.released) == (3, 1, 2)
    rows = outbox(engine)
    assert [(r.status, r.attempts) for r in rows] == [("sent", 1), ("pending", 0), ("pending", 0)]
    assert all(r.last_error is None for r in rows)
    assert len(receiver.requests) == 1

    second, third = worker.run_once(at(31)), worker.run_once(at(32))
    assert (second.sent, second.released, third.sent, third.released) == (1, 1, 1, 0)
    assert [(r.status, r.attempts) for r in outbox(engine)] == [("sent", 1)] * 3
    assert len(receiver.requests) == 3 == len({r.key for r in receiver.requests})


def test_results_of_a_worker_whose_lease_ran_out_are_not_recorded(engine: Engine) -> None:
    cfg = config([RecordingReceiver()])
    queue_firing(engine, cfg, MODELS[:2])
    lease = at(60) - at(0)
    slow = claim(engine, at(30), lease=lease, limit=10)
    assert [c.attempts for c in slow] == [1, 1]
    assert claim(engine, at(60), lease=lease, limit=10) == []  # still held
    retaken = claim(engine, at(91), lease=lease, limit=10)  # the lease ran out
    assert [c.idempotency_key for c in retaken] == [c.idempotency_key for c in slow]

    lost = acknowledge(engine, [Ack(c, "sent", at(95)) for c in slow])
    assert len(lost) == 2
    assert [(r.status, r.attempts) for r in outbox(engine)] == [("sending", 2)] * 2
    assert acknowledge(engine, [Ack(c, "dead", at(96), "HTTP 400: ") for c in retaken]) == []
    assert [(r.status, r.last_error) for r in outbox(engine)] == [("dead", "HTTP 400: ")] * 2


def test_a_row_that_cannot_be_rendered_goes_dead_and_the_rest_of_its_batch_is_sent(
    engine: Engine, receivers: list[RecordingReceiver], client: httpx.Client
) -> None:
    cfg = config(receivers[:1])
    queue_firing(engine, cfg, MODELS[:2])
    with transaction(engine) as s:
        enqueue(s, kind="notify", receiver="hook0", group_key="g", seq=1, payload={}, now=at(0))
    report = DeliveryWorker(engine, cfg, client, env=ENV).run_once(at(30))
    assert (report.claimed, report.sent, report.dead) == (3, 2, 1)
    rows = outbox(engine)
    assert [r.status for r in rows] == ["sent", "sent", "dead"]
    assert (rows[2].last_error or "").startswith("KeyError")
    assert len(receivers[0].requests) == 2
