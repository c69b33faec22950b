"""Ingest throughput: the full collector path vs a bare kafka-python consume-and-commit loop.

All read the same topic (4 partitions, N events with 20 features each, and a label for every
prediction 1,000 messages after it) from the same broker in the same run. The bare loops
(kafka-python, and confluent-kafka for reference) poll and commit offsets to Kafka after every
batch; the collector polls, decodes, validates, windows, profiles per (model, version, window,
slice), joins labels (when on) and commits aggregates + offsets in one database transaction.
Each round measures: the collector on both clients with the label join off and on (SQLite); on
PostgreSQL, confluent-kafka with the join off and on; and in-process (`Ingestor.ingest`, no
Kafka) the join's CPU cost per event on both databases. Medians over the rounds at the end.

    MODELWATCH_KAFKA_LIBS=... python bench/ingest.py [--events 100000] [--rounds 3]
        [--no-postgres] [--pipeline auto|true|false]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def join_cost(database_url: str, messages: list[bytes], join: bool) -> float:
    """CPU seconds of `Ingestor.ingest` over the messages in 5,000-record batches, in-process.

    The first batch (spec learning, first window rows) is left out. On PostgreSQL the server's
    own CPU is not in it.
    """
    from collectors import Ingestor, RawRecord
    from migrations import upgrade
    from monitor.config import CollectConfig, ModelConfig
    from monitor.storage import make_engine

    engine = make_engine(database_url)
    upgrade(engine)
    settings = CollectConfig(join_labels=join, pipeline=False)
    ing = Ingestor(
        engine, "bench", "kafka", [ModelConfig(name="fraud", slices=["region"])], settings
    )
    records = [RawRecord("p", i, i + 1, m) for i, m in enumerate(messages)]
    batches = [records[i : i + 5000] for i in range(0, len(records), 5000)]
    ing.ingest(batches[0])
    start = time.process_time()
    for batch in batches[1:]:
        ing.ingest(batch)
    elapsed = time.process_time() - start
    engine.dispose()
    return elapsed


def cpu_model() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    names = [line.split(":", 1)[1].strip() for line in out.splitlines() if "Model name" in line]
    return names[0] if names else platform.processor()


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def one_round(
    broker: KafkaBroker, messages: list[bytes], events: int, pg: Any, pipeline: str | bool
) -> dict[str, float]:
    """Rates (messages/s) of every loop of one round, and the in-process join's CPU µs/event."""
    m, out = len(messages), {}
    out["bare kafka-python"] = m / bare(broker, "bench", m)
    out["bare confluent-kafka"] = m / bare_confluent(broker, "bench", m)
    runs = [(db, c, j) for c in CLIENTS for db in ("sqlite",) for j in (False, True)]
    if pg is not None:
        runs += [("postgresql", "confluent-kafka", j) for j in (False, True)]
    for db, client, join in runs:
        with tempfile.TemporaryDirectory() as tmp:
            url = pg.create_database() if db == "postgresql" else f"sqlite:///{tmp}/bench.db"
            took = collector(broker, "bench", events, url, join, pipeline, client)
        out[f"{db} {client} join {'on' if join else 'off'}"] = m / took
    part = messages[: min(len(messages), 80_000)]
    per_event = len(part) / 2 / 1e6
    for db in ("sqlite", "postgresql") if pg is not None else ("sqlite",):
        with tempfile.TemporaryDirectory() as tmp:
            urls = [pg.create_database() if pg and db == "postgresql" else f"sqlite:///{tmp}/{j}.db"
                    for j in ("off", "on")]  # fmt: skip
            off, on = join_cost(urls[0], part, False), join_cost(urls[1], part, True)
        out[f"{db} in-process join us/event"] = (on - off) / per_event
    return out


CLIENTS = ("kafka-python", "confluent-kafka")


def report(rounds: list[dict[str, float]]) -> None:
    """Medians over rounds, and the ratios the targets are set on."""
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    for key, value in med.items():
        unit = "" if "us/event" in key else " msg/s"
        print(f"  median {key}: {value:,.1f}{unit}")
    for client in CLIENTS:
        on, off = med[f"sqlite {client} join on"], med[f"sqlite {client} join off"]
        print(f"  SQLite, {client}: join on = {on / off:.0%} of join off (target >= 80%)")
    if "postgresql confluent-kafka join off" in med:
        pg_off = med["postgresql confluent-kafka join off"]
        pg_on = med["postgresql confluent-kafka join on"]
        print(
            f"  PostgreSQL, confluent-kafka, join off = {pg_off / med['bare kafka-python']:.0%} "
            f"of bare kafka-python (target >= 70%); join on = {pg_on / pg_off:.0%} of join off"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument(
        "--pipeline",
        choices=["auto", "true", "false"],
        default="auto",
        help="collect.pipeline: auto (worker process only on kafka-python), true or false",
    )
    args = parser.parse_args()
    # Warm imports (a running daemon has them): the timings compare consuming, not importing.
    import kafka  # noqa: F401

    import collectors._monitor_profiles  # noqa: F401
    import collectors.runner  # noqa: F401

    broker = KafkaBroker(partitions=4)
    broker.start()
    pg = None
    try:
        broker.create_topic("bench", 4)
        messages = with_labels(make_events(args.events))
        broker.produce("bench", messages)
        print(
            f"machine: {os.cpu_count()} cores, {cpu_model()}; {args.events} events x "
            f"{FEATURES} features + a label each, 4 partitions, Kafka 0.9; load {load()}"
        )
        if not args.no_postgres:
            from tests.services.postgres import PostgresServer

            pg = PostgresServer()
            pg.start()
        pipeline: str | bool = {"true": True, "false": False}.get(args.pipeline, "auto")
        rounds = []
        for r in range(args.rounds):
            rates = one_round(broker, messages, args.events, pg, pipeline)
            print(f"round {r + 1} (load {load()}):")
            for key, value in rates.items():
                print(f"  {key}: {value:,.1f}")
            rounds.append(rates)
        print(f"medians of {len(rounds)} rounds (load {load()}):")
        report(rounds)
    finally:
        if pg is not None:
            pg.stop()
        broker.stop()


if __name__ == "__main__":
    main()
