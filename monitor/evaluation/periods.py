"""Results over a day or a week: a merge of window summaries, never raw rows.

A period is `granularity` long, aligned to the epoch like windows, and must be a whole number of
windows. Drift compares the period's merged window profiles with the version's baseline, exactly
as a window is compared; outcome metrics come from the period's merged outcome summaries. The one
owner of period arithmetic and merging: the results API computes any granularity on demand
(`?granularity=`), the evaluate job stores days and weeks (`PERIODS`) as their windows change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, distinct, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.attributions import AttributionReference
from monitor.baselines.store import baseline_for
from monitor.config import ModelConfig, parse_duration
from monitor.detectors import DriftResult
from monitor.errors import InputError
from monitor.evaluation._drift_batch import Reference, drift_of, thresholds_for
from monitor.outcomes import OutcomeResult
from monitor.outcomes.summary import OutcomeSummary, summary_to_bytes
from monitor.profiles import (
    OVERALL,
    ProfileSet,
    merge_profiles,
    profiles_from_bytes,
    spec_of,
)
from monitor.profiles.kinds import Profile
from monitor.results.store import upsert_rows
from monitor.storage import (
    DayCount,
    DayOutcomeSummary,
    DayProfile,
    OutcomeSummaryRow,
    WindowCount,
    WindowProfile,
    fetch_rows,
    session_factory,
    utcnow,
)
from monitor.summaries import merged_by_slice, outcome_results, results_of, window_of

MAX_PERIODS = 100
PERIODS: dict[str, timedelta] = {"day": timedelta(days=1), "week": timedelta(days=7)}
"""The stored periods (`drift_period_results`, `outcome_period_results`) by name."""


@dataclass(frozen=True)
class Period:
    """`[start, end)` of one period."""

    start: datetime
    end: datetime


def granularity_of(text: str, window: timedelta) -> timedelta:
    """The `granularity` query value as a duration; InputError unless whole windows."""
    try:
        size = parse_duration(text)
    except ValueError as exc:
        raise InputError(f"granularity: {exc}") from None
    ratio = size / window
    if size <= timedelta(0) or abs(ratio - round(ratio)) > 1e-9:
        raise InputError(
            f"granularity: {text!r} is not a whole number of {window.total_seconds():g}s windows"
        )
    return size


def period_of(ts: datetime, size: timedelta) -> Period:
    """The period `ts` falls in."""
    start = window_of(ts, size.total_seconds())
    return Period(start, start + size)


def periods_between(since: datetime, until: datetime, size: timedelta) -> list[Period]:
    """Periods from the one holding `since` to the one holding `until`, newest first."""
    first, last = period_of(since, size), period_of(until, size)
    count = int((last.start - first.start) / size) + 1
    if count > MAX_PERIODS:
        raise InputError(f"since: {count} periods asked for; at most {MAX_PERIODS} at a time")
    return [Period(first.start + i * size, first.end + i * size) for i in reversed(range(count))]


def newest_window(engine: Engine, table: Any, model: str) -> datetime | None:
    """Start of the model's newest stored window in `table` (window_counts or summaries)."""
    with session_factory(engine)() as s:
        found: datetime | None = s.scalar(
            select(func.max(table.window_start)).where(table.model == model)
        )
    return found


def versions_in(engine: Engine, table: Any, model: str, period: Period) -> list[str]:
    """Versions with windows of `table` in the period."""
    stmt = select(distinct(table.version)).where(
        table.model == model, table.window_start >= period.start, table.window_start < period.end
    )
    with session_factory(engine)() as s:
        return sorted(s.scalars(stmt))


def period_profiles(
    engine: Engine | Session,
    model: str,
    version: str,
    period: Period,
    slice_by: Sequence[str],
) -> ProfileSet:
    """The period's window profiles and counts, merged per (slice, column).

    Given a Session, reads in it (the evaluate job stores a day's merge in the same one)."""
    p, c = WindowProfile, WindowCount
    in_period = (p.model == model, p.version == version,
                 p.window_start >= period.start, p.window_start < period.end)  # fmt: skip
    counted = (c.model == model, c.version == version,
               c.window_start >= period.start, c.window_start < period.end)  # fmt: skip
    profiles = select(p.slice_key, p.column, p.payload).where(*in_period)
    counts = select(c.slice_key, func.sum(c.events)).where(*counted).group_by(c.slice_key)
    where = f"model '{model}' version '{version}' period {period.start.isoformat()}"
    return _merged_profiles(engine, (profiles, counts), where, slice_by)


def _merged_profiles(
    engine: Engine | Session, queries: tuple[Any, Any], where: str, slice_by: Sequence[str]
) -> ProfileSet:
    """(slice key, column, payload) rows merged per (slice, column), with (slice, events)."""
    if isinstance(engine, Session):
        prof_rows, counts = (fetch_rows(engine, q) for q in queries)
    else:
        with session_factory(engine)() as s:
            prof_rows, counts = (fetch_rows(s, q) for q in queries)
    found: dict[tuple[str, str], list[Profile]] = {}
    decoded = profiles_from_bytes(
        [payload for _, _, payload in prof_rows],
        lambda i: f"{where} slice {prof_rows[i][0] or 'overall'}",
    )
    for (key, col, _), prof in zip(prof_rows, decoded, strict=True):
        found.setdefault((key, col), []).append(prof)
    profiles = {k: merge_profiles(v) for k, v in found.items()}
    specs = {col: spec_of(prof) for (key, col), prof in profiles.items() if key == ""}
    return ProfileSet(profiles, {k: int(n) for k, n in counts}, tuple(slice_by), specs)


def stored_days_profiles(
    session: Session, model: str, version: str, period: Period, slice_by: Sequence[str]
) -> ProfileSet:
    """The period's stored day profiles and counts (`store_day`), merged per (slice, column):
    a week from 7 rows per (slice, column) instead of 168 windows'."""
    p, c = DayProfile, DayCount
    profiles = select(p.slice_key, p.column, p.payload).where(
        p.model == model, p.version == version,
        p.day_start >= period.start, p.day_start < period.end,
    )  # fmt: skip
    counts = (
        select(c.slice_key, func.sum(c.events))
        .where(c.model == model, c.version == version,
               c.day_start >= period.start, c.day_start < period.end)
        .group_by(c.slice_key)
    )  # fmt: skip
    where = f"model '{model}' version '{version}' days of {period.start.isoformat()}"
    return _merged_profiles(session, (profiles, counts), where, slice_by)


def store_day(
    session: Session, model: str, version: str, day: datetime, merged: ProfileSet
) -> None:
    """Replace the stored merged profiles and counts of one day."""
    ident = {"model": model, "version": version, "day_start": day}
    now = utcnow()
    for table in (DayProfile, DayCount):
        session.execute(delete(table).where(
            table.model == model, table.version == version, table.day_start == day))  # fmt: skip
    profiles = [
        ident | {"slice_key": key, "column": col, "payload": prof.to_bytes(), "updated_at": now}
        for (key, col), prof in merged.profiles.items()
    ]
    counts = [ident | {"slice_key": k, "events": n, "updated_at": now}
              for k, n in merged.rows.items()]  # fmt: skip
    _insert(session, DayProfile, profiles, ("slice_key", "column"))
    _insert(session, DayCount, counts, ("slice_key",))


def _insert(session: Session, table: Any, rows: list[dict[str, Any]], key: Sequence[str]) -> None:
    """Insert one day's rows (deleted just before: an upsert only so that a replayed statement,
    as tests/monitor/app/daemon/test_tick_plans.py EXPLAINs them, does not collide)."""
    if rows:
        upsert_rows(session, table.__table__, ("model", "version", "day_start", *key), rows)


def period_drift(
    engine: Engine, cfg: ModelConfig, version: str, period: Period
) -> list[DriftResult]:
    """Drift of the period's merged profiles against the version's baseline ([] without one)."""
    baseline = baseline_for(engine, cfg.name, version, cfg.drift.baseline)
    if baseline is None:
        return []
    reference = (baseline.profiles, thresholds_for(cfg, baseline), AttributionReference())
    return period_drift_against(engine, cfg, version, period, reference)


def period_drift_against(
    engine: Engine, cfg: ModelConfig, version: str, period: Period, reference: Reference
) -> list[DriftResult]:
    """Drift of the period's merged profiles against `reference`, compared as a window is
    (`monitor.evaluation._drift_batch.drift_of`; attributions are per window only); [] without
    windows."""
    profiles = reference[0]
    current = period_profiles(engine, cfg.name, version, period, profiles.slice_by or cfg.slices)
    if not current.profiles:
        return []
    return drift_of(cfg, reference, current, None)


def period_outcomes(
    engine: Engine, cfg: ModelConfig, version: str, period: Period
) -> list[OutcomeResult]:
    """Outcome metrics of the period's merged outcome summaries."""
    return outcome_results(engine, cfg, version, period.start, period.end)


class DayMerges:
    """Days merged from the window profiles a tick has decoded anyway (`add`), so a day whose
    windows were all evaluated in this tick is not read and decoded again (`day`).

    Holds one merged ProfileSet per (version, day) touched: a day's worth of profiles, whatever
    the number of windows added.
    """

    def __init__(self) -> None:
        self._days: dict[tuple[str, datetime], dict[datetime, ProfileSet]] = {}

    def add(self, version: str, window_start: datetime, profiles: ProfileSet) -> None:
        """Keep one window's profiles for its day (merged when the day asks: `day`)."""
        key = (version, period_of(window_start, PERIODS["day"]).start)
        self._days.setdefault(key, {})[window_start] = profiles

    def day(self, session: Session, model: str, version: str, day: Period) -> ProfileSet | None:
        """The day's merge when it holds every window the day has stored, else None."""
        found = self._days.get((version, day.start))
        if found is None:
            return None
        c = WindowCount
        stored = session.scalars(
            select(c.window_start).where(
                c.model == model, c.version == version, c.slice_key == OVERALL,
                c.window_start >= day.start, c.window_start < day.end,
            )
        )  # fmt: skip
        return ProfileSet.merged(list(found.values())) if set(stored) == set(found) else None


def stored_drift(
    session: Session,
    cfg: ModelConfig,
    version: str,
    name: str,
    period: Period,
    reference: Reference,
    merges: DayMerges | None = None,
) -> list[DriftResult]:
    """The evaluate job's drift of a stored period (`PERIODS`): a day merged from its windows
    (from `merges` when they hold all of them), its merge stored for its week (`store_day`);
    a week merged from its stored days."""
    slice_by = reference[0].slice_by or cfg.slices
    if name == "day":
        found = None if merges is None else merges.day(session, cfg.name, version, period)
        current = found or period_profiles(session, cfg.name, version, period, slice_by)
        store_day(session, cfg.name, version, period.start, current)
    else:
        current = stored_days_profiles(session, cfg.name, version, period, slice_by)
    return drift_of(cfg, reference, current, None) if current.profiles else []


def stored_outcomes(
    cfg: ModelConfig, session: Session, version: str, name: str, period: Period
) -> list[OutcomeResult]:
    """The evaluate job's outcome metrics of a stored period, like `stored_drift`: a day from
    its window summaries (its merge stored per slice), a week from its stored days."""
    model = (cfg.name, version)
    if name == "day":
        t: Any = OutcomeSummaryRow
        since, until = t.window_start >= period.start, t.window_start < period.end
    else:
        t = DayOutcomeSummary
        since, until = t.day_start >= period.start, t.day_start < period.end
    stmt = select(t.slice_key, t.payload).where(t.model == model[0], t.version == model[1])
    rows = fetch_rows(session, stmt.where(since, until))
    merged = merged_by_slice(rows)
    if name == "day":
        _store_day_summaries(session, model, period.start, sorted({k for k, _ in rows}), merged)
    return results_of(cfg, merged)


def _store_day_summaries(
    session: Session,
    model: tuple[str, str],
    day: datetime,
    keys: Sequence[str],
    merged: Sequence[tuple[dict[str, str] | None, OutcomeSummary]],
) -> None:
    """Replace one day's stored outcome summaries (`keys`: the slice keys of `merged`)."""
    t = DayOutcomeSummary
    session.execute(delete(t).where(t.model == model[0], t.version == model[1],
                                    t.day_start == day))  # fmt: skip
    now = utcnow()
    rows = [
        {"model": model[0], "version": model[1], "day_start": day, "slice_key": key}
        | {"n": summary.n, "payload": summary_to_bytes(summary), "updated_at": now}
        for key, (_, summary) in zip(keys, merged, strict=True)
    ]
    _insert(session, t, rows, ("slice_key",))


SUMMARY_TABLES: dict[str, Any] = {"drift": WindowCount, "outcomes": OutcomeSummaryRow}
