"""The delivery worker: claims outbox rows, signs and sends them, retries with backoff.

Policy: a 2xx answer is delivered. A transport error, timeout, 408, 429 or 5xx is retried after
an exponential backoff with jitter; any other status, and a payload the receiver cannot render,
is permanent. A row whose attempts reach
`max_attempts`, whose age reaches `max_age`, or that failed permanently goes `dead` and stays
visible (`modelwatch alerts list --outbox`, :func:`alerts._outbox.status_counts`).

Each receiver has its own lane: a thread that claims only that receiver's rows (rollback actions
and rows for receivers no longer configured have a lane each), so a slow or dead receiver holds
up nothing but its own rows. Every attempt has a total deadline, the receiver's `timeout_s`,
over connecting, sending and reading the whole answer (:mod:`alerts._deadline`; with the client
of :func:`deadline_client`), not a timeout per socket read that a trickling peer never trips.

A pass claims a batch in one transaction, sends it (`concurrency` requests at a time), and records
every result in one more transaction. A worker killed between sending and recording leaves its
rows `sending`; once their lease runs out they are sent again with the same idempotency key.
"""

from __future__ import annotations

import logging
import math
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
from sqlalchemy.engine import Engine

from alerts._deadline import attempt_deadline
from alerts._outbox import Ack, Claimed, acknowledge, backoff, claim
from alerts._signing import IDEMPOTENCY_HEADER, SIGNATURE_HEADER, sign
from alerts.base import Notification, OutboundRequest, Receiver
from alerts.receivers import build_receiver
from alerts.receivers.registry import read_env
from monitor.config.alerts import AlertsConfig
from monitor.failures import scrub
from monitor.storage import utcnow

log = logging.getLogger(__name__)

RollbackHandler = Callable[[dict[str, Any]], None]
"""Called with a rollback row's payload (model, version, fingerprint, rule, labels, ...);
raising makes the row retry. Wired by the composition root to the guards' rollback."""


@dataclass(frozen=True)
class _Secret:
    value: str = field(repr=False)

    def __repr__(self) -> str:
        return "_Secret('***')"


@dataclass(frozen=True)
class DeliveryReport:
    """What one pass did."""

    claimed: int = 0
    sent: int = 0
    retried: int = 0
    dead: int = 0
    # Claimed but not tried before the lease ran short; due again at once.
    released: int = 0

    def __add__(self, other: DeliveryReport) -> DeliveryReport:
        return DeliveryReport(
            self.claimed + other.claimed,
            self.sent + other.sent,
            self.retried + other.retried,
            self.dead + other.dead,
            self.released + other.released,
        )


@dataclass(frozen=True)
class Lane:
    """Which outbox rows one delivery thread claims: `kinds`, only for `receivers` when given,
    never for a receiver in `other_than`."""

    name: str
    kinds: tuple[str, ...]
    receivers: tuple[str, ...] | None = None
    other_than: tuple[str, ...] = ()


class _Failure(Exception):
    def __init__(self, message: str, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass(frozen=True)
class Attempt:
    """One try of a claimed row: `error` is None when it was delivered; `tried` is False when
    the batch ran out of lease time before it started."""

    item: Claimed
    error: str | None = None
    permanent: bool = False
    tried: bool = True


def _log_ack(ack: Ack, lost: bool) -> None:
    item = ack.item
    if lost:
        log.warning(
            "notification %d to %s: %s not recorded, its lease ran out and another worker "
            "holds it (it may be sent again with the same idempotency key)",
            item.id,
            item.receiver,
            ack.outcome,
        )
    elif ack.outcome == "sent":
        log.info("delivered notification %d to %s", item.id, item.receiver)
    elif ack.outcome == "dead":
        log.warning("notification %d to %s is dead: %s", item.id, item.receiver, ack.error)
    elif ack.outcome == "retry":
        log.info(
            "notification %d to %s failed (%s); retry at %s",
            item.id,
            item.receiver,
            ack.error,
            ack.at.isoformat(),
        )


class DeliveryWorker:
    """Sends outbox rows; resources (engine, HTTP client, clock, randomness) are injected."""

    def __init__(
        self,
        engine: Engine,
        config: AlertsConfig,
        client: httpx.Client,
        *,
        env: Mapping[str, str] | None = None,
        rng: random.Random | None = None,
        rollback: RollbackHandler | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        environ = os.environ if env is None else env
        self.engine, self.config, self.client = engine, config, client
        self.policy = config.delivery
        self.rng = rng or random.Random()
        self.rollback = rollback
        self.clock = clock
        self.receivers: dict[str, Receiver] = {
            r.name: build_receiver(r, environ) for r in config.receivers
        }
        self.timeouts = {r.name: r.timeout_s for r in config.receivers}
        self._secrets = {
            r.name: _Secret(read_env(environ, r.secret_env, r.name, "secret_env"))
            for r in config.receivers
            if r.secret_env
        }

    def __repr__(self) -> str:
        return f"DeliveryWorker(receivers={sorted(self.receivers)})"

    @property
    def kinds(self) -> tuple[str, ...]:
        """Row kinds this worker handles (rollback rows only with a handler)."""
        return ("notify", "rollback") if self.rollback else ("notify",)

    def lanes(self) -> list[Lane]:
        """One lane per configured receiver, one for rollback actions (with a handler), and one
        for rows whose receiver is no longer configured (they go dead)."""
        names = tuple(sorted(self.receivers))
        lanes = [Lane(f"receiver {n}", ("notify",), receivers=(n,)) for n in names]
        if self.rollback:
            lanes.append(Lane("rollback", ("rollback",)))
        return [*lanes, Lane("unrouted", ("notify",), other_than=names)]

    def run_once(self, now: datetime | None = None, lane: Lane | None = None) -> DeliveryReport:
        """Claim one batch of due rows (of `lane` only, when given), try each once, and record
        the results together."""
        now = now or self.clock()
        items = claim(
            self.engine,
            now,
            lease=self.policy.lease,
            limit=self.policy.batch_size,
            kinds=lane.kinds if lane else self.kinds,
            receivers=lane.receivers if lane else None,
            other_than=lane.other_than if lane else (),
        )
        acks = [self._ack(attempt, now) for attempt in self.send(items)]
        lost = {ack.item.id for ack in acknowledge(self.engine, acks)}
        for ack in acks:
            _log_ack(ack, lost=ack.item.id in lost)
        counts = Counter(ack.outcome for ack in acks)
        return DeliveryReport(
            len(items), counts["sent"], counts["retry"], counts["dead"], counts["released"]
        )

    def run(self, stop: threading.Event | None = None, once: bool = False) -> DeliveryReport:
        """Run every lane on its own thread until `stop` is set; with `once`, until nothing is
        due (then return totals). A lane that raises stops the others and the error is raised
        here, so the supervisor restarts the worker as a whole."""
        stop = stop or threading.Event()
        halt = threading.Event()
        totals: list[DeliveryReport] = []
        errors: list[BaseException] = []

        def lane_loop(lane: Lane) -> None:
            try:
                totals.append(self._run_lane(lane, halt, once))
            except BaseException as exc:  # re-raised below, after the other lanes stop
                errors.append(exc)
                halt.set()

        threads = [
            # Daemon threads: exiting never waits for an attempt (its row is re-sent after its
            # lease, with the same idempotency key).
            threading.Thread(
                target=lane_loop, args=(lane,), name=f"delivery {lane.name}", daemon=True
            )
            for lane in self.lanes()
        ]
        for thread in threads:
            thread.start()
        while not halt.is_set() and any(t.is_alive() for t in threads):
            if stop.wait(0.1):
                halt.set()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return sum(totals, DeliveryReport())

    def _run_lane(self, lane: Lane, halt: threading.Event, once: bool) -> DeliveryReport:
        total = DeliveryReport()
        while not halt.is_set():
            report = self.run_once(lane=lane)
            total = total + report
            if report.claimed > report.released:
                continue
            if once:
                break
            halt.wait(self.policy.poll_interval.total_seconds())
        return total

    def send(self, items: Sequence[Claimed]) -> list[Attempt]:
        """Try each claimed row once and record nothing: rollbacks one at a time, notifications
        `concurrency` at a time (a batch holds one row per group, so group order is kept).
        A row still waiting for a free slot after half the lease is given back untried; the
        first row of each slot always goes, so every pass makes progress."""
        deadline = time.monotonic() + self.policy.lease.total_seconds() / 2
        rollbacks = [i for i in items if i.kind == "rollback"]
        notify = [i for i in items if i.kind != "rollback"]
        workers = max(min(self.policy.concurrency, len(notify)), 1)

        def attempt(index: int, item: Claimed, slots: int) -> Attempt:
            return self._attempt(item, math.inf if index < slots else deadline)

        done = [attempt(n, item, 1) for n, item in enumerate(rollbacks)]
        if workers == 1:
            return done + [attempt(n, item, 1) for n, item in enumerate(notify)]
        with ThreadPoolExecutor(workers, thread_name_prefix="delivery") as pool:
            tried = pool.map(lambda n: attempt(n, notify[n], workers), range(len(notify)))
            return done + list(tried)

    def _attempt(self, item: Claimed, deadline: float) -> Attempt:
        if time.monotonic() >= deadline:
            return Attempt(item, tried=False)
        try:
            self._deliver(item)
        except _Failure as exc:  # stored and logged: no URL credentials or query tokens
            return Attempt(item, scrub(str(exc)), exc.permanent)
        except Exception as exc:  # a payload that cannot be rendered must not sink its batch
            log.exception("notification %d to %s cannot be sent", item.id, item.receiver)
            return Attempt(item, scrub(f"{type(exc).__name__}: {exc}")[:500], permanent=True)
        return Attempt(item)

    def _ack(self, attempt: Attempt, now: datetime) -> Ack:
        item = attempt.item
        if not attempt.tried:
            return Ack(item, "released", now)
        if attempt.error is None:
            return Ack(item, "sent", now)
        too_old = now - item.created_at >= self.policy.max_age
        if attempt.permanent or too_old or item.attempts >= self.policy.max_attempts:
            return Ack(item, "dead", now, attempt.error)
        delay = backoff(
            item.attempts, self.policy.backoff_initial, self.policy.backoff_max, self.rng
        )
        return Ack(item, "retry", now + delay, attempt.error)

    def _deliver(self, item: Claimed) -> None:
        if item.kind == "rollback":
            self._rollback(item)
            return
        receiver = self.receivers.get(item.receiver)
        if receiver is None:
            raise _Failure(f"receiver {item.receiver!r} is not configured", permanent=True)
        requests = receiver.render(Notification.from_json(item.payload))
        with attempt_deadline(self.timeouts.get(item.receiver, 10.0)):
            for i, request in enumerate(requests):
                key = item.idempotency_key if len(requests) == 1 else f"{item.idempotency_key}-{i}"
                self._post(item.receiver, request, key)

    def _rollback(self, item: Claimed) -> None:
        assert self.rollback is not None
        try:
            self.rollback(item.payload)
        except Exception as exc:  # the handler's failure is recorded and retried
            raise _Failure(f"rollback failed: {type(exc).__name__}: {exc}", False) from None

    def _post(self, receiver: str, request: OutboundRequest, key: str) -> None:
        headers = {"Content-Type": "application/json", **request.headers, IDEMPOTENCY_HEADER: key}
        secret = self._secrets.get(receiver)
        if secret is not None:
            # Signed with the wall clock: the receiver checks the timestamp against its own.
            stamp = int(self.clock().timestamp())
            headers[SIGNATURE_HEADER] = sign(request.body, secret.value, stamp, idempotency_key=key)
        try:
            response = self.client.post(
                request.url,
                content=request.body,
                headers=headers,
                timeout=self.timeouts.get(receiver, 10.0),
            )
        except httpx.HTTPError as exc:
            raise _Failure(f"{type(exc).__name__}: {exc}"[:500], permanent=False) from None
        if 200 <= response.status_code < 300:
            return
        retryable = response.status_code in (408, 429) or response.status_code >= 500
        raise _Failure(f"HTTP {response.status_code}: {response.text[:200]}", not retryable)
