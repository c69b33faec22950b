"""HTTP intake: request bodies become records of the daemon's ingestors, exactly once.

Every payload of a request becomes one `RawRecord` at consecutive positions of one key:

- with an `Idempotency-Key`, the key is `idem:<key>` and the batch occupies positions
  [0, n). The positions are committed with the aggregates, so a retried request (on this or any
  replica) finds them stored and is skipped as a whole: counted once. Reusing a key for a
  different body is a conflict (the body's SHA-256 is stored with the position).
- without one, the key is this process's own (`replica:<id>`) and batches follow each other on
  it like messages on a Kafka partition; a retried request is then counted again.

One lock serializes the ingestors (their planners are not thread-safe); the database
transaction, not the lock, is what makes a batch count once across replicas.
"""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from monitor.config import Config
from monitor.errors import ConflictError, InputError
from monitor.storage import SourcePosition, transaction

if TYPE_CHECKING:
    from collectors import Ingestor

IDEMPOTENCY_HEADER = "Idempotency-Key"
HTTP_DB_RETRY = timedelta(seconds=10)
_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")

# Adapter name -> (source name, source type) of the ingestor that serves it.
SOURCES = {"modelwatch": ("http", "http"), "cloudevents": ("http-cloudevents", "http")}


@dataclass(frozen=True)
class IntakeResult:
    """What one request did: events aggregated, labels, dead letters, late, duplicates."""

    accepted: int
    labels: int
    dead_letters: int
    late: int
    duplicates: int
    idempotency_key: str | None


def check_idempotency_key(value: str | None) -> str | None:
    """The key if well formed (1-200 visible ASCII characters); InputError otherwise."""
    if value is None:
        return None
    if not _KEY.match(value):
        raise InputError(f"{IDEMPOTENCY_HEADER}: use 1-200 visible ASCII characters")
    return value


def body_digest(payloads: Sequence[bytes]) -> str:
    """SHA-256 over the payloads, length-prefixed so boundaries count."""
    digest = hashlib.sha256()
    for payload in payloads:
        digest.update(len(payload).to_bytes(8, "big"))
        digest.update(payload)
    return digest.hexdigest()


def make_ingestor(engine: Engine, config: Config, adapter: str) -> Ingestor:
    """The daemon's ingestor for one adapter (created on first use).

    A database outage is retried for at most HTTP_DB_RETRY, not the collectors' minutes: an
    HTTP client gets a 503 soon and retries with its Idempotency-Key.
    """
    from collectors import Ingestor

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


class HttpIntake:
    """The daemon's HTTP ingestors (one per adapter) and their positions."""

    def __init__(
        self,
        engine: Engine,
        config: Config,
        replica: str | None = None,
        factory: Callable[[str], Ingestor] | None = None,
    ) -> None:
        self.engine = engine
        self._factory = factory or (lambda adapter: make_ingestor(engine, config, adapter))
        self._ingestors: dict[str, Ingestor] = {}
        self._lock = threading.Lock()
        self.replica_key = f"replica:{replica or uuid.uuid4().hex[:16]}"

    def submit(
        self,
        adapter: str,
        payloads: Sequence[bytes],
        idempotency_key: str | None = None,
        namespace: str = "idem",
    ) -> IntakeResult:
        """Ingest the payloads of one request in one transaction.

        `namespace` keeps keys of different endpoints apart (events and labels share a source).
        """
        from collectors import Batch, RawRecord

        if not payloads:
            return IntakeResult(0, 0, 0, 0, 0, idempotency_key)
        with self._lock:
            ingestor = self._ingestor(adapter)
            if idempotency_key is None:
                key, details = self.replica_key, {}
                state = ingestor.states.get(key)
                start = state.offset if state is not None else ingestor.positions([key])[key]
            else:
                key, start = f"{namespace}:{idempotency_key}", 0
                details = {key: {"sha256": self._check_reuse(ingestor, key, payloads)}}
            records = [RawRecord(key, start + i, start + i + 1, p) for i, p in enumerate(payloads)]
            try:
                result = ingestor.ingest(Batch(records, details=details))
            finally:
                if idempotency_key is not None:
                    ingestor.states.pop(key, None)  # read again on a retry; keeps memory flat
        return IntakeResult(
            result.events,
            result.labels,
            result.dead_letters,
            result.late,
            result.skipped,
            idempotency_key,
        )

    def _ingestor(self, adapter: str) -> Ingestor:
        if adapter not in self._ingestors:
            try:
                self._ingestors[adapter] = self._factory(adapter)
            except IntegrityError:
                # Another replica created the source's counter row at the same moment.
                self._ingestors[adapter] = self._factory(adapter)
        return self._ingestors[adapter]

    def _check_reuse(self, ingestor: Ingestor, key: str, payloads: Sequence[bytes]) -> str:
        digest = body_digest(payloads)
        with transaction(self.engine) as session:
            stored = session.scalar(
                select(SourcePosition.detail).where(
                    SourcePosition.source == ingestor.source, SourcePosition.key == key
                )
            )
        if stored is not None and stored.get("sha256") not in (None, digest):
            name = key.partition(":")[2]
            raise ConflictError(f"{IDEMPOTENCY_HEADER} {name!r} was already used for another body")
        return digest
