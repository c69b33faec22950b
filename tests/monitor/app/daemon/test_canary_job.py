"""The canary job in process: pairs claimed once per interval across replicas, stored with
their history, signals and gauges from the stored verdict, rollback only to a rollback target,
and a pair that fails to evaluate isolated from the others (SQLite and PostgreSQL)."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

from prometheus_client import CollectorRegistry
from sqlalchemy.engine import Engine

from dashboards.metrics import ModelwatchMetrics
from guards.registry import activate, list_models, register_version
from monitor.app.daemon._canary_job import CanaryWatch, canary_signals
from monitor.app.daemon._scheduler import Scheduler
from monitor.canary import canary_history
from monitor.config import Config
from monitor.failures import list_failures
from monitor.storage import GateRun, transaction
from tests.monitor.canary.test_canary_slices import NOW, config, ingest


def _gated(engine: Engine, version: str, artifact: Path) -> None:
    sha = hashlib.sha256(artifact.read_bytes()).hexdigest()
    with transaction(engine) as s:
        s.add(GateRun(model="fraud", version=version, preset="fp16", verdict="pass",
                      criteria=[], verdict_json={}, providers={}, timing={},
                      reference_sha256=sha, candidate_sha256=sha, golden_sha256=sha))  # fmt: skip


def _replica(engine: Engine, cfg: Config, holder: str) -> Scheduler:
    """A replica's scheduler with the canary job, ticked by hand."""
    scheduler = Scheduler(engine, holder, cfg.scheduler.lease_s)
    spec = CanaryWatch(engine, cfg, holder).spec()
    assert spec is not None and spec.interval_s == 60
    scheduler.add(spec)
    return scheduler


def test_a_pair_with_a_longer_interval_runs_once_per_its_own(engine: Engine) -> None:
    cfg = config(str(engine.url))
    slow = cfg.canaries[1].model_copy(update={"interval": timedelta(minutes=5)})
    fast = cfg.canaries[0].model_copy(update={"interval": timedelta(minutes=1)})
    cfg = cfg.model_copy(update={"canaries": [fast, slow]})
    ingest(engine, cfg)
    one, two = CanaryWatch(engine, cfg, "replica-a"), CanaryWatch(engine, cfg, "replica-b")
    # the start of a 5-minute window, so that a minute later is still inside it whatever the
    # clock said when the suite imported NOW (a NOW at minute 4 mod 5 failed one run in five)
    now = NOW - timedelta(minutes=NOW.minute % 5)
    assert one(now=now) == 2  # the job's tick claim covers the fast pair (Scheduler.tick)
    assert two(now=now + timedelta(minutes=1)) == 1  # the slow pair ran in this 5m window
    assert len(canary_history(engine, "fraud", "3", "1", limit=9)) == 1
    assert one(now=now + timedelta(minutes=5)) == 2


def test_pairs_run_once_per_interval_and_roll_back_only_to_a_target(
    engine: Engine, tmp_path: Path
) -> None:
    cfg = config(str(engine.url), rollback=True, interval="1m")
    ingest(engine, cfg)
    artifact = tmp_path / "model.onnx"
    artifact.write_bytes(b"weights")
    register_version(engine, "fraud", "1", artifact, activate=True)
    register_version(engine, "fraud", "2", artifact)
    activate(engine, "fraud", "2")
    one, two = _replica(engine, cfg, "replica-a"), _replica(engine, cfg, "replica-b")
    assert one.tick("canary", NOW) and not two.tick("canary", NOW)  # the window is taken
    [run] = canary_history(engine, "fraud", "2", "1", limit=5)
    assert run.verdict == "fail" and run.failed == 1
    assert "not a rollback target: it was never gated" in run.report["action"]
    assert list_models(engine)[0].active == "2"  # version 1 was never gated

    _gated(engine, "1", artifact)
    later = NOW + timedelta(minutes=1)
    assert two.tick("canary", later)  # a new interval: whichever replica claims it
    newest = canary_history(engine, "fraud", "2", "1", limit=5)
    assert [r.verdict for r in newest] == ["fail", "fail"]
    assert newest[0].report["action"] == "rolled back fraud from 2 to 1"
    assert list_models(engine)[0].active == "1"
    assert canary_history(engine, "fraud", "3", "1")[0].report["action"].startswith("none")

    registry = CollectorRegistry()
    signals = canary_signals(engine, cfg, ModelwatchMetrics(registry, cfg.models), later)
    firing = {(s.labels["version"], s.labels["criterion"], s.labels["slice"])
              for s in signals if s.firing}  # fmt: skip
    assert firing == {("2", "verdict", "all"), ("2", "prediction", "region=eu")}
    assert all(s.kind == "canary" for s in signals)
    pair = {"model": "fraud", "version": "2", "stable": "1"}
    got = registry.get_sample_value
    assert got("modelwatch_canary_verdict", {**pair, "verdict": "fail"}) == 1.0
    assert got("modelwatch_canary_failed_criteria", {**pair, "slice": "region=eu"}) == 1.0
    good = {**pair, "version": "3", "slice": "all"}
    assert got("modelwatch_canary_failed_criteria", good) == 0.0


def test_a_pair_that_fails_to_evaluate_never_stops_the_others(engine: Engine) -> None:
    cfg = config(str(engine.url))
    ingest(engine, cfg)
    watch = CanaryWatch(engine, cfg, "replica-a")
    broken = cfg.canaries[0]

    def evaluate(pair, now, cache=None):  # type: ignore[no-untyped-def]
        if pair is broken:
            raise RuntimeError("summary payload unreadable")
        return CanaryWatch.evaluate(watch, pair, now, cache)

    watch.evaluate = evaluate  # type: ignore[method-assign]
    assert watch(now=NOW) == 1
    [failure] = list_failures(engine, "canary")
    assert failure.item == "canary fraud/2:1" and failure.version == "2"
    assert canary_history(engine, "fraud", "3", "1")[0].verdict == "pass"
    [signal] = [s for s in canary_signals(engine, cfg, None, NOW) if s.kind != "canary"]
    assert signal.kind == "evaluation_failed" and signal.firing
    assert signal.labels["item"] == "canary fraud/2:1" and signal.labels["job"] == "canary"
