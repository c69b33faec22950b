"""Scheduled golden replay: one `guard:<model>` job per `guards.schedule` entry.

Each run replays the model's golden set through the reference and each replayed version (the
active one, and with `versions: candidates` the registered versions newer than it) in a
spawned, lower-priority process (`guards.schedule.replay`), so the API's event loop and
ingest never wait for it. Each version is an item of the job: a golden set or model file that
is missing, unreadable or not its registered (configured) content fails that item alone, with a
`job_failures` row and an `evaluation_failed` signal naming the file; the other versions and
models go on. A run stops starting replays once its `time_budget` is spent, and a replay still
running then is killed.

A verdict is stored in `gate_runs` like any gate run (`run.trigger: schedule`), so the guard
gauges, the `guard` signals and `GET /v1/models/{model}/guard` show it; the registry's rules
apply (a pass of the active version makes it last-known-good; with `action: rollback` a failure
of the active version moves `active` to last-known-good through `rollback_target`). The
scheduler's claim on (job, window) keeps two replicas from running the same replay.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from alerts import Signal
from dashboards.metrics import ModelwatchMetrics
from guards.history import record_gate
from guards.registry import version_settings
from guards.schedule import (
    Divergence,
    ReplaySpec,
    Target,
    check_artifacts,
    check_golden,
    divergence,
    replay,
    targets,
)
from monitor.app.daemon._leases import claim, release
from monitor.app.daemon._scheduler import JobSpec
from monitor.app.daemon._service import replica_id
from monitor.app.daemon._supervisor import Component
from monitor.config import Config, GuardsConfig
from monitor.config.guards import GoldenSetConfig, GuardScheduleConfig
from monitor.failures import Backoff, Isolation, list_failures
from monitor.storage import GateRun, ModelVersion, session_factory

log = logging.getLogger(__name__)

JOB_PREFIX = "guard:"
# The item of a run's first step (which versions, their files): it fails for the whole model.
VERSIONS_ITEM = "versions"
# The key of the claim a replica holds while it replays a model (beside the window claims).
LOCK_KEY = "replaying"


def job_name(model: str) -> str:
    """The scheduled replay job of `model` (its `job_failures` and claims use this name)."""
    return f"{JOB_PREFIX}{model}"


def version_item(version: str) -> str:
    return f"replay {version}"


@dataclass(frozen=True)
class ReplayOutcome:
    """One version's replay: verdict, stored run, what the registry did, where it ran."""

    version: str
    verdict: str
    gate_run_id: int
    action: str
    providers: dict[str, list[str]]
    divergence: Divergence | None


class GuardReplays(Component):
    """The scheduled replay jobs; as a component, `stop` ends a replay in progress at once
    (its process is killed) so that shutdown never waits for one."""

    name = "guard-replays"

    def __init__(
        self,
        engine: Engine,
        config: Config,
        metrics: ModelwatchMetrics | None = None,
        holder: str | None = None,
    ) -> None:
        self.engine = engine
        self.holder = holder or replica_id()
        self.config = config
        self.metrics = metrics
        self.backoff = Backoff(config.scheduler.retry_initial_s, config.scheduler.retry_max_s)
        self._stopping = threading.Event()

    def jobs(self) -> list[JobSpec]:
        """One job per scheduled model, every `every`."""
        return [
            JobSpec(job_name(model), functools.partial(self.run, model), cfg.every.total_seconds())
            for model, cfg in self.config.guards.schedule.items()
        ]

    def start(self) -> None:
        self._stopping.clear()

    def stop(self, timeout: float) -> None:
        self._stopping.set()

    def running(self) -> bool:
        return True

    def run(self, model: str, _window: datetime | None = None) -> list[ReplayOutcome]:
        """Replay `model`'s versions once, unless another replica is replaying it now.

        The scheduler's claim makes one replica run each interval; a run may outlast its
        interval (`every` shorter than the replays), so a second claim, held for the run and
        released after it, keeps the next interval's run on another replica from overlapping.
        """
        lock = claim(self.engine, job_name(model), LOCK_KEY, self.holder,
                     self.config.scheduler.lease_s)  # fmt: skip
        if lock is None:
            log.info("guard %s: another replica is replaying it; this run skips", model)
            return []
        try:
            return self._run(model)
        finally:
            release(self.engine, lock, self.holder)

    def _run(self, model: str) -> list[ReplayOutcome]:
        """Replay `model`'s versions (each an isolated item) within the time budget."""
        cfg = self.config.guards.schedule[model]
        failed = self.metrics.record_job_failure if self.metrics is not None else None
        isolation = Isolation(self.engine, job_name(model), self.backoff, failed)
        isolation.begin()
        started = time.monotonic()
        deadline = started + cfg.time_budget.total_seconds()
        chosen = isolation.attempt(
            VERSIONS_ITEM,
            functools.partial(
                targets, self.engine, model, cfg.versions, cfg.reference_version, cfg.max_versions
            ),
            model,
        )
        done: list[ReplayOutcome] = []
        for target in chosen or ():
            left = deadline - time.monotonic()
            if left <= 0 or self._stopping.is_set():
                log.warning("guard %s: time budget spent; %s waits for the next run",
                            model, target.version)  # fmt: skip
                break
            one = functools.partial(self._replay, model, cfg, target, left)
            got = isolation.attempt(version_item(target.version), one, model, target.version)
            if got is not None:
                done.append(got)
        self._publish(model, time.monotonic() - started, done)
        return done

    def _replay(
        self, model: str, cfg: GuardScheduleConfig, target: Target, budget_s: float
    ) -> ReplayOutcome:
        golden = golden_entry(self.config, model, cfg)
        check_golden(golden)
        check_artifacts(model, target)
        layers = () if cfg.thresholds is None else (cfg.thresholds.model_dump(exclude_none=True),)
        spec = ReplaySpec(
            model=model,
            version=target.version,
            reference=target.reference,
            candidate=target.candidate,
            golden=golden,
            guards=_with_threads(self.config.guards, cfg.threads),
            preset=cfg.preset or golden.preset,
            overrides=layers,
            latency=cfg.latency,
        )
        verdict = replay(spec, budget_s, self._stopping.is_set)
        run = {
            **verdict.run,
            "settings": version_settings(self.engine, model, target.version),
            "reference_version": target.reference_version,
        }
        record = record_gate(
            self.engine,
            model,
            target.version,
            replace(verdict, run=run),
            (target.reference, target.candidate, Path(golden.path)),
            None,
            auto_rollback=cfg.action == "rollback",
        )
        providers = {k: list(v) for k, v in verdict.providers.items()}
        diverged = divergence(self.engine, record.gate_run_id)
        log.info("guard %s %s: %s on %s; %s", model, target.version, verdict.verdict,
                 providers, record.action)  # fmt: skip
        return ReplayOutcome(
            target.version, verdict.verdict, record.gate_run_id, record.action, providers, diverged
        )

    def _publish(self, model: str, seconds: float, done: list[ReplayOutcome]) -> None:
        if self.metrics is None:
            return
        used = {o.version: sorted({p for ps in o.providers.values() for p in ps}) for o in done}
        self.metrics.set_guard_replay(model, seconds, used)
        for o in done:
            self.metrics.set_guard_divergent(model, o.version, o.divergence is not None)


def _with_threads(guards: GuardsConfig, threads: int) -> GuardsConfig:
    return guards if threads == 0 else guards.model_copy(update={"intra_op_threads": threads})


def golden_entry(config: Config, model: str, cfg: GuardScheduleConfig) -> GoldenSetConfig:
    """The golden set a model's schedule names (validated to exist at config load)."""
    return config.guards.golden_sets[cfg.golden_set or model]


def divergence_signals(engine: Engine, model: str, now: datetime) -> list[Signal]:
    """A `guard_divergence` signal per version with gate runs: firing while its newest run did
    not pass on content that passed before."""
    newest = (
        select(GateRun.version, func.max(GateRun.id).label("id"))
        .where(GateRun.model == model)
        .group_by(GateRun.version)
    )
    with session_factory(engine)() as s:
        runs = s.execute(newest).all()
    return [
        Signal(
            "guard_divergence",
            {"model": model, "version": version},
            None,
            None,
            divergence(engine, run_id) is not None,
            now,
        )  # fmt: skip
        for version, run_id in runs
    ]


def replay_failed_signals(
    engine: Engine, config: Config, model: str, now: datetime
) -> list[Signal]:
    """An `evaluation_failed` signal per failing item of the model's replay job, labelled
    with the job and the file its error names (a golden set or registered model file)."""
    failures = list_failures(engine, job_name(model))
    if not failures:
        return []
    files = _known_files(engine, config, model)
    out = []
    for f in failures:
        named = next((p for p in files if f"{p}:" in f.error), "")
        labels = {"model": model, "version": f.version or "", "job": job_name(model),
                  "file": named}  # fmt: skip
        out.append(Signal("evaluation_failed", labels, float(f.failures), None, True, now))
    return out


def _known_files(engine: Engine, config: Config, model: str) -> list[str]:
    cfg = config.guards.schedule[model]
    files = [golden_entry(config, model, cfg).path]
    with session_factory(engine)() as s:
        files += [
            uri
            for uri in s.scalars(
                select(ModelVersion.artifact_uri).where(
                    ModelVersion.model.has(name=model), ModelVersion.artifact_uri.is_not(None)
                )
            )
            if uri
        ]
    return sorted(files, key=len, reverse=True)  # the longest match: /a/b.onnx before /a/b


def signal_producers(
    engine: Engine, config: Config
) -> Iterable[tuple[str, functools.partial[list[Signal]]]]:
    """(item name, producer) of the replay signals of each scheduled model, for the
    evaluation job's producers."""
    for model in config.guards.schedule:
        yield (f"signals guard_divergence {model}",
               functools.partial(divergence_signals, engine, model))  # fmt: skip
        yield (f"signals guard_replay_failed {model}",
               functools.partial(replay_failed_signals, engine, config, model))  # fmt: skip
