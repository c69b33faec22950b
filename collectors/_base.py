"""Interfaces of the collectors: raw records, decoded events, adapters and sources.

A *source* (Kafka partition, log file, HTTP request) yields :class:`RawRecord` s: raw payload
bytes plus the position they came from. An *adapter* turns one payload into plain JSON-like
objects in modelwatch's event format; validation turns each into a :class:`PredictionEvent` or a
:class:`LabelEvent`, or a :class:`Rejection` that becomes a dead letter. Nothing is dropped
silently: every record ends up aggregated, counted late, joined, or dead-lettered.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Scalar = float | int | str | None


# Records and events are created per message: plain slotted dataclasses (frozen ones cost a
# detour through object.__setattr__ on every construction). Treat them as immutable.
@dataclass(slots=True)
class RawRecord:
    """One payload and its position: it occupies [start, end) of partition/file `key`.

    Kafka: start is the message offset, end = offset + 1. Files: byte offsets of the line.
    A record is applied once: when `start` is at or past the stored position of `key`.
    """

    key: str
    start: int
    end: int
    payload: bytes
    # The payload already decoded, when the source had to parse it anyway (the HTTP drain parses
    # each request body once): the planner then skips decoding it again. None: decode `payload`.
    decoded: Any = None


@dataclass(slots=True)
class PredictionEvent:
    """A validated prediction: features, prediction columns and slice attributes."""

    request_id: str
    model: str
    version: str
    ts: float  # event time, seconds since the Unix epoch (UTC)
    features: Mapping[str, Scalar]
    prediction: Any  # as sent: number, string, or {"output": number | [numbers]}
    metadata: Mapping[str, Scalar] = field(default_factory=dict)
    # Operational fields present on the event (`collectors._serving.SERVING_FIELDS`), validated.
    serving: Mapping[str, Any] | None = None


@dataclass(slots=True)
class LabelEvent:
    """A ground-truth label for an earlier or later prediction with the same request id."""

    request_id: str
    model: str
    label: Any
    ts: float


Event = PredictionEvent | LabelEvent


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a record cannot be used: a short reason code and a one-line detail."""

    reason: str
    detail: str


class Adapter(Protocol):
    """Turns one raw payload into zero or more objects in the modelwatch event format.

    `decode` raises :class:`DecodeError` (with a reason code) when the payload is unusable; the
    ingestor stores it as a dead letter. Adapters are registered by name in
    `collectors._adapters` and chosen per source with the `format` config key.
    """

    name: str

    def decode(self, payload: bytes) -> Sequence[Any]: ...


@dataclass(slots=True)
class Half:
    """One half of a paired input (a request or a response), waiting for its other half."""

    pair_id: str
    kind: str  # "request" or "response"
    ts: float
    body: Any


class PairingAdapter(Adapter, Protocol):
    """An adapter whose payloads are halves (:class:`Half`) paired by id into events.

    `decode` returns one Half per payload; once both halves of an id have arrived (in any order,
    in any batch — the first waits in `pending_halves`), `combine` turns them into events.
    """

    def combine(self, request: Half, response: Half) -> Sequence[Any]: ...


class DecodeError(ValueError):
    """A payload cannot be decoded or validated; `reason` is a short machine-readable code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Batch:
    """Records polled together, with what the source knows about each key's end and identity."""

    records: Sequence[RawRecord]
    # Highest position known to exist per key (lag = end - committed position).
    ends: Mapping[str, int] = field(default_factory=dict)
    # Per-key description stored with the position (file path, device, inode).
    details: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What one committed batch did."""

    events: int = 0
    labels: int = 0
    dead_letters: int = 0
    late: int = 0
    skipped: int = 0  # records at or before the stored position (already applied)


class Source(Protocol):
    """A running input: yields batches of records and knows when it has caught up.

    `batches()` yields :class:`Batch` es (an empty one when idle); after the ingestor commits
    one, the source is told the stored positions through `committed()`. `caught_up()` is true
    once everything that existed when the source started has been committed.
    """

    name: str
    type: str

    def batches(self) -> Iterator[Batch]: ...

    def committed(self, positions: Mapping[str, int]) -> None: ...

    def caught_up(self) -> bool: ...

    def close(self) -> None: ...
