"""Scheduled golden replay in a running daemon, with real ONNX builds and a real webhook receiver.

`fraud` replays its active version every 2 seconds against the fp32 reference (version 1) with
`action: rollback`: the good int8 build passes and becomes last-known-good; a bad int8 build
swapped in as active fails the next replay, which fires a `guard` alert naming the criterion and
slice and rolls back to the good build. `broken` names a golden set that does not exist: its
job fails with a `job_failures` item and an `evaluation_failed` alert naming the file, and the
other jobs go on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from guards.registry import activate, list_models, register_version
from migrations import upgrade
from monitor.app.daemon._guard_job import LOCK_KEY, GuardReplays
from monitor.app.daemon._leases import claim, release
from monitor.config import parse_config
from monitor.storage import GateRun, JobFailure, JobRun, RollbackEvent, make_engine, transaction
from tests.alerts.receiver import RecordingReceiver
from tests.monitor.app.daemon.conftest import ServerProcess, auth
from tests.waiting import wait_until

CONFIG = """\
database_url: {url}
models:
  - name: fraud
  - name: broken
api:
  tokens:
    - {{name: dash, scopes: [read], token_env: MW_T_READ}}
scheduler:
  evaluate_interval_s: 1
  retry_initial_s: 1
  retry_max_s: 2
guards:
  latency_batch_sizes: []
  golden_sets:
    fraud:
      path: {golden}
      preset: int8
      label_column: label
      id_column: id
      slice_by: [segment, region]
      features: [f0, f1, f2, f3, f4, f5, f6, f7]
    missing:
      path: {missing}
  schedule:
    fraud: {{reference_version: "1", every: 2s, action: rollback, time_budget: 60s}}
    broken: {{golden_set: missing, reference_version: "1", every: 2s}}
alerts:
  receivers:
    - {{name: hook, type: webhook, url: "{hook}"}}
  grouping: {{group_by: [alertname, model, version], group_wait: 0s, group_interval: 1s}}
  delivery: {{poll_interval: 0.2s, backoff_initial: 0.2s}}
  rules:
    - {{name: GuardFailed, kind: guard, receivers: [hook]}}
    - {{name: ReplayBroken, kind: evaluation_failed, receivers: [hook]}}
"""


@dataclass(frozen=True)
class Daemon:
    server: ServerProcess
    engine: Engine
    receiver: RecordingReceiver
    models: dict[str, Path]
    missing: Path


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    from monitor.app.demo import _models as builders

    directory = tmp_path_factory.mktemp("guard_schedule")
    models = builders.fraud_suite(directory)
    golden = directory / "golden.parquet"
    builders.fraud_golden(reference=models["reference"]).to_parquet(golden)
    url = f"sqlite:///{directory / 'mw.db'}"
    engine = make_engine(url)
    upgrade(engine)
    for model in ("fraud", "broken"):
        register_version(engine, model, "1", models["reference"])
        register_version(engine, model, "2", models["int8_good"], activate=True)
    receiver = RecordingReceiver()
    receiver.start()
    missing = directory / "nowhere" / "golden.parquet"
    config = directory / "mw.yaml"
    config.write_text(CONFIG.format(url=url, golden=golden, missing=missing, hook=receiver.url))
    server = ServerProcess(config, log=directory / "serve.log")
    try:
        server.wait_ready()
        yield Daemon(server, engine, receiver, models, missing)
    finally:
        server.terminate()
        receiver.stop()
        engine.dispose()


def aliases(engine: Engine, model: str) -> tuple[str | None, str | None]:
    info = next(m for m in list_models(engine) if m.name == model)
    return info.active, info.last_known_good


def alerts(receiver: RecordingReceiver, alertname: str) -> list[dict[str, Any]]:
    return [a for r in receiver.delivered() for a in r.json()["alerts"]
            if a["labels"].get("alertname") == alertname]  # fmt: skip


def test_a_swapped_bad_build_is_caught_and_rolled_back(daemon: Daemon) -> None:
    engine = daemon.engine
    wait_until(lambda: aliases(engine, "fraud")[1] == "2", "the good build known good", 60)

    register_version(engine, "fraud", "3", daemon.models["int8_bad"])
    activate(engine, "fraud", "3")  # the bad build swapped in
    wait_until(lambda: aliases(engine, "fraud")[0] == "2", "rollback to version 2", 60)

    with transaction(engine) as s:
        event = s.scalars(select(RollbackEvent).where(RollbackEvent.model == "fraud")).all()[-1]
        failed = s.get(GateRun, event.gate_run_id)
        assert failed is not None
        assert (event.from_version, event.to_version) == ("3", "2")
        assert (failed.version, failed.verdict) == ("3", "fail")
        assert failed.verdict_json["run"]["trigger"] == "schedule"

    def fired() -> list[dict[str, Any]]:
        return [a for a in alerts(daemon.receiver, "GuardFailed")
                if a["labels"]["version"] == "3" and a["status"] == "firing"]  # fmt: skip

    wait_until(fired, "a firing guard alert for version 3", 30)
    labels = fired()[0]["labels"]
    assert labels["kind"] == "guard" and labels["verdict"] == "fail"
    assert labels["criterion"].startswith(("flip_rate", "metric_drop"))

    history = httpx.get(f"{daemon.server.url}/v1/models/fraud/guard", headers=auth("MW_T_READ"),
                        params={"since": "2000-01-01T00:00:00Z"}).json()  # fmt: skip
    runs = {r["gate_run_id"]: r for r in history["runs"]}
    shown = runs[failed.id]
    assert shown["trigger"] == "schedule" and shown["verdict"] == "fail"
    assert shown["rollback"] == {"event_id": event.id, "from_version": "3", "to_version": "2"}
    assert shown["providers"]["candidate"] == ["CPUExecutionProvider"]
    assert shown["onnxruntime"] and shown["reference_version"] == "1" and shown["failing"]
    assert any(r["version"] == "2" and r["verdict"] == "pass" for r in history["runs"])

    metrics = httpx.get(f"{daemon.server.url}/metrics").text
    assert 'modelwatch_guard_replay_provider{model="fraud",' in metrics
    assert "modelwatch_guard_replay_seconds" in metrics


def test_a_missing_golden_set_fails_its_job_alone(daemon: Daemon) -> None:
    engine = daemon.engine

    def failure() -> JobFailure | None:
        with transaction(engine) as s:
            return s.scalars(select(JobFailure).where(JobFailure.job == "guard:broken")).first()

    wait_until(failure, "the broken replay's job failure", 60)
    row = failure()
    assert row is not None and (row.item, row.version) == ("replay 2", "2")
    assert f"{daemon.missing}: golden set not found" in row.error

    def broken() -> list[dict[str, Any]]:
        return [a for a in alerts(daemon.receiver, "ReplayBroken")
                if a["labels"].get("model") == "broken"]  # fmt: skip

    wait_until(broken, "an evaluation_failed alert for the broken replay", 30)
    labels = broken()[0]["labels"]
    assert labels["file"] == str(daemon.missing) and labels["job"] == "guard:broken"

    # The other model's replays and the evaluation job go on (a replay runs at idle CPU
    # priority: on a loaded machine it may finish after the broken one's alert).
    def replayed() -> GateRun | None:
        with transaction(engine) as s:
            return s.scalars(select(GateRun).where(GateRun.model == "fraud")).first()

    wait_until(replayed, "the other model's replay", 60)
    with transaction(engine) as s:
        assert s.scalars(select(GateRun).where(GateRun.model == "broken")).first() is None
        done = select(JobRun).where(JobRun.job == "evaluate", JobRun.status == "done")
        assert len(s.scalars(done).all()) >= 2


def test_a_model_another_replica_is_replaying_is_skipped(sqlite_engine: Engine) -> None:
    config = parse_config({
        "models": [{"name": "fraud"}],
        "guards": {"golden_sets": {"fraud": {"path": "golden.parquet"}},
                   "schedule": {"fraud": {"every": "2s"}}},
    })  # fmt: skip
    other = claim(sqlite_engine, "guard:fraud", LOCK_KEY, "other-replica", 300)
    assert other is not None
    replays = GuardReplays(sqlite_engine, config, holder="this-replica")
    assert replays.run("fraud") == []

    def state() -> tuple[list[str], int]:
        with transaction(sqlite_engine) as s:
            items = [f.item for f in s.scalars(select(JobFailure))]
            return items, len(s.scalars(select(JobRun)).all())

    assert state() == ([], 1)  # nothing tried: no failure (the model is not even registered)
    release(sqlite_engine, other, "other-replica")
    assert replays.run("fraud") == []
    assert state() == (["versions"], 0)  # tried (no such model), and its claim given back
