"""The Kafka source: a consumer group member whose offsets live in modelwatch's database.

Offsets are never committed to Kafka: the database holds them, written in the same transaction
as the aggregates. On start and on every rebalance the consumer seeks each assigned partition to
its stored offset (or to the beginning/end, per `start`, when there is none). Works with brokers
from 0.9 on: no record headers, no record timestamps, no transactions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from collectors._base import Batch, RawRecord
from monitor.config import KafkaSourceConfig
from monitor.errors import ConfigError, ServiceError

log = logging.getLogger(__name__)


def parse_api_version(value: str) -> tuple[int, ...] | None:
    """ "auto" → None (probe the broker); "0.9" → (0, 9); "2.8.1" → (2, 8, 1)."""
    if value == "auto":
        return None
    try:
        return tuple(int(p) for p in value.split("."))
    except ValueError:
        raise ConfigError(f"api_version: {value!r} is not 'auto' or a version like 0.9") from None


def partition_key(topic: str, partition: int) -> str:
    """The position key of a partition."""
    return f"{topic}:{partition}"


class PartitionProgress:
    """A Kafka source's settings, and how far each partition is committed against the end
    offset it had when the source started (what `--until-caught-up` waits for)."""

    type = "kafka"

    def __init__(
        self,
        config: KafkaSourceConfig,
        stored: Callable[[list[str]], Mapping[str, int]],
        batch_size: int = 5000,
    ) -> None:
        self.name = config.name
        self.config = config
        self.stored = stored
        self.batch_size = batch_size
        self.targets: dict[str, int] | None = None  # end offsets at start; None until read
        self.done: dict[str, int] = {}
        self.consumer = self._connect()

    def _connect(self) -> Any:
        """The client's consumer, subscribed to the topic (each client implements it)."""
        raise NotImplementedError

    def committed(self, positions: Mapping[str, int]) -> None:
        self.done.update(positions)

    def caught_up(self) -> bool:
        """Every partition reached the end offset it had when the source started."""
        if self.targets is None:
            return False
        return all(
            target == 0 or self.done.get(key, 0) >= target for key, target in self.targets.items()
        )


class KafkaSource(PartitionProgress):
    """Polls batches from a topic with kafka-python; seeks to database offsets on every
    assignment."""

    def _connect(self) -> Any:
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError

        config = self.config
        kwargs: dict[str, Any] = {
            "bootstrap_servers": config.bootstrap_servers,
            "group_id": config.group_id,
            "enable_auto_commit": False,
            "auto_offset_reset": config.start,
            "max_poll_records": self.batch_size,
            "request_timeout_ms": config.request_timeout_ms,
            "session_timeout_ms": config.session_timeout_ms,
            "heartbeat_interval_ms": max(config.session_timeout_ms // 3, 300),
            "client_id": f"modelwatch-{config.name}",
        }
        version = parse_api_version(config.api_version)
        if version is not None:
            kwargs["api_version"] = version
        try:
            consumer = KafkaConsumer(**kwargs)
            consumer.subscribe([config.topic], listener=_seeker(self))
        except KafkaError as exc:
            raise ServiceError(
                f"source {config.name!r}: cannot reach Kafka at {config.bootstrap_servers}: {exc}"
            ) from None
        return consumer

    def seek_to_stored(self, partitions: list[Any]) -> None:
        """Move each partition to its stored offset (or let auto_offset_reset decide)."""
        keys = {partition_key(tp.topic, tp.partition): tp for tp in partitions}
        stored = self.stored(list(keys))
        for key, tp in keys.items():
            offset = stored.get(key, 0)
            self.done[key] = offset
            if offset > 0:
                self.consumer.seek(tp, offset)
            elif self.config.start == "earliest":
                self.consumer.seek_to_beginning(tp)
            else:
                self.consumer.seek_to_end(tp)
        # Which replica holds which partition is read from these lines (no Kafka admin API on 0.9).
        log.info(
            "%s: assigned partitions %s (stored offsets %s)",
            self.name,
            sorted(keys),
            sorted(stored.items()),
        )

    def _snapshot_targets(self) -> None:
        from kafka import TopicPartition

        parts = self.consumer.partitions_for_topic(self.config.topic) or set()
        tps = [TopicPartition(self.config.topic, p) for p in sorted(parts)]
        ends = self.consumer.end_offsets(tps) if tps else {}
        self.targets = {partition_key(tp.topic, tp.partition): int(o) for tp, o in ends.items()}

    def batches(self) -> Iterator[Batch]:
        if self.targets is None:
            self._snapshot_targets()
        while True:
            polled = self.consumer.poll(
                timeout_ms=self.config.poll_timeout_ms, max_records=self.batch_size
            )
            records: list[RawRecord] = []
            ends: dict[str, int] = {}
            for tp, messages in polled.items():
                key = partition_key(tp.topic, tp.partition)
                records.extend(
                    RawRecord(key, m.offset, m.offset + 1, m.value or b"") for m in messages
                )
                high = self.consumer.highwater(tp)
                if high is not None:
                    ends[key] = int(high)
            yield Batch(records, ends)

    def close(self) -> None:
        self.consumer.close(autocommit=False)


def _seeker(source: KafkaSource) -> Any:
    """A rebalance listener that seeks to database offsets whenever partitions are assigned."""
    from kafka import ConsumerRebalanceListener

    class Seeker(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: list[Any]) -> None:
            # Batches are committed before the next poll, so nothing is pending here.
            log.info("%s: partitions revoked: %s", source.name, revoked)

        def on_partitions_assigned(self, assigned: list[Any]) -> None:
            source.seek_to_stored(list(assigned))

    return Seeker()
