"""The windows' evaluator a config asks for, and one model's unit of it.

Shared by the `evaluate` tick (`wiring.Monitoring`, in serve's process) and the units' worker
process (`_unit_process`), which imports only this and what evaluation needs (not the API, the
alert rules or the collectors: a spawned worker's imports are CPU every replica pays at start).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime

from sqlalchemy.engine import Engine

from dashboards.metrics import ModelwatchMetrics
from monitor.config import Config
from monitor.evaluation.period_jobs import (
    OPEN_WINDOW_INTERVAL_CAP_S,
    OPEN_WINDOW_S_PER_MODEL,
    period_interval,
)
from monitor.evaluation.windows import EVALUATE_JOB, WindowEvaluation, WindowEvaluator
from monitor.failures import Backoff, Isolation
from monitor.storage import intake_settled, utcnow

Settled = Callable[[], datetime | None]
"""The latest window end the HTTP intake has settled (`monitor.storage.intake_settled`)."""


def isolation(
    engine: Engine,
    config: Config,
    job: str,
    metrics: ModelwatchMetrics | None,
    backoff: Backoff | None = None,
) -> Isolation:
    """Items of `job` isolated with the scheduler's retry backoff, failures counted."""
    cfg = config.scheduler
    backoff = backoff or Backoff(cfg.retry_initial_s, cfg.retry_max_s)
    failed = metrics.record_job_failure if metrics is not None else None
    return Isolation(engine, job, backoff, failed)


def settled_intake(engine: Engine, config: Config) -> Settled:
    """Whether the HTTP intake has settled the windows that ended (a window's last events
    reach the intake up to the tick offset after its end)."""
    sched = config.scheduler
    settle_s = sched.offset_s(sched.evaluate_interval_s)
    max_lag_s = config.collect.http_max_lag.total_seconds()
    return functools.partial(intake_settled, engine, settle_s, max_lag_s)


def window_evaluator(
    engine: Engine, config: Config, metrics: ModelwatchMetrics | None
) -> WindowEvaluator:
    """Every configured model's evaluator: its open periods' interval, baselines decoded across
    ticks (`scheduler.reference_cache`), windows held until the intake settled them."""
    sched = config.scheduler
    periods_s = period_interval(
        sched.period_interval_s, len(config.models), sched.evaluate_interval_s
    )
    open_s = period_interval(
        sched.open_window_interval_s, len(config.models), sched.evaluate_interval_s,
        OPEN_WINDOW_S_PER_MODEL, OPEN_WINDOW_INTERVAL_CAP_S,
    )  # fmt: skip
    return WindowEvaluator(
        engine, config.models, config.collect.window.total_seconds(),
        isolation(engine, config, EVALUATE_JOB, metrics), periods_s, sched.reference_cache,
        open_window_interval_s=open_s, settled=settled_intake(engine, config),
    )  # fmt: skip


def observed(
    metrics: ModelwatchMetrics | None, evaluated: list[WindowEvaluation]
) -> list[WindowEvaluation]:
    """`evaluated`, each window's evaluation time recorded."""
    if metrics is not None:
        for done in evaluated:
            metrics.observe_window_evaluation(done.window.model, done.seconds)
    return evaluated


class Units:
    """One model's changed windows evaluated now: a unit of the shared queue (`_work_queue`)."""

    def __init__(
        self,
        engine: Engine,
        config: Config,
        metrics: ModelwatchMetrics | None,
        windows: WindowEvaluator | None = None,
    ) -> None:
        self.engine, self.config, self.metrics = engine, config, metrics
        self.windows = windows or window_evaluator(engine, config, metrics)

    def __call__(self, model: str) -> list[WindowEvaluation]:
        cfg = next(m for m in self.config.models if m.name == model)
        unit_isolation = isolation(self.engine, self.config, EVALUATE_JOB, self.metrics)
        windows = self.windows.sibling([cfg], unit_isolation)
        return observed(self.metrics, windows.run(utcnow()))
