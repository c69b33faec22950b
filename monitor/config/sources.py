"""Config of ingest sources (read by `collectors`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from monitor.config.base import StrictModel


class KafkaSourceConfig(StrictModel):
    """A Kafka topic consumed in a consumer group."""

    type: Literal["kafka"]
    name: str = Field(min_length=1)
    bootstrap_servers: str | list[str]
    topic: str = Field(min_length=1)
    group_id: str = "modelwatch"
    # "auto" probes the broker; old brokers (0.9) need an explicit "0.9".
    api_version: str = "auto"


class JsonlSourceConfig(StrictModel):
    """JSONL serving logs (plain or gzip) matched by a glob."""

    type: Literal["jsonl"]
    name: str = Field(min_length=1)
    path: str = Field(min_length=1)


SourceConfig = Annotated[KafkaSourceConfig | JsonlSourceConfig, Field(discriminator="type")]
