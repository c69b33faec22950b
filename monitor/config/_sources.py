"""Config of ingest sources and of the collector's windows, lateness and label join."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from monitor.config._base import StrictModel
from monitor.config._durations import Duration
from monitor.config._names import FormatName

# Keys every source has, described once.
SourceName = Annotated[
    str,
    Field(
        min_length=1,
        description="The source's name (positions, counters and dead letters are kept under it).",
    ),
]
SourceFormat = Annotated[
    FormatName, Field(description="Payload adapter: `modelwatch`, `sagemaker` or `cloudevents`.")
]
FormatOptions = Annotated[
    dict[str, Any],
    Field(description="Adapter options (`model`, `model_version`, `feature_names`)."),
]


class KafkaSourceConfig(StrictModel):
    """A Kafka topic consumed in a consumer group."""

    type: Literal["kafka"] = Field(description="`kafka`: a topic consumed in a consumer group.")
    name: SourceName
    bootstrap_servers: str | list[str] = Field(description="Broker address or list of addresses.")
    topic: str = Field(min_length=1, description="The topic to consume.")
    group_id: str = Field(
        default="modelwatch",
        description="Consumer group; replicas with the same group share the partitions.",
    )
    # "auto" probes the broker; old brokers (0.9) need an explicit "0.9".
    api_version: str = Field(
        default="auto",
        pattern=r"^(auto|\d+(\.\d+){1,2})$",
        description="Broker protocol version; `auto` probes the broker (0.9 brokers need `0.9`).",
    )
    # Payload adapter (collectors._adapters): modelwatch, sagemaker or cloudevents.
    format: SourceFormat = "modelwatch"
    format_options: FormatOptions = Field(default_factory=dict)
    # Where a partition with no stored position starts.
    start: Literal["earliest", "latest"] = Field(
        default="earliest", description="Where a partition without a stored position starts."
    )
    poll_timeout_ms: int = Field(
        default=500, ge=1, le=60_000, description="How long one poll waits for records."
    )
    request_timeout_ms: int = Field(
        default=40_000, ge=1000, description="Timeout of one broker request."
    )
    # A member that dies (kill -9) keeps its partitions this long before the group rebalances.
    session_timeout_ms: int = Field(
        default=10_000,
        ge=1000,
        le=300_000,
        description=(
            "A member that dies keeps its partitions this long before the group rebalances."
        ),
    )
    # The client library: kafka-python (pure Python), or confluent-kafka (librdkafka, C; about
    # 8x less CPU per message; `pip install 'modelwatch[confluent]'`).
    client: Literal["kafka-python", "confluent-kafka"] = Field(
        default="kafka-python",
        description=(
            "Kafka client: `kafka-python` (pure Python) or `confluent-kafka` "
            "(librdkafka; `pip install 'modelwatch[confluent]'`)."
        ),
    )


class JsonlSourceConfig(StrictModel):
    """JSONL serving logs (plain or gzip) matched by a glob, followed like `tail -F`."""

    type: Literal["jsonl"] = Field(description="`jsonl`: serving logs followed like `tail -F`.")
    name: SourceName
    path: str = Field(min_length=1, description="Glob of JSONL files, plain or gzip.")
    format: SourceFormat = "modelwatch"
    format_options: FormatOptions = Field(default_factory=dict)
    poll_interval: Duration = Field(
        default=timedelta(seconds=0.5),
        description="How often idle files are checked for growth and rotation.",
    )
    read_chunk_bytes: int = Field(
        default=1 << 20, ge=4096, description="Bytes read from a file at a time."
    )


SourceConfig = Annotated[KafkaSourceConfig | JsonlSourceConfig, Field(discriminator="type")]


class CollectConfig(StrictModel):
    """How the collector windows, batches, joins labels and survives database outages."""

    # Tumbling event-time windows [start, end), aligned to the Unix epoch.
    window: Duration = Field(
        default=timedelta(hours=1),
        description="Tumbling event-time windows `[start, end)`, aligned to the Unix epoch.",
    )
    # A late event whose window ended less than this before the watermark still updates it.
    allowed_lateness: Duration = Field(
        default=timedelta(minutes=10),
        description=(
            "A late event whose window ended less than this before the watermark still updates it."
        ),
    )
    # Events dated further than this ahead of the wall clock are dead letters
    # (`future_timestamp`): one mistyped time must not move a watermark into the future.
    max_future_skew: Duration = Field(
        default=timedelta(minutes=5),
        description=(
            "Events dated further than this ahead of the wall clock are dead "
            "letters (`future_timestamp`)."
        ),
    )
    # Predictions wait this long (event time) for labels, and labels for predictions.
    label_horizon: Duration = Field(
        default=timedelta(days=1),
        description=(
            "Predictions wait this long (event time) for labels, and labels for predictions."
        ),
    )
    join_labels: bool = Field(
        default=True, description="Join labels to predictions by request id for outcome metrics."
    )
    # Also write every joined pair to `labeled_predictions` (drill-down data, purged after
    # scheduler.labeled_retention_days). Outcome metrics come from summaries either way.
    keep_joined_rows: bool = Field(
        default=False,
        description=(
            "Also write each joined pair to `labeled_predictions` (drill-down "
            "data, kept `scheduler.labeled_retention_days`)."
        ),
    )
    batch_size: int = Field(
        default=5000, ge=1, le=1_000_000, description="Records per poll and per transaction."
    )
    # Ingest each source's batches in a worker process while the next batch is polled. "auto":
    # only for Kafka on kafka-python, whose pure-Python polling costs as much as ingesting;
    # confluent-kafka fetches in its own C threads and a file is cheap to read.
    pipeline: Literal["auto"] | bool = Field(
        default="auto",
        description=(
            "Ingest in a worker process while the next batch is polled: `auto` "
            "(only Kafka on kafka-python), true or false."
        ),
    )
    # Larger payloads are dead-lettered; dead letters keep at most dead_letter_bytes of them.
    max_payload_bytes: int = Field(
        default=1 << 20, ge=64, description="Larger payloads are dead letters (reason `oversized`)."
    )
    dead_letter_bytes: int = Field(
        default=64 << 10, ge=0, description="Raw bytes kept per dead letter."
    )
    # The edge (`collectors._edge`): caps that keep one event from blinding ingest.
    max_features_per_event: int = Field(
        default=1000,
        ge=1,
        le=100_000,
        description="More features in one event make it a dead letter (`too_many_features`).",
    )
    max_value_chars: int = Field(
        default=1000,
        ge=1,
        le=1_000_000,
        description=(
            "Longest string feature value, prediction, label or `error` (characters); "
            "longer is a dead letter (`too_long`)."
        ),
    )
    max_versions_per_window: int = Field(
        default=20,
        ge=1,
        le=10_000,
        description=(
            "Distinct model versions one model's window takes; events of further versions "
            "are dead letters (`too_many_versions`)."
        ),
    )
    max_columns_per_window: int = Field(
        default=2000,
        ge=1,
        le=100_000,
        description=(
            "Distinct feature and prediction columns one model version's window takes; an "
            "event adding more is a dead letter (`too_many_columns`)."
        ),
    )
    # Database outages: retry with exponential backoff capped at db_retry_backoff_max, for at
    # most db_retry_timeout in total before the collector gives up.
    db_retry_backoff_max: Duration = Field(
        default=timedelta(seconds=5),
        description="Database outage: the cap of the exponential backoff between retries.",
    )
    db_retry_timeout: Duration = Field(
        default=timedelta(minutes=10),
        description="Database outage: how long to retry in all before the collector exits 2.",
    )
    # HTTP ingest: requests appended to the intake log and not yet aggregated by the drain.
    # Past this many, `POST /v1/events` and `/v1/labels` answer 503 with Retry-After.
    http_max_backlog: int = Field(
        default=10_000,
        ge=1,
        description=(
            "HTTP requests appended to the intake log but not yet aggregated; "
            "past it `POST /v1/events` and `/v1/labels` answer 503."
        ),
    )
    # HTTP ingest: how far the drain may fall behind what was acknowledged before /readyz says
    # so (503, check `intake`): the age of the oldest request not yet aggregated.
    http_max_lag: Duration = Field(
        default=timedelta(seconds=60),
        description=(
            "Age of the oldest HTTP request not yet aggregated past which `/readyz` answers "
            "503 (the intake drain is not keeping up)."
        ),
    )
    # HTTP ingest: the drain's longest pause after a small batch of thin traffic (nearly a
    # window per event, the drain busy): it gathers more events per window-profile rewrite.
    # A quiet drain keeps its quarter-second pause (collectors/_intake_drain.py, `Drain.thin`).
    drain_max_delay: Duration = Field(
        default=timedelta(seconds=2),
        description=(
            "Longest pause of the HTTP intake drain after a small batch of thin traffic "
            "(about one event per window touched, the drain busy), on the clock's grid of it "
            "and of the windows; a quiet drain pauses 0.25 s. Longer: fewer, larger "
            "transactions, less CPU; later on dashboards. The window's length writes each "
            "window's profiles once (a fleet of thin traffic; `http_max_lag` must exceed it)."
        ),
    )
    # HTTP ingest: how long a request's Idempotency-Key is remembered after the drain consumed
    # it (a retry within it is answered as a duplicate; after it, it would count again). The
    # retention job deletes consumed intake rows older than this.
    http_dedup_window: Duration = Field(
        default=timedelta(days=1),
        description=(
            "How long a consumed request's Idempotency-Key still answers "
            "`duplicate`; then retention deletes its intake row."
        ),
    )

    @model_validator(mode="after")
    def _lag_bound_past_the_delay(self) -> CollectConfig:
        # A drain that lingers its whole delay leaves requests pending that long by design:
        # /readyz must not call that falling behind.
        if self.http_max_lag <= self.drain_max_delay:
            raise ValueError(
                f"collect.http_max_lag ({self.http_max_lag.total_seconds():g}s) must be longer "
                f"than collect.drain_max_delay ({self.drain_max_delay.total_seconds():g}s): "
                "requests wait that long "
                "in the intake log by design"
            )
        return self

    @field_validator("max_future_skew")
    @classmethod
    def _not_negative(cls, value: timedelta) -> timedelta:
        if value < timedelta(0):
            raise ValueError("must not be negative")
        return value

    @field_validator(
        "window", "label_horizon", "http_dedup_window", "http_max_lag", "drain_max_delay"
    )
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be a positive duration")
        return value
