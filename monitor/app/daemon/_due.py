"""Which models have evaluation work due: a tick evaluates (or defers a unit for) only those.

A model's evaluation (`WindowEvaluator`) does only two kinds of work, so a model with neither
has nothing to do and gets no unit (on SQLite: is not evaluated in the tick's process):

- its pending change markers (`window_changes`), of every kind a unit reads: changed profiles
  (drift, fairness and serving SLOs of those windows), joined labels (outcomes, fairness), a
  summary backfill, estimation, and the days and weeks those windows belong to (an open day or
  week once it has waited `scheduler.period_interval_s`, as the unit would re-test it: else
  every model with an open day would get a unit on every tick that finds nothing to do);
- its items of the `evaluate` job that failed and whose retry time has come (`job_failures`,
  e.g. an SLO window retried without a change); one not yet due waits for a later tick.

Two queries per tick, whatever the fleet's size and history: one index lookup per (model, kind)
for the pending markers, and the job's (few) failing items. A failing item without a model (the
producer's own `queue` item) is no model's work.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.engine import Engine

from monitor.evaluation.period_jobs import WINDOW_ITEMS
from monitor.evaluation.periods import PERIODS
from monitor.evaluation.windows import OPEN_PACED
from monitor.storage import CHANGE_KINDS, JobFailure, models_pending, session_factory

# Every change kind a unit reads: the window kinds, and the days and weeks of drift and outcomes
# (`monitor.evaluation.period_jobs`).
UNIT_KINDS: tuple[str, ...] = (
    *CHANGE_KINDS,
    *(f"{kind}_{period}" for kind in WINDOW_ITEMS for period in PERIODS),
)


def retries_due(engine: Engine, job: str, now: datetime) -> set[str]:
    """The models with an item of `job` that failed and may be tried again at `now`."""
    stmt = (
        select(JobFailure.model)
        .where(JobFailure.job == job, JobFailure.model.is_not(None), JobFailure.retry_at <= now)
        .distinct()
    )
    with session_factory(engine)() as s:
        return {m for m in s.scalars(stmt) if m is not None}


# The day and week kinds: an open one is due only after `scheduler.period_interval_s`.
PERIOD_KINDS: tuple[str, ...] = tuple(k for k in UNIT_KINDS if k not in CHANGE_KINDS)


def due_models(
    engine: Engine,
    models: Sequence[str],
    job: str,
    now: datetime,
    period_s: float = 0.0,
    open_window_s: float = 0.0,
    settled: datetime | None = None,
) -> list[str]:
    """Of `models` (in their order), those with evaluation work due at `now`; a pending open
    day or week counts once it has waited `period_s` (`period_jobs.PeriodWork.due`), an open
    window's profiles once they waited `open_window_s`, an ended window's once it ended by
    `settled` (its events all aggregated: `intake_settled`; None: at once) (`WindowEvaluator`)."""
    paced = [(PERIOD_KINDS, period_s), (OPEN_PACED, open_window_s)]
    complete = None if settled is None else (OPEN_PACED, settled)
    pending = models_pending(engine, models, UNIT_KINDS, now, paced, complete)
    due = pending | retries_due(engine, job, now)
    return [m for m in models if m in due]
