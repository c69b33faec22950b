"""Ingest throughput: the full collector path vs a bare kafka-python consume-and-commit loop.

Both read the same topic (4 partitions, N events with 20 features each) from the same broker in
the same run. The bare loops (kafka-python, and confluent-kafka for reference) poll and commit
offsets to Kafka after every batch; the collector, on either Kafka client, polls, decodes,
validates, windows, profiles per (model, version, window, slice) and commits aggregates +
offsets in one database transaction. Usage:

    MODELWATCH_KAFKA_LIBS=... python bench/ingest.py [--events 100000] [--db sqlite|postgresql]
        [--pipeline auto|true|false] [--rounds 2] [--no-labels]

With labels (the default) the topic also holds a label for every prediction, 1,000 messages
after it, so the label join has every pair to make; bare loops and the collector with the join
off read the same messages (labels included), so "join on vs off" compares the same input.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.services.kafka import API_VERSION, KafkaBroker  # noqa: E402

FEATURES = 20


def make_events(n: int, seed: int = 1) -> list[bytes]:
    """n events: 16 numeric and 4 categorical features, a score, a region attribute."""
    rng = random.Random(seed)
    t0 = 1_767_225_600
    out = []
    for i in range(n):
        features: dict[str, object] = {f"num{j}": round(rng.gauss(j, 1 + j), 4) for j in range(16)}
        features.update({f"cat{j}": rng.choice(["a", "b", "c", "d", "e"]) for j in range(4)})
        out.append(
            orjson.dumps(
                {
                    "request_id": f"req-{i}",
                    "model": "fraud",
                    "model_version": "3",
                    "timestamp": t0 + i * 0.05,
                    "features": features,
                    "prediction": round(rng.random(), 4),
                    "metadata": {"region": rng.choice(["eu", "us", "apac"])},
                }
            )
        )
    return out


def with_labels(events: list[bytes], lag: int = 1000, seed: int = 2) -> list[bytes]:
    """The events with a label for every prediction, each `lag` messages after its prediction."""
    rng = random.Random(seed)
    labels = []
    for raw in events:
        event = orjson.loads(raw)
        label = {"request_id": event["request_id"], "model": event["model"]}
        label.update({"label": int(rng.random() < 0.3), "timestamp": event["timestamp"] + 30})
        labels.append(orjson.dumps(label))
    out: list[bytes] = []
    for i, raw in enumerate(events):
        out.append(raw)
        if i >= lag:
            out.append(labels[i - lag])
    return out + labels[len(events) - lag :]


def bare(broker: KafkaBroker, topic: str, n: int) -> float:
    """Seconds for a kafka-python consumer to read and commit all n messages."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        api_version=API_VERSION,
        group_id=f"bare-{time.time()}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=5000,
    )
    consumer.subscribe([topic])
    start, seen = time.perf_counter(), 0
    while seen < n:
        polled = consumer.poll(timeout_ms=500, max_records=5000)
        seen += sum(len(msgs) for msgs in polled.values())
        if polled:
            consumer.commit()
    elapsed = time.perf_counter() - start
    consumer.close(autocommit=False)
    return elapsed


def bare_confluent(broker: KafkaBroker, topic: str, n: int) -> float:
    """Seconds for a confluent-kafka consumer to read and commit all n messages."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"bare-ck-{time.time()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
            "api.version.request": False,
            "broker.version.fallback": "0.9.0",
        }
    )
    consumer.subscribe([topic])
    start, seen = time.perf_counter(), 0
    while seen < n:
        messages = consumer.consume(5000, timeout=0.5)
        seen += sum(1 for m in messages if m.error() is None)
        if messages:
            consumer.commit(asynchronous=False)
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def collector(
    broker: KafkaBroker,
    topic: str,
    n: int,
    database_url: str,
    join: bool,
    pipeline: str | bool = "auto",
    client: str = "kafka-python",
) -> float:
    """Seconds for the collector to ingest all n events (until caught up)."""
    from collectors.runner import run
    from collectors.status import collect_status
    from migrations import upgrade
    from monitor.config import parse_config
    from monitor.storage import make_engine

    config = parse_config(
        {
            "database_url": database_url,
            "models": [{"name": "fraud", "slices": ["region"]}],
            "sources": [
                {
                    "name": "bench",
                    "type": "kafka",
                    "bootstrap_servers": broker.bootstrap,
                    "topic": topic,
                    "group_id": f"mw-{time.time()}",
                    "api_version": "0.9",
                    "client": client,
                }
            ],
            "collect": {"batch_size": 5000, "join_labels": join, "pipeline": pipeline},
        },
        env={},
    )
    engine = make_engine(database_url)
    upgrade(engine)
    start = time.perf_counter()
    run(engine, config, until_caught_up=True)
    elapsed = time.perf_counter() - start
    events = collect_status(engine).sources[0].events
    assert events == n, f"collector aggregated {events} of {n} events"
    engine.dispose()
    return elapsed


def cpu_model() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    names = [line.split(":", 1)[1].strip() for line in out.splitlines() if "Model name" in line]
    return names[0] if names else platform.processor()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-labels", action="store_true", help="predictions only")
    parser.add_argument(
        "--pipeline",
        choices=["auto", "true", "false"],
        default="auto",
        help="collect.pipeline: auto (worker process only on kafka-python), true or false",
    )
    args = parser.parse_args()
    # Warm imports (a running daemon has them): the timings compare consuming, not importing.
    import kafka  # noqa: F401

    import collectors.monitor_profiles  # noqa: F401
    import collectors.runner  # noqa: F401

    broker = KafkaBroker(partitions=4)
    broker.start()
    pg = None
    try:
        broker.create_topic("bench", 4)
        events = make_events(args.events)
        messages = events if args.no_labels else with_labels(events)
        broker.produce("bench", messages)
        print(
            f"machine: {os.cpu_count()} cores, {cpu_model()}; {args.events} events x "
            f"{FEATURES} features, 4 partitions, Kafka 0.9, database {args.db}"
        )
        if args.db == "postgresql":
            from tests.services.postgres import PostgresServer

            pg = PostgresServer()
            pg.start()
        pipeline: str | bool = {"true": True, "false": False}.get(args.pipeline, "auto")
        for r in range(args.rounds):
            m = len(messages)
            b = bare(broker, "bench", m)
            bc = bare_confluent(broker, "bench", m)
            print(
                f"round {r + 1}: {m} messages; bare kafka-python {m / b:,.0f} msg/s; "
                f"bare confluent-kafka {m / bc:,.0f} msg/s"
            )
            off: dict[str, float] = {}
            for client in ("kafka-python", "confluent-kafka"):
                for join in (False, True):
                    with tempfile.TemporaryDirectory() as tmp:
                        url = pg.create_database() if pg else f"sqlite:///{tmp}/bench.db"
                        c = collector(broker, "bench", args.events, url, join, pipeline, client)
                    if not join:
                        off[client] = c
                    vs_off = f", {off[client] / c:.0%} of join off" if join else ""
                    print(
                        f"  collector on {client} (label join {'on' if join else 'off'}): "
                        f"{m / c:,.0f} msg/s = {b / c:.0%} of bare kafka-python, "
                        f"{bc / c:.0%} of bare confluent-kafka{vs_off}"
                    )
    finally:
        if pg is not None:
            pg.stop()
        broker.stop()


if __name__ == "__main__":
    main()
