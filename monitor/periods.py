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

from sqlalchemy import distinct, func, select
from sqlalchemy.engine import Engine

from monitor._drift_batch import Reference, drift_of, thresholds_for
from monitor.attributions import AttributionReference
from monitor.baselines import baseline_for
from monitor.config import ModelConfig, parse_duration
from monitor.detectors import DriftResult
from monitor.errors import InputError
from monitor.outcomes import OutcomeResult
from monitor.profiles import ProfileSet, profile_from_bytes
from monitor.profiles.kinds import Profile
from monitor.storage import OutcomeSummaryRow, WindowCount, WindowProfile, session_factory
from monitor.summaries import outcome_results, window_of

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
    engine: Engine, model: str, version: str, period: Period, slice_by: Sequence[str]
) -> ProfileSet:
    """The period's window profiles and counts, merged per (slice, column)."""
    p, c = WindowProfile, WindowCount
    with session_factory(engine)() as s:
        prof_rows = s.execute(
            select(p.slice_key, p.column, p.payload).where(
                p.model == model,
                p.version == version,
                p.window_start >= period.start,
                p.window_start < period.end,
            )
        ).all()
        counts = s.execute(
            select(c.slice_key, func.sum(c.events))
            .where(
                c.model == model,
                c.version == version,
                c.window_start >= period.start,
                c.window_start < period.end,
            )
            .group_by(c.slice_key)
        ).all()
    profiles: dict[tuple[str, str], Profile] = {}
    where = f"model '{model}' version '{version}' period {period.start.isoformat()}"
    for key, col, payload in prof_rows:
        prof = profile_from_bytes(payload, f"{where} slice {key or 'overall'}")
        mine = profiles.get((key, col))
        profiles[(key, col)] = prof if mine is None else mine.merge(prof)  # type: ignore[arg-type]
    specs = {col: prof.spec for (key, col), prof in profiles.items() if key == ""}
    return ProfileSet(profiles, {k: int(n) for k, n in counts}, tuple(slice_by), specs)


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
    (`monitor._drift_batch.drift_of`; attributions are per window only); [] without windows."""
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


SUMMARY_TABLES: dict[str, Any] = {"drift": WindowCount, "outcomes": OutcomeSummaryRow}
