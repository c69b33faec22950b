"""Drift and outcome results of whole days and weeks, stored as their windows change.

When the evaluate job reads a model's changed windows, it first marks each window's day and week
changed (change markers of kind `<kind>_day` / `<kind>_week` in `window_changes`, keyed by the
period's start). After the windows, each pending period is evaluated as one comparison: its
window profiles (or outcome summaries) merged and compared as a window is (`monitor.periods`,
the same functions the results API's `?granularity=` uses). Its rows are upserted in
`drift_period_results` / `outcome_period_results` and its marker consumed in one transaction.
The current, incomplete day and week are evaluated again whenever one of their windows changes.
A crash leaves the markers pending; a period that fails is its own job failure (item
`drift <model>/<version> day <start>`), retried after its backoff; a window never waits for its
periods.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy import select
from sqlalchemy.engine import Engine

from monitor.config import ModelConfig
from monitor.detectors import DriftResult
from monitor.failures import Isolation
from monitor.outcomes import OutcomeResult
from monitor.periods import PERIODS, Period, period_of
from monitor.results import store_period_results
from monitor.storage import (
    Change,
    DriftPeriodResultRow,
    OutcomePeriodResultRow,
    consume_changes,
    mark_changed,
    pending_changes,
    session_factory,
    transaction,
    utcnow,
)

WEEK_REFRESH = timedelta(hours=1)

Compute = Callable[[str, Period], Sequence[DriftResult] | Sequence[OutcomeResult]]
"""A period's results of one version (drift or outcome metrics)."""


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
    failing = _failing_windows(isolation, cfg.name, kind)
    for name in PERIODS:
        for change in pending_changes(engine, cfg.name, f"{kind}_{name}"):
            if any(v == change.version and change.start <= t < change.end for v, t in failing):
                continue  # waits for its failing window (reported as itself)
            if name == "week" and _fresh(engine, kind, change, isolation.now):
                continue
            item = f"{kind} {cfg.name}/{change.version} {name} {change.start.isoformat()}"
            work = functools.partial(_store, engine, (kind, name), change, compute)
            done += isolation.attempt(item, work, cfg.name, change.version) or 0
    return done


def _fresh(engine: Engine, kind: str, change: Change, now: datetime) -> bool:
    """Whether a week unfinished at `now` (the tick's time) was stored less than
    `WEEK_REFRESH` ago (by the clock that stamps `computed_at`)."""
    if change.end <= now:
        return False
    t = DriftPeriodResultRow if kind == "drift" else OutcomePeriodResultRow
    stmt = select(t.computed_at).where(
        t.model == change.model, t.version == change.version, t.period == "week",
        t.period_start == change.start,
    ).limit(1)  # fmt: skip
    with session_factory(engine)() as s:
        last = s.scalar(stmt)
    return last is not None and utcnow() - last < WEEK_REFRESH


def _failing_windows(isolation: Isolation, model: str, kind: str) -> list[tuple[str, datetime]]:
    """(version, window start) of the model's failing window items of `kind`
    (`<kind> <model>/<version> <start>`, as `WindowEvaluator` names them)."""
    out = []
    for f in isolation.failing():
        parts = f.item.split(" ")
        if len(parts) == 3 and parts[0] == kind and parts[1] == f"{model}/{f.version}":
            try:
                out.append((str(f.version), datetime.fromisoformat(parts[2])))
            except ValueError:  # not a window item
                continue
    return out


def _store(engine: Engine, kind_name: tuple[str, str], change: Change, compute: Compute) -> int:
    kind, name = kind_name
    results = compute(change.version, Period(change.start, change.end))
    with transaction(engine) as s:
        ident = (change.model, change.version, name)
        store_period_results(s, kind, ident, (change.start, change.end), results)
        consume_changes(s, f"{kind}_{name}", [change])
    return 1
