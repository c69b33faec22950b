"""Drift and outcome results of whole days and weeks, stored as their windows change.

When the evaluate job reads a model's changed windows, it first marks each window's day and week
changed (change markers of kind `<kind>_day` / `<kind>_week` in `window_changes`, keyed by the
period's start). After the windows, each pending period is evaluated as one comparison: a
day's window profiles (or outcome summaries) merged and compared as a window is, and that merge
stored (`day_profiles`, `day_counts`, `day_outcome_summaries`); a week is the merge of its 7
stored days (`monitor.evaluation.periods.stored_drift` / `stored_outcomes`), so the current week is
cheap enough to evaluate every tick. A week waits while one of its days is still pending. Its rows
are upserted in `drift_period_results` / `outcome_period_results`, the day's merge stored and
its marker consumed in one transaction. The current, incomplete day and week are evaluated
again when one of their windows changes, at most once per `scheduler.period_interval_s`
(`period_interval`): re-testing every model's open day on every tick was most of a tick's cost
at fleet scale. An open period's marker keeps the time it became pending (`changed_at`), so a
period not yet due stays pending, in the database: after a restart, or on another replica, it
is due at the same time. A period that has ended is due at once (its final results).
A crash leaves the markers pending; a period that fails is its own job failure (item
`drift <model>/<version> day <start>`), retried after its backoff; a window never waits for its
periods. A period waits for its failing windows, found by their failures' `window_start`
(`monitor.failures.failing_windows`), not by parsing item names.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.config import ModelConfig
from monitor.detectors import DriftResult
from monitor.evaluation.periods import PERIODS, Period, period_of
from monitor.failures import Isolation, failing_windows
from monitor.outcomes import OutcomeResult
from monitor.results.store import store_period_results
from monitor.storage import Change, consume_changes, mark_read, transaction, utcnow

Compute = Callable[[Session, str, str, Period], Sequence[DriftResult] | Sequence[OutcomeResult]]
"""A period's results of one version (drift or outcome metrics), from (session, version, period
name, period), reading and storing its merge in the session."""

# An open day or week, re-evaluated at most this often per model in the fleet, and at least
# every cap: a period's merge and comparison cost ~2.5 window evaluations, and were two thirds
# of a 400-model fleet's evaluation time at 0.25 s per model (py-spy, bench/fleet.py).
PERIOD_S_PER_MODEL = 1.0
PERIOD_INTERVAL_CAP_S = 900.0
# An open window, likewise (`scheduler.open_window_interval_s`).
OPEN_WINDOW_S_PER_MODEL = 0.25
OPEN_WINDOW_INTERVAL_CAP_S = 300.0

WINDOW_ITEMS = {"drift": "drift", "outcome": "outcomes"}
"""The evaluate job's item kind of one window (`monitor.failures.window_item`), per result kind."""


class _Window(Protocol):
    @property
    def model(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def start(self) -> datetime: ...


def mark_periods(
    engine: Engine,
    kind: str,
    windows: Iterable[_Window],
    now: datetime | None = None,
    pending: Mapping[str, Sequence[Change]] | None = None,
) -> dict[str, list[Change]]:
    """Mark the days and weeks of changed windows changed (`kind`: "drift" or "outcome");
    returns the marked periods (as read, with their new `seq`) by period name. Periods in
    `pending` (by name, as read this tick) are pending already: their evaluation reads the
    windows as they are then, so they are not marked again."""
    seen = list(windows)
    marks: dict[str, list[tuple[str, str, datetime, datetime]]] = {}
    for name, size in PERIODS.items():
        known = {(c.version, c.start) for c in (pending or {}).get(name, ())}
        spans = {(w.model, w.version, *_span(period_of(w.start, size))) for w in seen}
        marks[name] = sorted(p for p in spans if (p[1], p[2]) not in known)
    if not any(marks.values()):
        return {}
    with transaction(engine) as s:
        return {name: mark_read(s, f"{kind}_{name}", spans, now) for name, spans in marks.items()}


def _span(period: Period) -> tuple[datetime, datetime]:
    return period.start, period.end


def period_kinds(kind: str) -> list[str]:
    """The change kinds of `kind`'s stored periods ("drift_day", "drift_week")."""
    return [f"{kind}_{name}" for name in PERIODS]


def merge_marked(pending: list[Change], marked: list[Change]) -> list[Change]:
    """Periods pending when read, with those marked since replacing theirs (newer `seq`)."""
    found = {(c.version, c.start): c for c in pending}
    found.update({(c.version, c.start): c for c in marked})
    return sorted(found.values(), key=lambda c: (c.start, c.version))


def period_interval(
    configured: float | None,
    models: int,
    evaluate_s: float,
    per_model: float = PERIOD_S_PER_MODEL,
    cap: float = PERIOD_INTERVAL_CAP_S,
) -> float:
    """Seconds between re-evaluations of an open period (`scheduler.period_interval_s`; with
    `per_model` and `cap` of open windows, `scheduler.open_window_interval_s`); the default
    scales with the fleet: `per_model` seconds per model up to `cap`, 0 (every tick) while that
    is not longer than a tick."""
    if configured is not None:
        return configured
    scaled = min(cap, per_model * models)
    return scaled if scaled > evaluate_s else 0.0


@dataclass(frozen=True)
class PeriodWork:
    """One model's period evaluation of one kind: what is pending, and when open ones are due."""

    kind: str
    compute: Compute
    pending: Mapping[str, list[Change]]  # by period name, as read or marked this tick
    interval: timedelta = timedelta(0)
    now: datetime | None = None

    def due(self, change: Change) -> bool:
        """An ended period at once; an open one once its change has waited `interval`."""
        return change.due(self.now or utcnow(), self.interval)


def evaluate_periods(
    isolation: Isolation, engine: Engine, cfg: ModelConfig, work: PeriodWork
) -> int:
    """Evaluate and store the model's pending days and weeks that are due; returns how many.

    A period not due stays pending (evaluated by a later tick, or after a restart)."""
    done = 0
    failing = failing_windows(isolation.failing(), WINDOW_ITEMS[work.kind], cfg.name)
    waiting: list[Change] = []  # days still pending once the days are done: their weeks wait
    for name in PERIODS:
        for change in work.pending.get(name, []):
            stored = 0
            if not (
                any(v == change.version and change.start <= t < change.end for v, t in failing)
                or any(_within(day, change) for day in waiting)
                or not work.due(change)
            ):  # else it waits: for its failing window (reported as itself), its days, its time
                item = f"{work.kind} {cfg.name}/{change.version} {name} {change.start.isoformat()}"
                store = functools.partial(_store, engine, (work.kind, name), change, work.compute)
                stored = isolation.attempt(item, store, cfg.name, change.version) or 0
            if not stored and name == "day":
                waiting.append(change)
            done += stored
    return done


def _within(day: Change, week: Change) -> bool:
    return day.version == week.version and week.start <= day.start < week.end


def _store(engine: Engine, kind_name: tuple[str, str], change: Change, compute: Compute) -> int:
    kind, name = kind_name
    with transaction(engine) as s:
        results = compute(s, change.version, name, Period(change.start, change.end))
        ident = (change.model, change.version, name)
        store_period_results(s, kind, ident, (change.start, change.end), results)
        consume_changes(s, f"{kind}_{name}", [change])
    return 1
