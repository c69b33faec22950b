"""kill -9 of `modelwatch collect` at random moments: no event lost, none counted twice."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from collectors._rooms import waiting_entries
from monitor.storage import (
    IngestCounter,
    OutcomeSummaryRow,
    make_engine,
)
from tests.collectors.conftest import T0, event, kafka_source, payloads, write_config
from tests.conftest import REPO, run_cli
from tests.services.kafka import KafkaBroker
from tests.waiting import wait_until

pytestmark = pytest.mark.slow
ROUNDS = 4
PER_ROUND = 5000


def start_collector(cfg: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MODELWATCH_DATABASE_URL", None)
    return subprocess.Popen(
        [sys.executable, "-m", "monitor", "collect", "--config", str(cfg)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab"),
    )


def children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        out |= {int(c) for c in task.read_text().split()}
    return out


def _is_worker(pid: int) -> bool:
    try:
        return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def kill9(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the collector; its ingest worker must not outlive it."""
    assert proc.poll() is None, "collector exited by itself before the kill"
    workers = children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    wait_until(
        lambda: not {w for w in workers if _is_worker(w)},
        f"ingest worker(s) {workers} to exit with the killed collector",
        timeout=15,
        interval=0.2,
    )


def events_so_far(db: Path, source: str) -> int:
    engine = make_engine(f"sqlite:///{db}")
    try:
        with Session(engine) as session:
            row = session.get(IngestCounter, source)
            return row.events if row else 0
    finally:
        engine.dispose()


def kill_after_progress(proc: subprocess.Popen[bytes], db: Path, source: str, delay: float) -> int:
    """Wait until the collector commits something new, then kill -9 it `delay` s later."""
    before = events_so_far(db, source)

    def progressed() -> bool:
        assert proc.poll() is None, "collector exited by itself"
        return events_so_far(db, source) != before

    wait_until(progressed, "the collector to commit", timeout=120, interval=0.01)
    time.sleep(delay)
    kill9(proc)
    return events_so_far(db, source)


def kill_delay(rng: random.Random, round_: int) -> float:
    """Even rounds die right after their first commit (mid-round even when ingest is fast);
    odd rounds at a random moment, which may fall after the round is done."""
    return 0.0 if round_ % 2 == 0 else rng.uniform(0.0, 0.6)


def finish_and_status(cfg: Path) -> dict[str, object]:
    done = run_cli("collect", "--config", str(cfg), "--until-caught-up", timeout=300)
    assert done.returncode == 0, done.stderr
    out = run_cli("status", "--config", str(cfg), "--json")
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout)["sources"][0])


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_kafka_kill9_neither_loses_nor_double_counts(
    client: str, kafka: KafkaBroker, topic: str, tmp_path: Path
) -> None:
    source = kafka_source(client, kafka, topic, f"crash-{topic}")
    cfg = write_config(
        tmp_path / "mw.yaml", f"sqlite:///{tmp_path}/mw.db", [source], batch_size=500
    )
    assert run_cli("db", "upgrade", "--config", str(cfg)).returncode == 0
    rng = random.Random(int(os.environ.get("MODELWATCH_CRASH_SEED", "7")))
    seen: list[int] = []
    for r in range(ROUNDS):
        kafka.produce(topic, payloads(PER_ROUND, start=r * PER_ROUND) + labels(r))
        proc = start_collector(cfg, tmp_path / "collector.log")
        seen.append(kill_after_progress(proc, tmp_path / "mw.db", "stream", kill_delay(rng, r)))
    # The kills landed mid-stream: some kill came before all produced events were counted.
    assert any(n < (i + 1) * PER_ROUND for i, n in enumerate(seen)), seen
    status = finish_and_status(cfg)
    assert (status["events"], status["dead_letters"], status["lag"]) == (ROUNDS * PER_ROUND, 0, 0)
    # Every prediction has its label: each pair reached the outcome summaries exactly once.
    assert joined_pairs(tmp_path / "mw.db") == (ROUNDS * PER_ROUND, 0, 0)


def labels(round_: int) -> list[bytes]:
    """A label for each prediction of the round (some join within a batch, some across)."""
    ids = range(round_ * PER_ROUND, (round_ + 1) * PER_ROUND)
    return [
        orjson.dumps({"request_id": f"r{i}", "model": "fraud", "label": i % 2, "timestamp": T0 + i})
        for i in ids
    ]


def joined_pairs(db: Path) -> tuple[int, int, int]:
    """(pairs in the overall outcome summaries, predictions waiting, labels waiting)."""
    engine = make_engine(f"sqlite:///{db}")
    try:
        with Session(engine) as session:
            overall = OutcomeSummaryRow.slice_key == ""
            pairs = session.scalar(select(func.sum(OutcomeSummaryRow.n)).where(overall))
            waiting = [len(waiting_entries(session, "fraud", r)) for r in ("prediction", "label")]
        return int(pairs or 0), int(waiting[0] or 0), int(waiting[1] or 0)
    finally:
        engine.dispose()


def test_rotating_logs_kill9_neither_loses_nor_double_counts(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    source = {
        "name": "logs",
        "type": "jsonl",
        "path": str(logs / "app.jsonl*"),
        "poll_interval": "50ms",
    }
    cfg = write_config(
        tmp_path / "mw.yaml", f"sqlite:///{tmp_path}/mw.db", [source], batch_size=500
    )
    assert run_cli("db", "upgrade", "--config", str(cfg)).returncode == 0
    rng = random.Random(int(os.environ.get("MODELWATCH_CRASH_SEED", "7")))
    seen: list[int] = []
    live = logs / "app.jsonl"
    for r in range(ROUNDS):
        proc = start_collector(cfg, tmp_path / "collector.log")
        base = r * PER_ROUND
        for part in range(2):  # write half, rotate by rename, write the other half
            with live.open("ab") as fh:
                for i in range(base + part * PER_ROUND // 2, base + (part + 1) * PER_ROUND // 2):
                    fh.write(orjson.dumps(event(i)) + b"\n")
            if part == 0:
                os.rename(live, logs / f"app.jsonl.{r}")
        seen.append(kill_after_progress(proc, tmp_path / "mw.db", "logs", kill_delay(rng, r)))
    assert any(n < (i + 1) * PER_ROUND for i, n in enumerate(seen)), seen
    status = finish_and_status(cfg)
    assert (status["events"], status["dead_letters"], status["lag"]) == (ROUNDS * PER_ROUND, 0, 0)
