"""The composition root of `modelwatch serve`: collectors, evaluation, alerts and delivery."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from sqlalchemy.engine import Engine

from alerts import SIGNAL_KINDS, DeliveryWorker, Evaluator, Signal, deadline_client
from collectors.runner import RunState, run
from dashboards.metrics import ModelwatchMetrics
from guards.registry import rollback
from monitor.app.daemon._canary_job import CanaryWatch as CanaryWatch  # the demo runs it
from monitor.app.daemon._canary_job import canary_signals
from monitor.app.daemon._due import due_models
from monitor.app.daemon._evaluation import (
    Units,
    isolation,
    observed,
    settled_intake,
    window_evaluator,
)
from monitor.app.daemon._guard_job import GuardReplays
from monitor.app.daemon._guard_job import signal_producers as guard_replay_producers
from monitor.app.daemon._health_signals import (
    DeadLetterRate,
    evaluation_failed_signals,
    ingest_lag_signals,
    no_data_signals,
)
from monitor.app.daemon._refresh import ResultRefresh
from monitor.app.daemon._scheduler import JobSpec
from monitor.app.daemon._scrape_job import scrape_jobs
from monitor.app.daemon._segment_job import SegmentWatch, segment_signals
from monitor.app.daemon._service import Service
from monitor.app.daemon._service import replica_id as replica_id  # the demo names itself
from monitor.app.daemon._shadow_signals import ShadowSignals
from monitor.app.daemon._skew_job import SkewWatch, skew_signals
from monitor.app.daemon._supervisor import Component, SupervisedComponent
from monitor.app.daemon._unit_process import UnitProcess
from monitor.app.daemon._watermark import IntakeFollow, await_intake
from monitor.app.daemon._work_queue import Worker, WorkQueue
from monitor.app.daemon.metrics import MetricsPublisher
from monitor.app.daemon.signals import (
    LatestRows,
    RowsOf,
    drift_signals,
    estimate_signals,
    fairness_signals,
    guard_signals,
    outcome_signals,
    slo_signals,
)
from monitor.config import Config
from monitor.evaluation.windows import EVALUATE_JOB, WindowEvaluation
from monitor.failures import Backoff, Isolation, clear_failure, record_failure, redact
from monitor.storage import utcnow
from monitor.summaries import window_of

log = logging.getLogger(__name__)

ALERTS_JOB = "alerts"
COMPONENTS_JOB = "components"
SignalsOf = Callable[[datetime], list[Signal]]
# The longest a tick waits for the HTTP intake to pass a window's end (`_watermark`), blocking
# (evaluation in the tick's process: at most half the interval) ...
INTAKE_WAIT_MAX_S = 30.0
# ... and while its units run (the shared queue: at most 3/4 of the interval). Past it, the
# tick's rules run and late windows are evaluated at the next tick; a drain that is stuck
# delays each tick's rules by this much (its `ingest_lag` signal among them).
INTAKE_FOLLOW_MAX_S = 60.0


class ComponentHealth:
    """Hooks of supervised components: count restarts; record deaths in `job_failures`
    (job `components`, item the component) so /readyz and `modelwatch status` show them."""

    def __init__(
        self,
        engine: Engine,
        metrics: ModelwatchMetrics | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.engine = engine
        self.metrics = metrics
        self.backoff = backoff or Backoff(1.0, 60.0)

    def supervise(
        self, name: str, target: Callable[[threading.Event], None]
    ) -> SupervisedComponent:
        return SupervisedComponent(
            name,
            target,
            on_restart=self.metrics.record_component_restart if self.metrics else None,
            backoff=self.backoff,
            on_death=self.died,
            on_recovered=self.recovered,
        )

    def died(self, name: str, error: str) -> None:
        record_failure(self.engine, COMPONENTS_JOB, name, error, self.backoff)

    def recovered(self, name: str) -> None:
        clear_failure(self.engine, COMPONENTS_JOB, name)


def collectors_components(
    engine: Engine, config: Config, health: ComponentHealth | None = None
) -> list[SupervisedComponent]:
    """One supervised component per configured source (`collectors:<source>`), so a source
    that dies is restarted alone and never stops the others."""

    def loop(source_config: Any, stop: threading.Event) -> None:
        one = config.model_copy(update={"sources": [source_config]})
        run(engine, one, state=RunState(stop=stop))

    health = health or ComponentHealth(engine)
    return [
        health.supervise(f"collectors:{src.name}", functools.partial(loop, src))
        for src in config.sources
    ]


def rollback_handler(engine: Engine) -> Callable[[dict[str, Any]], None]:
    """Carries out a `rollback` alert action through the guards registry (idempotent)."""

    def handle(payload: dict[str, Any]) -> None:
        rollback(engine, payload["model"], reason=f"alert {payload.get('rule', '')} fired")

    return handle


def delivery_component(
    engine: Engine, config: Config, health: ComponentHealth | None = None
) -> SupervisedComponent:
    """Sends the alert outbox (one lane per receiver, a total deadline per attempt), and
    performs rollback actions; restarted when it dies."""

    def loop(stop: threading.Event) -> None:
        with deadline_client(timeout=10.0) as client:
            worker = DeliveryWorker(
                engine, config.alerts, client, rollback=rollback_handler(engine)
            )
            worker.run(stop)

    return (health or ComponentHealth(engine)).supervise("delivery", loop)


class Monitoring:
    """The evaluation job: score changed windows, then evaluate alert rules on the results.

    Every step is an isolated item: the windows (per model, version and window, see
    `WindowEvaluator`), each signal producer per model, the rules, the metrics. A producer
    that fails re-presents its last good signals, so its alerts keep their state instead of
    resolving, and the rest of the tick goes on. On PostgreSQL (`share`) the windows are
    evaluated as units by every replica's worker (`unit`), the tick waiting for them.
    """

    def __init__(
        self, engine: Engine, config: Config, metrics: ModelwatchMetrics | None = None
    ) -> None:
        self.engine = engine
        self.config = config
        self.metrics = metrics
        window_s = config.collect.window.total_seconds()
        sched = config.scheduler
        # A window's last events reach the intake up to the tick offset after its end.
        self.settle_s = sched.offset_s(sched.evaluate_interval_s)
        self.settled = settled_intake(engine, config)
        self.windows = window_evaluator(engine, config, metrics)
        self.unit = Units(engine, config, metrics, self.windows)
        self.isolation = self._isolation(ALERTS_JOB)
        self.alerts = Evaluator(engine, config.alerts)
        slo = {m.name: m.slo for m in config.models if m.slo is not None}
        keep = timedelta(days=config.scheduler.retention_days)
        self.publisher = (
            MetricsPublisher(engine, metrics, keep, slo, self.isolation)
            if metrics is not None
            else None
        )
        self.dead_letter_rate = DeadLetterRate()
        self.shadow = {
            m.name: ShadowSignals(engine, m, window_s, metrics)
            for m in config.models
            if m.shadow is not None
        }
        self._last: dict[str, list[Signal]] = {}
        self.queue: WorkQueue | None = None
        self.refresh = ResultRefresh(config.scheduler.results_refresh_s)
        self.names = [m.name for m in config.models]
        self._due: list[str] | None = None  # this tick's models with work (None: not known)

    def share(self, queue: WorkQueue) -> None:
        """Evaluate through `queue`: each tick defers a unit per model with work due (`_due`),
        and this replica's worker (`queue.work`) takes units of every tick, whichever replica
        produced it."""
        self.queue = queue

    def _evaluate(
        self, now: datetime, follow: IntakeFollow | None = None
    ) -> list[WindowEvaluation]:
        """This tick's windows: evaluated here, or by the replicas' workers (then none here);
        only the models with work due (`_due`), on both paths. With the queue, `follow` is the
        intake this tick follows: models due once it has passed are deferred too."""
        self._due = None
        if self.queue is None:
            due = set(self._due_now(now))
            cfgs = [m for m in self.config.models if m.name in due]
            if not cfgs:
                return []
            # The tick's evaluator over those models: its settings, clock and decoded baselines.
            windows = self.windows.sibling(cfgs, self.windows.isolation)
            return observed(self.metrics, windows.run(now))
        # A queue that fails (the database is away) is recorded and tried again next tick.
        shared = self._isolation(EVALUATE_JOB, Backoff(0.0, 0.0))
        shared.begin(now)
        queue = self.queue
        more = None if follow is None else self._following(follow)
        shared.attempt("queue", lambda: queue.evaluate(self._due_now(now), more))
        return []

    def _following(self, follow: IntakeFollow) -> Callable[[], list[str] | None]:
        """The queue's `more`: nothing while the intake is behind, then (once) the models due
        now, then None; past the bound too, the models due then (an ended window the intake
        has not settled stays held, `intake_settled`); None at once when the database is away."""
        asked = False

        def more() -> list[str] | None:
            nonlocal asked
            if asked:
                return None
            try:
                passed = follow.passed()
                if passed is False:
                    return []
                asked = True
                due = self.due(utcnow())
            except Exception as exc:  # the database away: the next tick tries again
                log.warning("following the intake drain: %s", redact(exc))
                asked = True
                return None
            self._due = sorted({*(self._due or []), *due})
            return due or None

        return more

    def _due_now(self, now: datetime) -> list[str]:
        self._due = self.due(now)
        return self._due

    def due(self, now: datetime) -> list[str]:
        """The configured models with evaluation work due at `now` (`_due`)."""
        period_s = self.windows.period_interval.total_seconds()
        open_s = self.windows.open_interval.total_seconds()
        settled = self.settled()
        return due_models(self.engine, self.names, EVALUATE_JOB, now, period_s, open_s, settled)

    def _isolation(self, job: str, backoff: Backoff | None = None) -> Isolation:
        return isolation(self.engine, self.config, job, self.metrics, backoff)

    def __call__(
        self, _window: datetime | None = None, now: datetime | None = None
    ) -> list[WindowEvaluation]:
        follow = None
        if now is None:  # a scheduled tick (tests give their own clock)
            follow = self._intake_follow(utcnow())
            if follow is not None and self.queue is None:
                self._await_intake(follow)
                follow = None
        now = now or utcnow()
        evaluated = self._evaluate(now, follow)
        self.isolation.begin(now)
        fresh = self.refresh.models(now, self._due)
        read = [m for m in self.names if fresh is None or m in fresh]  # in the order asked
        rows_of = LatestRows(self.engine, read)
        signals = [
            s
            for name, produce in self.producers(fresh, rows_of)
            for s in self._signals(name, produce, now)
        ]
        self.isolation.attempt(
            "rules", functools.partial(self.alerts.evaluate, signals, now, kinds=SIGNAL_KINDS)
        )
        if self.publisher is not None and self.metrics is not None:
            publish = functools.partial(self.publisher.publish, self.names, fresh, rows_of)
            self.isolation.attempt("metrics", publish)
        return evaluated

    def _intake_follow(self, now: datetime) -> IntakeFollow | None:
        """When a window ended since the previous tick, the wait until the HTTP intake received
        before `now` is aggregated (`_watermark`): at most half the interval and
        `INTAKE_WAIT_MAX_S` when it blocks the tick, 3/4 of it and `INTAKE_FOLLOW_MAX_S` when
        the tick follows it while its units run (the shared queue). None: nothing ended."""
        interval = self.config.scheduler.evaluate_interval_s
        ended = window_of(now, self.windows.window_s)
        if (now - ended).total_seconds() > interval:
            return None
        # Up to the tick's time on its grid (the window's end plus the tick offset), not the
        # window's end: events of the ended window sent just before it can be received just
        # after (clients batch and queue). Not the tick's start either: a tick that runs late
        # (the one before it overran) waited for requests the drain's batch after the window's
        # end never read, gave up at the bound and left the window to the next tick.
        boundary = min(now, ended + timedelta(seconds=self.settle_s))
        if self.queue is None:
            return IntakeFollow(self.engine, boundary, min(interval / 2, INTAKE_WAIT_MAX_S))
        return IntakeFollow(self.engine, boundary, min(interval * 0.75, INTAKE_FOLLOW_MAX_S))

    def _await_intake(self, follow: IntakeFollow) -> None:
        try:
            await_intake(self.engine, follow.boundary, follow.timeout_s)
        except Exception as exc:  # the database away: the evaluation meets it and records it
            log.warning("waiting for the intake drain: %s", redact(exc))

    def producers(
        self, fresh: set[str] | None = None, rows_of: RowsOf | None = None
    ) -> list[tuple[str, SignalsOf]]:
        """(item name, producer) of every signal, per model where a producer is per model.

        Of a model not in `fresh` (`ResultRefresh`; None: every model), the signals of its
        window results are its last ones, not read again. `rows_of`: the tick's fleet-wide
        read of the newest results (`LatestRows`); None: each model reads its own."""
        e, names = self.engine, self.names
        out: list[tuple[str, SignalsOf]] = []
        for model in names:
            for kind, produce in (
                ("drift", drift_signals),
                ("outcome", outcome_signals),
                ("estimate", estimate_signals),
            ):
                out.append(
                    self._producer(f"signals {kind} {model}", produce, model, fresh, rows_of)
                )
        # The newest gate run of every model version, in one query (runs change without any
        # evaluation: read every tick).
        out.append(("signals guard", functools.partial(guard_signals, e, names)))
        out += [
            (f"signals slo {m.name}", functools.partial(slo_signals, e, m))
            for m in self.config.models
            if m.slo is not None
        ]
        out += [
            self._producer(f"signals fairness {m.name}", fairness_signals, m.name, fresh)
            for m in self.config.models
            if m.fairness is not None
        ]
        out += [(f"signals shadow {name}", produce) for name, produce in self.shadow.items()]
        window = self.config.collect.window
        out += [
            (
                "signals evaluation_failed",
                functools.partial(evaluation_failed_signals, e, EVALUATE_JOB, names),
            ),
            ("signals ingest_lag", functools.partial(ingest_lag_signals, e)),
            ("signals dead_letter_rate", functools.partial(self.dead_letter_rate, e)),
            ("signals no_data", functools.partial(no_data_signals, e, names, window)),
        ]
        out += guard_replay_producers(e, self.config)
        cfg, metrics = self.config, self.metrics
        out += [
            ("signals canary", functools.partial(canary_signals, e, cfg, metrics)),
            ("signals skew", functools.partial(skew_signals, e, cfg, metrics)),
            ("signals segment", functools.partial(segment_signals, e, cfg, metrics)),
        ]
        return out

    def _producer(
        self,
        name: str,
        produce: Callable[..., list[Signal]],
        model: str,
        fresh: set[str] | None,
        rows_of: RowsOf | None = None,
    ) -> tuple[str, SignalsOf]:
        """The producer of one model's signals from its window results: its last signals
        when its results are not read again this tick (and there are last ones)."""
        last = self._last.get(name)
        if fresh is not None and model not in fresh and last is not None:
            return name, lambda _now: last
        if rows_of is None:
            return name, functools.partial(produce, self.engine, [model])
        return name, functools.partial(produce, self.engine, [model], rows_of=rows_of)

    def _signals(self, name: str, produce: SignalsOf, now: datetime) -> list[Signal]:
        got = self.isolation.attempt(name, functools.partial(produce, now))
        if got is None:
            return self._last.get(name, [])
        self._last[name] = got
        return got


def shared_evaluation(
    engine: Engine, config: Config, monitoring: Monitoring, holder: str, health: ComponentHealth
) -> Component:
    """Evaluation shared by every replica on one PostgreSQL (`_work_queue`): `monitoring`'s
    ticks defer units, and the returned component (this replica's worker, in a process of its
    own: `_unit_process`) takes them."""
    names = [m.name for m in config.models]
    sched = config.scheduler
    queue = WorkQueue(
        engine, names, monitoring.unit, sched.lease_s, holder, monitoring.metrics,
        sched.units_at_once,
    )  # fmt: skip
    monitoring.share(queue)
    url = engine.url.render_as_string(hide_password=False)
    units = UnitProcess(url, config, holder, monitoring.metrics)
    return Worker(queue, health.supervise("evaluation", units.run), units.set_grace)


def build_service(
    config: Config, engine: Engine, registry: CollectorRegistry | None = None
) -> Service:
    """The daemon with every configured capability wired in."""
    registry = registry or CollectorRegistry()
    metrics = ModelwatchMetrics(registry, config.models)
    monitoring = Monitoring(engine, config, metrics)
    jobs = [JobSpec(EVALUATE_JOB, monitoring, config.scheduler.evaluate_interval_s)]
    holder = replica_id()
    for watch in (CanaryWatch, SkewWatch, SegmentWatch):
        spec = watch(engine, config, holder, metrics.record_job_failure).spec()
        jobs += [spec] if spec is not None else []
    if any(m.resources for m in config.models):  # resource endpoints, each its own job
        jobs += scrape_jobs(engine, config, httpx.Client(follow_redirects=False))
    restart = Backoff(config.scheduler.restart_initial_s, config.scheduler.restart_max_s)
    health = ComponentHealth(engine, metrics, restart)
    components: list[Component] = [*collectors_components(engine, config, health)]
    if engine.dialect.name == "postgresql":  # SQLite: evaluation stays in the tick's process
        components.append(shared_evaluation(engine, config, monitoring, holder, health))
    if config.alerts.receivers:
        components.append(delivery_component(engine, config, health))
    if config.guards.schedule:
        replays = GuardReplays(engine, config, metrics)
        jobs += replays.jobs()
        components.append(replays)
    return Service(
        holder=holder,
        config=config,
        engine=engine,
        registry=registry,
        jobs=jobs,
        components=components,
        on_job_failure=metrics.record_job_failure,
        on_job_success=metrics.set_job_success,
        supervise=health.supervise,
    )
