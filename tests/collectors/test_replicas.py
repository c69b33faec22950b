"""Collector replicas: one consumer group on one PostgreSQL shares a topic's partitions.

Three `modelwatch collect` processes read a 4-partition topic while it is being written; one is
killed with SIGKILL mid-stream and a fourth joins. Every event must be counted exactly once (in
the source counters, the window counts and the stored offsets) and the dead replica's
partitions must have moved to the others.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.storage import DeadLetter, SourcePosition, make_engine
from tests.collectors.conftest import (
    aggregated,
    counters,
    kafka_source,
    payloads,
    write_config,
)
from tests.collectors.test_crash import kill9
from tests.conftest import REPO, run_cli
from tests.services.kafka import KafkaBroker
from tests.services.postgres import PostgresServer
from tests.waiting import wait_until

pytestmark = pytest.mark.slow
PER_ROUND = 4000
ASSIGNED = re.compile(r"assigned partitions \[([^\]]*)\]")


def start_replica(cfg: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MODELWATCH_DATABASE_URL", None)
    return subprocess.Popen(
        [sys.executable, "-m", "monitor", "collect", "--config", str(cfg), "-v"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab"),
    )


def assignments(log: Path) -> list[set[int]]:
    """Every partition assignment a replica logged, in order."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return [
        {int(p) for p in re.findall(r":(\d+)'", match.group(1))}
        for match in ASSIGNED.finditer(text)
    ]


def current(log: Path) -> set[int]:
    """The partitions a replica holds now (its last assignment)."""
    seen = assignments(log)
    return seen[-1] if seen else set()


def wait_for(what: str, check: Callable[[], bool], timeout: float = 120) -> None:
    wait_until(check, what, timeout, interval=0.2)


def events(engine: Engine) -> int:
    return counters(engine, "stream").events if _has_counter(engine) else 0


def _has_counter(engine: Engine) -> bool:
    from monitor.storage import IngestCounter

    with Session(engine) as session:
        return session.get(IngestCounter, "stream") is not None


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_replicas_share_partitions_and_survive_a_kill9(
    client: str, kafka: KafkaBroker, topic: str, postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.create_database()
    source = kafka_source(client, kafka, topic, f"replicas-{topic}")
    cfg = write_config(tmp_path / "mw.yaml", url, [source], batch_size=200)
    assert run_cli("db", "upgrade", "--config", str(cfg)).returncode == 0
    engine = make_engine(url)
    logs = [tmp_path / f"replica-{i}.log" for i in range(4)]
    procs = [start_replica(cfg, logs[i]) for i in range(3)]
    try:
        # All three joined: the 4 partitions are split over them (2/1/1).
        wait_for("three replicas to share the partitions", lambda: _split(logs[:3]))
        kafka.produce(topic, payloads(PER_ROUND))
        wait_for("the first round counted", lambda: events(engine) == PER_ROUND)
        victim = max(range(3), key=lambda i: len(current(logs[i])))
        lost = current(logs[victim])
        kafka.produce(topic, payloads(4 * PER_ROUND, start=PER_ROUND))
        wait_for("progress on the second round", lambda: events(engine) > PER_ROUND)
        kill9(procs[victim])
        assert events(engine) < 5 * PER_ROUND, "the kill came after everything was counted"
        procs.append(start_replica(cfg, logs[3]))
        kafka.produce(topic, payloads(PER_ROUND, start=5 * PER_ROUND))
        survivors = [i for i in range(4) if i != victim]
        # The broker notices the dead member only after its session times out, and the
        # replica started after the kill may join in that rebalance or in a later one.
        wait_for(
            "the survivors, the new replica among them, to hold all partitions",
            lambda: (
                bool(current(logs[3]))
                and set().union(*(current(logs[i]) for i in survivors)) == {0, 1, 2, 3}
            ),
        )
        wait_for("every event counted", lambda: events(engine) >= 6 * PER_ROUND)
        time.sleep(2)  # a double count would land after the total was first reached
        _assert_exactly_once(engine, topic, 6 * PER_ROUND)
        # The dead replica's partitions moved to replicas that were alive after the kill.
        assert lost and lost <= set().union(*(current(logs[i]) for i in survivors))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)
        engine.dispose()


def _split(logs: list[Path]) -> bool:
    held = [current(log) for log in logs]
    return all(held) and set().union(*held) == {0, 1, 2, 3}


def _assert_exactly_once(engine: Engine, topic: str, total: int) -> None:
    assert events(engine) == total
    assert aggregated(engine) == total
    with Session(engine) as session:
        assert session.execute(select(DeadLetter)).first() is None
        offsets = {
            p.key: p.offset
            for p in session.scalars(
                select(SourcePosition).where(SourcePosition.source == "stream")
            )
        }
    # payloads() are sent round-robin: each partition holds a quarter of the events
    assert offsets == {f"{topic}:{p}": total // 4 for p in range(4)}
