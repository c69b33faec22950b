"""The `canary` job: each declared canary pair judged on its own schedule, overall and per slice.

The job ticks at the shortest pair interval, each tick claimed once across replicas (job
`canary`); a pair with a longer interval is due once per its own interval window and claimed per
(pair, window) in `job_runs` (job `canary pair`). So two replicas never evaluate the same pair at
once, and a replica that died mid-evaluation is taken over after the lease. A tick reads only
mergeable summaries, each version's once (pairs share their stable version's evidence). A pair
that fails to evaluate is a `job_failures` item of job `canary` (model, version: the canary) and
never stops the other pairs; its `evaluation_failed` signal names the pair. With `rollback:
true` a failed verdict of an active canary moves `active` back to the stable version through
`guards.registry.rollback_canary`, which refuses any version that is not a rollback target
(registered, artifact hash verified, passing gate verdict).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import datetime

from sqlalchemy.engine import Engine

from alerts import Signal
from dashboards.metrics import ModelwatchMetrics
from guards.registry import rollback_canary
from monitor.app.daemon._leases import Claim, finish
from monitor.app.daemon._paced import claim_due
from monitor.app.daemon._scheduler import JobSpec
from monitor.canary import (
    CanaryJudgement,
    Evidence,
    canary_history,
    evaluate_pair,
    load_sliced_evidence,
    store_judgement,
)
from monitor.config import CanaryPairConfig, Config
from monitor.errors import ConflictError, NotFoundError
from monitor.failures import Backoff, Isolation, list_failures, redact
from monitor.storage import utcnow
from monitor.summaries import window_of

log = logging.getLogger(__name__)

CANARY_JOB = "canary"
# The per-pair claims (job_runs rows), apart from the job's own per-tick claims.
PAIR_CLAIMS = "canary pair"


def pair_item(pair: CanaryPairConfig) -> str:
    """The `job_failures` item of a pair."""
    return f"canary {pair.key}"


class CanaryWatch:
    """The job's body: evaluate every due pair, store it, act on it."""

    def __init__(self, engine: Engine, config: Config, holder: str,
                 on_failure: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.engine = engine
        self.config = config
        self.holder = holder
        self.models = {m.name: m for m in config.models}
        sched = config.scheduler
        backoff = Backoff(sched.retry_initial_s, sched.retry_max_s)
        self.isolation = Isolation(engine, CANARY_JOB, backoff, on_failure)
        pairs = config.canaries
        self.tick_s = min((p.interval.total_seconds() for p in pairs), default=0.0)

    def spec(self) -> JobSpec | None:
        """The job, ticking at the shortest pair interval; None without pairs."""
        if not self.config.canaries:
            return None
        return JobSpec(CANARY_JOB, self, self.tick_s)

    def __call__(self, _window: datetime | None = None, now: datetime | None = None) -> int:
        """Evaluate the due pairs this replica claims; how many were evaluated."""
        now = now or utcnow()
        self.isolation.begin(now)
        cache: dict[tuple[str, str, datetime], dict[str, Evidence]] = {}
        done = 0
        for pair in self.config.canaries:
            due, run = self._claim(pair, now)
            if not due:
                continue
            work = functools.partial(self.evaluate, pair, now, cache)
            got = self.isolation.attempt(pair_item(pair), work, pair.model, pair.canary)
            if run is not None:
                finish(self.engine, run, None if got is not None else "failed; see job_failures")
            done += got is not None
        return done

    def _claim(self, pair: CanaryPairConfig, now: datetime) -> tuple[bool, Claim | None]:
        """Whether this replica evaluates the pair now, and its claim of the pair's interval
        window (None when the job's own claim of this tick covers it: the same interval)."""
        interval = pair.interval.total_seconds()
        if interval == self.tick_s:
            return True, None
        run = claim_due(self.engine, PAIR_CLAIMS, pair.key, interval, self.holder,
                        self.config.scheduler.lease_s, now)  # fmt: skip
        return run is not None, run

    def evaluate(
        self,
        pair: CanaryPairConfig,
        now: datetime,
        cache: dict[tuple[str, str, datetime], dict[str, Evidence]] | None = None,
    ) -> CanaryJudgement:
        """Judge one pair over [now - since, now), store it and carry out its action."""
        cfg = self.models[pair.model]
        since = window_of(now - pair.since, self.config.collect.window.total_seconds())
        cache = {} if cache is None else cache

        def evidence(version: str) -> dict[str, Evidence]:
            key = (pair.model, version, since)
            if key not in cache:
                cache[key] = load_sliced_evidence(self.engine, cfg, version, since, now)
            return cache[key]

        judgement = evaluate_pair(self.engine, pair, cfg, since, now, evidence)
        action = self._act(pair, judgement) if pair.rollback else None
        store_judgement(self.engine, judgement, action)
        return judgement

    def _act(self, pair: CanaryPairConfig, judgement: CanaryJudgement) -> str:
        if judgement.verdict != "fail":
            return f"none: the verdict is {judgement.verdict}"
        try:
            outcome = rollback_canary(self.engine, pair.model, pair.canary, pair.stable)
        except (ConflictError, NotFoundError) as exc:  # not a rollback target: said, not done
            log.warning("canary %s failed; no rollback: %s", pair.key, redact(exc))
            return f"none: {exc}"
        if outcome is None:
            return f"none: version {pair.canary} is not the active one"
        if outcome.rollback is None:
            return f"none: {outcome.active} is already active"
        log.warning("canary %s failed: rolled back to %s", pair.key, outcome.active)
        return f"rolled back {pair.model} from {pair.canary} to {outcome.active}"


def canary_signals(
    engine: Engine,
    config: Config,
    metrics: ModelwatchMetrics | None,
    now: datetime,
) -> list[Signal]:
    """The newest stored verdict of each declared pair as `canary` signals (one per judged
    criterion and slice, and one `verdict`), and the pairs failing to evaluate as
    `evaluation_failed`; sets the canary gauges."""
    out: list[Signal] = []
    for pair in config.canaries:
        runs = canary_history(engine, pair.model, pair.canary, pair.stable, limit=1)
        if runs:
            out += _pair_signals(pair, runs[0].report, now)
            if metrics is not None:
                _publish(metrics, pair, runs[0].report)
    out += failed_signals(engine, CANARY_JOB, now)
    return out


def _pair_signals(pair: CanaryPairConfig, report: dict[str, object], now: datetime
                  ) -> list[Signal]:  # fmt: skip
    base = {"model": pair.model, "version": pair.canary, "stable": pair.stable}
    verdict = str(report.get("verdict"))
    failed = float(report.get("failed", 0))  # type: ignore[arg-type]
    out = [Signal("canary", {**base, "criterion": "verdict", "slice": "all"}, failed, None,
                  verdict == "fail", now)]  # fmt: skip
    for part in report.get("slices", []):  # type: ignore[attr-defined]
        for c in part["criteria"]:
            if c["status"] == "insufficient_data":
                continue
            labels = {**base, "criterion": c["name"], "slice": part["slice"]}
            out.append(Signal("canary", labels, c["canary"], c["threshold"],
                              c["status"] == "fail", now))  # fmt: skip
    return out


def _publish(metrics: ModelwatchMetrics, pair: CanaryPairConfig, report: dict[str, object]
             ) -> None:  # fmt: skip
    failed = {
        part["slice_key"]: sum(c["status"] == "fail" for c in part["criteria"])
        for part in report.get("slices", [])  # type: ignore[attr-defined]
    }
    metrics.set_canary(pair.model, pair.canary, pair.stable, str(report.get("verdict")), failed)


def failed_signals(engine: Engine, job: str, now: datetime) -> list[Signal]:
    """An `evaluation_failed` signal per failing item of `job`, naming it (`item`)."""
    return [
        Signal(
            "evaluation_failed",
            {"model": f.model or "", "version": f.version or "", "job": job, "item": f.item},
            float(f.failures),
            None,
            True,
            now,
        )  # fmt: skip
        for f in list_failures(engine, job)
    ]
