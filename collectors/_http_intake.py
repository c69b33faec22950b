"""HTTP ingest as a source: request bodies appended to a durable log, drained exactly once.

`POST /v1/events` (and `/v1/labels`) append the checked body to `intake_log` in ONE insert and
answer; :class:`~collectors._intake_drain.Drain` aggregates pending rows through the same
`Ingestor` as Kafka and log files, in large batches, and marks them consumed in the batch's
transaction. So HTTP has the collectors' exactly-once effect:

- with an `Idempotency-Key`, the row's unique key is `<namespace>:<key>` (events and labels are
  apart). A retry, on this or any replica, before or after the drain, meets the key and is
  answered as a duplicate; the same key with another body (SHA-256 differs) is a conflict.
- without one, every request is its own row and counts.

In `modelwatch serve` the drain runs in a worker process under the daemon's supervisor (see
`collectors._intake_worker`): a worker that dies is restarted with backoff and `/readyz` names
it (`intake-drain`) until it is back.

Backpressure: past `collect.http_max_backlog` pending requests a new one is refused
(:class:`IntakeFull`, HTTP 503 with Retry-After) instead of growing the log without limit.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol, cast

from sqlalchemy import Table, func, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session

from collectors._group_commit import GroupWriter
from collectors._http_bodies import SOURCES, RequestBody
from collectors._ingest import Ingestor
from collectors._intake_drain import Drain
from collectors._intake_requests import stored_key
from collectors._intake_worker import DrainProcess
from monitor.config import Config
from monitor.errors import ConfigError, ConflictError, InputError, StorageError
from monitor.storage import IntakeEntry, utcnow

IDEMPOTENCY_HEADER = "Idempotency-Key"
# The supervised component name of the drain's worker process (restart metrics, /readyz).
DRAIN_COMPONENT = "intake-drain"
_INSERT = insert(cast(Table, IntakeEntry.__table__))
_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")
# How long a backlog count is trusted before a request counts again (one query per interval).
BACKLOG_REFRESH_S = 0.5
RETRY_AFTER_S = 2


@dataclass(frozen=True)
class Accepted:
    """What one request did: events appended to the log now, or a duplicate of a stored one
    (`intake_id`: the log row holding the request, the stored one for a duplicate)."""

    queued: int
    duplicates: int
    idempotency_key: str | None
    intake_id: int


@dataclass(frozen=True)
class Backlog:
    """Requests (and their events) appended but not yet aggregated, against the bound; the
    drain's lag is the age of the oldest of them (`max_lag_s`: how much /readyz tolerates)."""

    requests: int
    events: int
    bound: int
    oldest_age_s: float | None
    max_lag_s: float = math.inf

    @property
    def full(self) -> bool:
        return self.requests >= self.bound

    @property
    def lag_s(self) -> float:
        """Seconds the drain is behind what was acknowledged (0 when nothing is pending)."""
        return self.oldest_age_s or 0.0

    def problem(self) -> str | None:
        """What /readyz says when the backlog is past a bound; None within both."""
        if self.full:
            return f"backlog of {self.requests} requests at http_max_backlog"
        if self.lag_s > self.max_lag_s:
            return (
                f"drain lag {self.lag_s:.0f}s over http_max_lag ({self.max_lag_s:.0f}s): "
                f"{self.requests} requests, {self.events} events not yet aggregated"
            )
        return None


class IntakeFull(Exception):
    """The intake backlog is at its bound: retry after `retry_after` seconds."""

    def __init__(self, backlog: int, bound: int) -> None:
        super().__init__(
            f"intake backlog of {backlog} requests is at collect.http_max_backlog ({bound}); "
            f"retry after {RETRY_AFTER_S}s"
        )
        self.retry_after = RETRY_AFTER_S


def check_idempotency_key(value: str | None) -> str | None:
    """The key if well formed (1-200 visible ASCII characters); InputError otherwise."""
    if value is None:
        return None
    if not _KEY.match(value):
        raise InputError(f"{IDEMPOTENCY_HEADER}: use 1-200 visible ASCII characters")
    return value


def read_backlog(engine: Engine, bound: int, max_lag_s: float = math.inf) -> Backlog:
    """The intake log's pending requests and events (served by a partial index)."""
    pending = IntakeEntry.consumed_at.is_(None)
    with Session(engine) as session:
        n, events, oldest = session.execute(
            select(
                func.count(), func.sum(IntakeEntry.events), func.min(IntakeEntry.received_at)
            ).where(pending)
        ).one()
    age = None if oldest is None else max(0.0, (utcnow() - oldest).total_seconds())
    return Backlog(int(n), int(events or 0), bound, age, max_lag_s)


class IntakeLog:
    """Appends checked request bodies to `intake_log`, one insert each, within the bound."""

    def __init__(
        self,
        engine: Engine,
        max_backlog: int,
        clock: Callable[[], float] = time.monotonic,
        group_commit: bool | None = None,
    ):
        """`group_commit`: commit concurrent appends together (default: on SQLite only, whose
        single writer lock is what concurrent requests queue on)."""
        self.engine = engine
        self.max_backlog = max_backlog
        if group_commit is None:
            group_commit = engine.dialect.name == "sqlite"
        self._writer = GroupWriter(engine) if group_commit else None
        self._clock = clock
        self._lock = threading.Lock()
        self._counted_at = -1e9
        self._pending = 0

    def append(
        self, kind: str, body: bytes, events: int, key: str | None, namespace: str = "idem"
    ) -> Accepted:
        """Store one request (IntakeFull past the bound; a known key: a duplicate)."""
        try:
            return self._append(kind, body, events, key, namespace)
        except IntegrityError:
            raise
        except DBAPIError as exc:
            raise StorageError(f"intake log: {str(exc.orig or exc).splitlines()[0]}") from None

    def _append(
        self, kind: str, body: bytes, events: int, key: str | None, namespace: str
    ) -> Accepted:
        self._check_room()
        digest = hashlib.sha256(body).hexdigest()
        unique = stored_key(namespace, key)
        row = {"key": unique, "kind": kind, "sha256": digest, "events": events, "body": body}
        if self._writer is not None:
            grouped = self._writer.insert({**row, "received_at": utcnow()})
            if grouped is None:
                assert unique is not None  # only a key conflicts
                return self._duplicate(unique, digest, key)
            return self._accepted(events, key, grouped)
        try:
            with self.engine.begin() as connection:
                inserted = connection.execute(_INSERT, {**row, "received_at": utcnow()})
                row_id = int(inserted.inserted_primary_key[0])  # type: ignore[index]
        except IntegrityError:
            if unique is None:
                raise
            return self._duplicate(unique, digest, key)
        return self._accepted(events, key, row_id)

    def _accepted(self, events: int, key: str | None, row_id: int) -> Accepted:
        with self._lock:
            self._pending += 1
        return Accepted(events, 0, key, row_id)

    def _duplicate(self, unique: str, digest: str, key: str | None) -> Accepted:
        entry = IntakeEntry
        with Session(self.engine) as session:
            stored = session.execute(
                select(entry.id, entry.sha256, entry.events).where(entry.key == unique)
            ).one()
        if stored.sha256 != digest:
            raise ConflictError(f"{IDEMPOTENCY_HEADER} {key!r} was already used for another body")
        return Accepted(0, int(stored.events), key, int(stored.id))

    def _check_room(self) -> None:
        with self._lock:
            now = self._clock()
            if now - self._counted_at >= BACKLOG_REFRESH_S:
                self._pending = read_backlog(self.engine, self.max_backlog).requests
                self._counted_at = now
            if self._pending >= self.max_backlog:
                raise IntakeFull(self._pending, self.max_backlog)


# The drain's database outages are retried this long per attempt (then the drain backs off).
HTTP_DB_RETRY = timedelta(seconds=10)


def make_ingestor(engine: Engine, config: Config, adapter: str) -> Ingestor:
    """The HTTP source's ingestor for one adapter."""
    source, source_type = SOURCES[adapter]
    retry = min(config.collect.db_retry_timeout, HTTP_DB_RETRY)
    settings = config.collect.model_copy(update={"db_retry_timeout": retry})
    options = config.api.cloudevents.model_dump(exclude_defaults=True)
    return Ingestor(
        engine,
        source,
        source_type,
        config.models,
        settings,
        format=adapter,
        format_options=options if adapter == "cloudevents" else None,
    )


class Supervised(Protocol):
    """A supervised run of a target (the daemon's `SupervisedComponent`)."""

    def start(self) -> None: ...

    def stop(self, timeout: float) -> None: ...

    def problem(self) -> str | None: ...


# Runs `target(stop)` under supervision: restarted with backoff whenever it raises.
Supervise = Callable[[str, Callable[[threading.Event], None]], Supervised]


class HttpIntake:
    """The daemon's HTTP source: the intake log requests append to, and its drain."""

    def __init__(
        self,
        engine: Engine,
        config: Config,
        replica: str | None = None,
        factory: Callable[[str], Ingestor] | None = None,
        supervise: Supervise | None = None,
    ) -> None:
        """`supervise`: drain in spawned worker processes run by it (serve: restarted with
        backoff when one dies), else on a thread of this process, started by the first
        request or `start()`."""
        self.engine = engine
        self._factory = factory or (lambda adapter: make_ingestor(engine, config, adapter))
        self._ingestors: dict[str, Ingestor] = {}
        self.max_backlog = config.collect.http_max_backlog
        self.max_lag_s = config.collect.http_max_lag.total_seconds()
        self._has_models = bool(config.models)
        self.log = IntakeLog(engine, self.max_backlog)
        replica = replica or uuid.uuid4().hex[:16]
        self.drain = Drain(
            engine,
            self._ingestor,
            replica,
            config.collect.batch_size,
            max_delay_s=config.collect.drain_max_delay.total_seconds(),
            window_s=config.collect.window.total_seconds(),
            offset_s=config.scheduler.offset_s(config.scheduler.evaluate_interval_s),
        )
        self.worker: DrainProcess | None = None
        self._supervised: Supervised | None = None
        self._started = False
        self._starting = threading.Lock()  # requests start it too, concurrently
        if supervise is not None:
            url = engine.url.render_as_string(hide_password=False)
            self.worker = DrainProcess(url, config, replica, make_ingestor)
            self._supervised = supervise(DRAIN_COMPONENT, self.worker.run)

    def submit(self, request: RequestBody, key: str | None, namespace: str = "idem") -> Accepted:
        """Append one checked request to the log (the drain aggregates it within moments)."""
        if not self._has_models:
            raise ConfigError("HTTP ingest: no models configured; add them under `models`")
        self.start()
        accepted = self.log.append(request.kind, request.body, request.events, key, namespace)
        self.drain.wake()
        if self.worker is not None:
            self.worker.wake()
        return accepted

    def backlog(self) -> Backlog:
        """Pending requests and events of the shared intake log."""
        return read_backlog(self.engine, self.max_backlog, self.max_lag_s)

    def problem(self) -> str | None:
        """None while healthy, else what /readyz shows: the drain down or failing, the log
        full, or the drain further behind than `collect.http_max_lag`."""
        return self._drain_problem() or self.backlog().problem()

    def _drain_problem(self) -> str | None:
        if self.worker is not None and self._supervised is not None:
            down = self._supervised.problem() if self._started else None
            if down is not None:
                return f"{DRAIN_COMPONENT}: {down}"
            error = self.worker.last_error
        else:
            if self.drain.started and not self.drain.running():
                return "drain not running"
            error = self.drain.last_error
        return f"drain failing: {error}" if error else None

    def start(self) -> None:
        if self._supervised is None:
            self.drain.start()
        else:
            with self._starting:
                if not self._started:
                    self._started = True
                    self._supervised.start()

    def stop(self, timeout: float) -> None:
        """Flush and stop the drain within `timeout` seconds (the rest stays in the log)."""
        if self.worker is not None and self._supervised is not None:
            self.worker.grace_s = 0.8 * timeout
            self._supervised.stop(timeout)
        else:
            self.drain.stop(timeout)

    def _ingestor(self, adapter: str) -> Ingestor:
        if adapter not in self._ingestors:
            try:
                self._ingestors[adapter] = self._factory(adapter)
            except IntegrityError:
                # Another replica created the source's counter row at the same moment.
                self._ingestors[adapter] = self._factory(adapter)
        return self._ingestors[adapter]
