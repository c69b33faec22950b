"""Ingest tables: window profiles, source positions, dead letters, counters and the label join.

Exactly-once: every batch writes its aggregates, counters and source positions in ONE
transaction, so a crash leaves either all of a batch or none of it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base, JSONDoc, UTCDateTime, utcnow


class WindowProfile(Base):
    """One column's profile of one (model, version, window, slice), merged in place per batch."""

    __tablename__ = "window_profiles"

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    version: Mapped[str] = mapped_column(String(100), primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    # "" is all traffic; otherwise canonical JSON of {slice column: value}.
    slice_key: Mapped[str] = mapped_column(String(500), primary_key=True)
    column: Mapped[str] = mapped_column(String(200), primary_key=True)
    window_end: Mapped[datetime] = mapped_column(UTCDateTime)
    kind: Mapped[str] = mapped_column(String(20))
    n: Mapped[int] = mapped_column(BigInteger)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WindowCount(Base):
    """Events aggregated into one (model, version, window, slice): exact, merged in place."""

    __tablename__ = "window_counts"
    # The newest write per model (`no_data`) and retention by age read it.
    __table_args__ = (Index("ix_window_counts_model_updated_at", "model", "updated_at"),)

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    version: Mapped[str] = mapped_column(String(100), primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    slice_key: Mapped[str] = mapped_column(String(500), primary_key=True)
    window_end: Mapped[datetime] = mapped_column(UTCDateTime)
    events: Mapped[int] = mapped_column(BigInteger)
    # Of a model with `fairness`: its predictions with a usable score, and those predicting the
    # positive class (`monitor.outcomes.summary.predicted_positive`); 0 for other models.
    scored: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    selected: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WindowServing(Base):
    """Serving statistics of one (model, version, window, slice), merged in place per batch.

    `latency`/`model_latency` are log-scale sketches (`monitor.profiles._latency`) as JSON;
    `attributions` maps a feature to `[n, sum of |attribution|]`; `stages` maps the other
    stages' names (queue, preprocess, postprocess, network) to their sketches (NULL: none);
    `measures` the registered measures' names (`monitor.common.measures`) to theirs.
    """

    __tablename__ = "window_serving"
    # Retention deletes by age.
    __table_args__ = (Index("ix_window_serving_updated_at", "updated_at"),)

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    version: Mapped[str] = mapped_column(String(100), primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    slice_key: Mapped[str] = mapped_column(String(500), primary_key=True)
    window_end: Mapped[datetime] = mapped_column(UTCDateTime)
    requests: Mapped[int] = mapped_column(BigInteger)
    errors: Mapped[int] = mapped_column(BigInteger)
    latency: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    model_latency: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    attributions: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    stages: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, nullable=True)
    measures: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SourcePosition(Base):
    """How far a source has been consumed: a Kafka partition's next offset or a file's bytes."""

    __tablename__ = "source_positions"
    # Lag reads only rows that are behind (Kafka partitions, files), never the one row per
    # HTTP idempotency key (consumed whole): a partial index over them (migration 0013).
    __table_args__ = (
        Index(
            "ix_source_positions_lag",
            "source",
            "end_offset",
            "offset",
            postgresql_where=text('end_offset > "offset"'),
            sqlite_where=text('end_offset > "offset"'),
        ),
    )

    source: Mapped[str] = mapped_column(String(200), primary_key=True)
    # "topic:partition" for Kafka; the file fingerprint for log files.
    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    offset: Mapped[int] = mapped_column(BigInteger)
    # Highest offset known to exist when this row was written (lag = end_offset - offset).
    end_offset: Mapped[int] = mapped_column(BigInteger, default=0)
    # Highest event time seen on this partition/file; lateness is judged against it.
    watermark: Mapped[datetime | None] = mapped_column(UTCDateTime)
    detail: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DeadLetter(Base):
    """An input that failed decoding or validation, with its (capped) raw bytes and reason."""

    __tablename__ = "dead_letters"
    __table_args__ = (
        Index("ix_dead_letters_source_created_at", "source", "created_at"),
        Index("ix_dead_letters_key_offset", "key", "offset"),
        Index("ix_dead_letters_intake_id", "intake_id", "intake_index"),
        Index("ix_dead_letters_intake_key", "intake_key", "intake_index"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(String(200))
    key: Mapped[str] = mapped_column(String(300))
    offset: Mapped[int] = mapped_column(BigInteger)
    reason: Mapped[str] = mapped_column(String(50))
    detail: Mapped[str] = mapped_column(Text)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    payload_size: Mapped[int] = mapped_column(BigInteger)
    truncated: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # HTTP ingest: the intake request (row id, stored Idempotency-Key) and the event's index in
    # it; NULL for other sources.
    intake_id: Mapped[int | None] = mapped_column(BigInteger)
    intake_key: Mapped[str | None] = mapped_column(String(260))
    intake_index: Mapped[int | None] = mapped_column(Integer)


class IngestCounter(Base):
    """Per-source totals, updated in the batch transaction: exact across crashes."""

    __tablename__ = "ingest_counters"

    source: Mapped[str] = mapped_column(String(200), primary_key=True)
    type: Mapped[str] = mapped_column(String(20))
    events: Mapped[int] = mapped_column(BigInteger, default=0)
    labels: Mapped[int] = mapped_column(BigInteger, default=0)
    dead_letters: Mapped[int] = mapped_column(BigInteger, default=0)
    late: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WaitingBatch(Base):
    """Entries of one batch waiting in one of a model's rooms of the label join.

    `room` is "prediction" (predictions waiting for their labels) or "label" (labels that came
    first). One row holds a whole batch's entries (`collectors/_rooms.py` owns the format):
    `keys` the int64 stable hashes of their request ids (entry order), `body` their columns
    (request ids, versions, event times, values, slice values), `used` a bitmap of entries
    taken or superseded, `open` how many are not. `ts_min`/`ts_max` are event times in integer
    microseconds since the epoch; the row is deleted when `open` reaches 0 or `ts_max` falls
    behind the label horizon.
    """

    __tablename__ = "waiting_batches"
    __table_args__ = (
        Index("ix_waiting_batches_model_room_id", "model", "room", "id"),
        Index("ix_waiting_batches_model_ts_max", "model", "ts_max"),
        # Ids never reused (SQLite would reuse the highest deleted one): the join's in-memory
        # index reads rows past the last id it has seen.
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    model: Mapped[str] = mapped_column(String(200))
    room: Mapped[str] = mapped_column(String(20))
    n: Mapped[int] = mapped_column(Integer)
    open: Mapped[int] = mapped_column(Integer)
    ts_min: Mapped[int] = mapped_column(BigInteger)
    ts_max: Mapped[int] = mapped_column(BigInteger)
    keys: Mapped[bytes] = mapped_column(LargeBinary)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    used: Mapped[bytes] = mapped_column(LargeBinary)


class WaitingHead(Base):
    """Per model, a counter bumped by every transaction that joins labels of the model.

    The bump's row lock serialises those transactions (PostgreSQL; SQLite's write lock does it
    anyway), and a process that finds it one past the value it saw last knows that no other
    writer touched the model's waiting rooms in between.
    """

    __tablename__ = "waiting_heads"

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger)


class LabeledPrediction(Base):
    """A prediction joined with its label: input of per-slice outcome metrics."""

    __tablename__ = "labeled_predictions"
    __table_args__ = (Index("ix_labeled_predictions_model_version_ts", "model", "version", "ts"),)

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    request_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    version: Mapped[str] = mapped_column(String(100))
    # Event time of the prediction; windows of outcome metrics are cut on it.
    ts: Mapped[datetime] = mapped_column(UTCDateTime)
    prediction: Mapped[Any] = mapped_column(JSONDoc)
    label: Mapped[Any] = mapped_column(JSONDoc)
    slice_values: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    joined_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PendingHalf(Base):
    """One half (request or response) of a paired input, e.g. an inference-logger CloudEvent."""

    __tablename__ = "pending_halves"
    __table_args__ = (Index("ix_pending_halves_source_ts", "source", "ts"),)

    source: Mapped[str] = mapped_column(String(200), primary_key=True)
    pair_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    kind: Mapped[str] = mapped_column(String(20), primary_key=True)
    ts: Mapped[datetime] = mapped_column(UTCDateTime)
    body: Mapped[Any] = mapped_column(JSONDoc)
