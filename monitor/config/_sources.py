"""Config of ingest sources and of the collector's windows, lateness and label join."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from monitor.config._base import StrictModel
from monitor.config._durations import Duration
from monitor.config._names import FormatName


class KafkaSourceConfig(StrictModel):
    """A Kafka topic consumed in a consumer group."""

    type: Literal["kafka"]
    name: str = Field(min_length=1)
    bootstrap_servers: str | list[str]
    topic: str = Field(min_length=1)
    group_id: str = "modelwatch"
    # "auto" probes the broker; old brokers (0.9) need an explicit "0.9".
    api_version: str = Field(default="auto", pattern=r"^(auto|\d+(\.\d+){1,2})$")
    # Payload adapter (collectors._adapters): modelwatch, sagemaker or cloudevents.
    format: FormatName = "modelwatch"
    format_options: dict[str, Any] = Field(default_factory=dict)
    # Where a partition with no stored position starts.
    start: Literal["earliest", "latest"] = "earliest"
    poll_timeout_ms: int = Field(default=500, ge=1, le=60_000)
    request_timeout_ms: int = Field(default=40_000, ge=1000)
    # A member that dies (kill -9) keeps its partitions this long before the group rebalances.
    session_timeout_ms: int = Field(default=10_000, ge=1000, le=300_000)
    # The client library: kafka-python (pure Python), or confluent-kafka (librdkafka, C; about
    # 8x less CPU per message; `pip install 'modelwatch[confluent]'`).
    client: Literal["kafka-python", "confluent-kafka"] = "kafka-python"


class JsonlSourceConfig(StrictModel):
    """JSONL serving logs (plain or gzip) matched by a glob, followed like `tail -F`."""

    type: Literal["jsonl"]
    name: str = Field(min_length=1)
    path: str = Field(min_length=1)
    format: FormatName = "modelwatch"
    format_options: dict[str, Any] = Field(default_factory=dict)
    poll_interval: Duration = timedelta(seconds=0.5)
    read_chunk_bytes: int = Field(default=1 << 20, ge=4096)


SourceConfig = Annotated[KafkaSourceConfig | JsonlSourceConfig, Field(discriminator="type")]


class CollectConfig(StrictModel):
    """How the collector windows, batches, joins labels and survives database outages."""

    # Tumbling event-time windows [start, end), aligned to the Unix epoch.
    window: Duration = timedelta(hours=1)
    # A late event whose window ended less than this before the watermark still updates it.
    allowed_lateness: Duration = timedelta(minutes=10)
    # Events dated further than this ahead of the wall clock are dead letters
    # (`future_timestamp`): one mistyped time must not move a watermark into the future.
    max_future_skew: Duration = timedelta(minutes=5)
    # Predictions wait this long (event time) for labels, and labels for predictions.
    label_horizon: Duration = timedelta(days=1)
    join_labels: bool = True
    # Also write every joined pair to `labeled_predictions` (drill-down data, purged after
    # scheduler.labeled_retention_days). Outcome metrics come from summaries either way.
    keep_joined_rows: bool = False
    batch_size: int = Field(default=5000, ge=1, le=1_000_000)
    # Ingest each source's batches in a worker process while the next batch is polled. "auto":
    # only for Kafka on kafka-python, whose pure-Python polling costs as much as ingesting;
    # confluent-kafka fetches in its own C threads and a file is cheap to read.
    pipeline: Literal["auto"] | bool = "auto"
    # Larger payloads are dead-lettered; dead letters keep at most dead_letter_bytes of them.
    max_payload_bytes: int = Field(default=1 << 20, ge=64)
    dead_letter_bytes: int = Field(default=64 << 10, ge=0)
    # Database outages: retry with exponential backoff capped at db_retry_backoff_max, for at
    # most db_retry_timeout in total before the collector gives up.
    db_retry_backoff_max: Duration = timedelta(seconds=5)
    db_retry_timeout: Duration = timedelta(minutes=10)
    # HTTP ingest: requests appended to the intake log and not yet aggregated by the drain.
    # Past this many, `POST /v1/events` and `/v1/labels` answer 503 with Retry-After.
    http_max_backlog: int = Field(default=10_000, ge=1)
    # HTTP ingest: how long a request's Idempotency-Key is remembered after the drain consumed
    # it (a retry within it is answered as a duplicate; after it, it would count again). The
    # retention job deletes consumed intake rows older than this.
    http_dedup_window: Duration = timedelta(days=1)

    @field_validator("max_future_skew")
    @classmethod
    def _not_negative(cls, value: timedelta) -> timedelta:
        if value < timedelta(0):
            raise ValueError("must not be negative")
        return value

    @field_validator("window", "label_horizon", "http_dedup_window")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be a positive duration")
        return value
