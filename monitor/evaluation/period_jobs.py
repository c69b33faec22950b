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
again whenever one of their windows changes.
A crash leaves the markers pending; a period that fails is its own job failure (item
`drift <model>/<version> day <start>`), retried after its backoff; a window never waits for its
periods. A period waits for its failing windows, found by their failures' `window_start`
(`monitor.failures.failing_windows`), not by parsing item names.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.config import ModelConfig
from monitor.detectors import DriftResult
from monitor.evaluation.periods import PERIODS, Period, period_of
from monitor.failures import Isolation, failing_windows
from monitor.outcomes import OutcomeResult
from monitor.results.store import store_period_results
from monitor.storage import (
    Change,
    consume_changes,
    mark_changed,
    pending_changes,
    transaction,
)

Compute = Callable[[Session, str, str, Period], Sequence[DriftResult] | Sequence[OutcomeResult]]
"""A period's results of one version (drift or outcome metrics), from (session, version, period
name, period), reading and storing its merge in the session."""

WINDOW_ITEMS = {"drift": "drift", "outcome": "outcomes"}
"""The evaluate job's item kind of one window (`monitor.failures.window_item`), per result kind."""


class _Window(Protocol):
    @property
    def model(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def start(self) -> datetime: ...


def mark_periods(engine: Engine, kind: str, windows: Iterable[_Window]) -> None:
    """Mark the days and weeks of changed windows changed (`kind`: "drift" or "outcome")."""
    seen = list(windows)
    if not seen:
        return
    with transaction(engine) as s:
        for name, size in PERIODS.items():
            periods = {(w.model, w.version, period_of(w.start, size)) for w in seen}
            mark_changed(s, f"{kind}_{name}", [(m, v, p.start, p.end) for m, v, p in periods])


def evaluate_periods(
    isolation: Isolation, engine: Engine, cfg: ModelConfig, kind: str, compute: Compute
) -> int:
    """Evaluate and store the model's pending days and weeks of `kind`; returns how many."""
    done = 0
    failing = failing_windows(isolation.failing(), WINDOW_ITEMS[kind], cfg.name)
    for name in PERIODS:
        # Read after the days were evaluated: a week waits for its pending (failing) days.
        waiting = [] if name == "day" else pending_changes(engine, cfg.name, f"{kind}_day")
        for change in pending_changes(engine, cfg.name, f"{kind}_{name}"):
            if any(v == change.version and change.start <= t < change.end for v, t in failing):
                continue  # waits for its failing window (reported as itself)
            if any(_within(day, change) for day in waiting):
                continue
            item = f"{kind} {cfg.name}/{change.version} {name} {change.start.isoformat()}"
            work = functools.partial(_store, engine, (kind, name), change, compute)
            done += isolation.attempt(item, work, cfg.name, change.version) or 0
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
