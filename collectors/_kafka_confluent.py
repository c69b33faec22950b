"""The Kafka source on confluent-kafka (librdkafka): the same contract, far less CPU per message.

Chosen with `client: confluent-kafka`. Like the kafka-python source, offsets live only in
modelwatch's database: nothing is committed to Kafka, and every assignment (start and each
rebalance) seeks each partition to its stored offset before any message is fetched. Brokers
older than 0.10 (`api_version: "0.9"`) are spoken to with librdkafka's fallback protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from collectors._base import Batch, RawRecord
from collectors._kafka import PartitionProgress, parse_api_version, partition_key
from monitor.config import KafkaSourceConfig
from monitor.errors import ConfigError, ServiceError

log = logging.getLogger(__name__)


def consumer_settings(config: KafkaSourceConfig) -> dict[str, Any]:
    """librdkafka settings of a source: no auto-commit, group membership, broker version."""
    servers = config.bootstrap_servers
    settings: dict[str, Any] = {
        "bootstrap.servers": servers if isinstance(servers, str) else ",".join(servers),
        "group.id": config.group_id,
        "client.id": f"modelwatch-{config.name}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": config.start,
        "session.timeout.ms": config.session_timeout_ms,
        "socket.timeout.ms": config.request_timeout_ms,
        "logger": log,
    }
    version = parse_api_version(config.api_version)
    if version is not None and version < (0, 10):
        settings["api.version.request"] = False
        # librdkafka knows "0.9.0", not "0.9" (which it reads as "newer than 0.10").
        settings["broker.version.fallback"] = ".".join(map(str, (*version, 0, 0)[:3]))
    return settings


class ConfluentKafkaSource(PartitionProgress):
    """Consumes batches with confluent-kafka; seeks to database offsets on every assignment."""

    def _connect(self) -> Any:
        try:
            from confluent_kafka import Consumer
        except ImportError:
            raise ConfigError(
                f"source {self.name!r}: client 'confluent-kafka' is not installed; "
                "pip install 'modelwatch[confluent]'"
            ) from None
        consumer = Consumer(consumer_settings(self.config))
        consumer.subscribe([self.config.topic], on_assign=self._on_assign)
        return consumer

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        """Start each assigned partition at its stored offset (or per `start` when none)."""
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_END

        keys = {partition_key(tp.topic, tp.partition): tp for tp in partitions}
        stored = self.stored(list(keys))
        for key, tp in keys.items():
            offset = stored.get(key, 0)
            self.done[key] = offset
            if offset > 0:
                tp.offset = offset
            else:
                tp.offset = OFFSET_BEGINNING if self.config.start == "earliest" else OFFSET_END
        consumer.assign(partitions)
        # Which replica holds which partition is read from these lines (no Kafka admin API on 0.9).
        log.info(
            "%s: assigned partitions %s (stored offsets %s)",
            self.name,
            sorted(keys),
            sorted(stored.items()),
        )

    def _snapshot_targets(self) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        timeout = self.config.request_timeout_ms / 1000
        try:
            meta = self.consumer.list_topics(self.config.topic, timeout=timeout)
            parts = sorted(meta.topics[self.config.topic].partitions)
            ends = {
                partition_key(self.config.topic, p): self.consumer.get_watermark_offsets(
                    TopicPartition(self.config.topic, p), timeout=timeout
                )[1]
                for p in parts
            }
        except KafkaException as exc:
            raise ServiceError(
                f"source {self.name!r}: cannot reach Kafka at "
                f"{self.config.bootstrap_servers}: {exc.args[0].str()}"
            ) from None
        self.targets = {key: int(end) for key, end in ends.items()}

    def batches(self) -> Iterator[Batch]:
        if self.targets is None:
            self._snapshot_targets()
        timeout = self.config.poll_timeout_ms / 1000
        while True:
            messages = self.consumer.consume(self.batch_size, timeout=timeout)
            records: list[RawRecord] = []
            partitions: dict[str, Any] = {}
            for message in messages:
                if message.error() is not None:
                    self._report(message.error())
                    continue
                topic, partition, offset = message.topic(), message.partition(), message.offset()
                if topic is None or partition is None or offset is None:
                    continue  # not a record (librdkafka events carry no position)
                key = partition_key(topic, partition)
                records.append(RawRecord(key, offset, offset + 1, message.value() or b""))
                partitions[key] = message
            yield Batch(records, self._ends(partitions))

    def _ends(self, partitions: Mapping[str, Any]) -> dict[str, int]:
        """Each polled partition's high watermark as last fetched (no broker round trip)."""
        from confluent_kafka import TopicPartition

        ends = {}
        for key, message in partitions.items():
            tp = TopicPartition(message.topic(), message.partition())
            high = self.consumer.get_watermark_offsets(tp, cached=True)[1]
            if high >= 0:
                ends[key] = int(high)
        return ends

    def _report(self, error: Any) -> None:
        if error.fatal():
            raise ServiceError(f"source {self.name!r}: Kafka: {error.str()}")
        log.warning("%s: Kafka: %s", self.name, error.str())

    def close(self) -> None:
        self.consumer.close()
