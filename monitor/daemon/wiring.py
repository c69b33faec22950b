"""The composition root of `modelwatch serve`: collectors, evaluation, alerts and delivery."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from sqlalchemy.engine import Engine

from alerts import DeliveryWorker, Evaluator
from dashboards.metrics import ModelwatchMetrics
from monitor.config import Config
from monitor.daemon.evaluation import WindowEvaluation, WindowEvaluator
from monitor.daemon.metrics import MetricsPublisher
from monitor.daemon.scheduler import JobSpec
from monitor.daemon.service import Component, Service
from monitor.daemon.signals import drift_signals, guard_signals, outcome_signals
from monitor.storage import utcnow

log = logging.getLogger(__name__)

MONITOR_KINDS = ("drift", "drift_count", "outcome", "guard")


class ThreadComponent(Component):
    """A component whose work loops in one thread until its stop event is set."""

    def __init__(self, name: str, target: Callable[[threading.Event], None]) -> None:
        self.name = name
        self._target = target
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self._target(self._stop)
        except Exception:
            self._failed = True
            log.exception("component %s stopped with an error", self.name)

    def stop(self, timeout: float) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._failed


def collectors_component(engine: Engine, config: Config) -> ThreadComponent:
    """Runs every configured source until the daemon stops."""
    from collectors.runner import RunState, run

    def loop(stop: threading.Event) -> None:
        state = RunState(stop=stop)
        run(engine, config, state=state)

    return ThreadComponent("collectors", loop)


def rollback_handler(engine: Engine) -> Callable[[dict[str, Any]], None]:
    """Carries out a `rollback` alert action through the guards registry (idempotent)."""
    from guards.registry import rollback

    def handle(payload: dict[str, Any]) -> None:
        rollback(engine, payload["model"], reason=f"alert {payload.get('rule', '')} fired")

    return handle


def delivery_component(engine: Engine, config: Config) -> ThreadComponent:
    """Sends the alert outbox, and performs rollback actions."""

    def loop(stop: threading.Event) -> None:
        with httpx.Client(timeout=10.0, verify=True) as client:
            worker = DeliveryWorker(
                engine, config.alerts, client, rollback=rollback_handler(engine)
            )
            worker.run(stop)

    return ThreadComponent("delivery", loop)


class Monitoring:
    """The evaluation job: score changed windows, then evaluate alert rules on the results."""

    def __init__(
        self, engine: Engine, config: Config, metrics: ModelwatchMetrics | None = None
    ) -> None:
        self.engine = engine
        self.config = config
        window_s = config.collect.window.total_seconds()
        self.windows = WindowEvaluator(engine, config.models, window_s)
        self.alerts = Evaluator(engine, config.alerts)
        self.metrics = metrics
        self.publisher = MetricsPublisher(engine, metrics) if metrics is not None else None

    def __call__(
        self, _window: datetime | None = None, now: datetime | None = None
    ) -> list[WindowEvaluation]:
        now = now or utcnow()
        evaluated = self.windows.run()
        names = [m.name for m in self.config.models]
        signals = [
            *drift_signals(self.engine, names, now),
            *outcome_signals(self.engine, names, now),
            *guard_signals(self.engine, names, now),
        ]
        self.alerts.evaluate(signals, now, kinds=MONITOR_KINDS)
        if self.publisher is not None and self.metrics is not None:
            for done in evaluated:
                self.metrics.observe_window_evaluation(done.window.model, done.seconds)
            self.publisher.publish(names)
        return evaluated


def build_service(
    config: Config, engine: Engine, registry: CollectorRegistry | None = None
) -> Service:
    """The daemon with every configured capability wired in."""
    registry = registry or CollectorRegistry()
    monitoring = Monitoring(engine, config, ModelwatchMetrics(registry, config.models))
    jobs = [JobSpec("evaluate", monitoring, config.scheduler.evaluate_interval_s)]
    components: list[Component] = []
    if config.sources:
        components.append(collectors_component(engine, config))
    if config.alerts.receivers:
        components.append(delivery_component(engine, config))
    return Service(
        config=config,
        engine=engine,
        registry=registry or CollectorRegistry(),
        jobs=jobs,
        components=components,
    )
