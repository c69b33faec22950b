"""What one model version's live traffic left in storage over a time range, merged.

Everything read is a mergeable summary (window profiles, serving summaries, outcome
summaries), so a day of hourly windows is a merge, never a rescan of events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.config import ModelConfig
from monitor.detectors import rebin
from monitor.outcomes import OutcomeResult
from monitor.profiles import OVERALL, Profile, key_of, profile_from_bytes
from monitor.profiles.serving import ServingSummary
from monitor.slo.evaluate import serving_summary
from monitor.storage import WindowProfile, WindowServing, session_factory
from monitor.summaries import outcome_results


@dataclass(frozen=True)
class Evidence:
    """One version's merged overall profiles, serving summary and outcome metrics."""

    version: str
    profiles: Mapping[str, Profile] = field(default_factory=dict)
    serving: ServingSummary = field(default_factory=ServingSummary)
    outcomes: tuple[OutcomeResult, ...] = ()


def load_evidence(
    engine: Engine, cfg: ModelConfig, version: str, start: datetime, end: datetime
) -> Evidence:
    """Merged evidence of `version` over windows starting in [start, end)."""
    return Evidence(
        version,
        _profiles(engine, cfg.name, version, start, end),
        serving_summary(engine, cfg.name, version, start, end),
        tuple(r for r in outcome_results(engine, cfg, version, start, end) if r.slice is None),
    )


def load_sliced_evidence(
    engine: Engine, cfg: ModelConfig, version: str, start: datetime, end: datetime
) -> dict[str, Evidence]:
    """Merged evidence of `version` over windows starting in [start, end), by slice key ("" is
    the whole traffic): three reads of stored summaries, whatever the number of slices."""
    with session_factory(engine)() as s:  # one session for the three reads
        profiles = _sliced_profiles(s, cfg.name, version, start, end)
        serving = _sliced_serving(s, cfg.name, version, start, end)
        outcomes: dict[str, list[OutcomeResult]] = {}
        for r in outcome_results(s, cfg, version, start, end):
            outcomes.setdefault(key_of(r.slice), []).append(r)
    keys = sorted(set(profiles) | set(serving) | set(outcomes))
    return {
        k: Evidence(
            version, profiles.get(k, {}), serving.get(k, ServingSummary()),
            tuple(outcomes.get(k, ())),
        )
        for k in keys
    }  # fmt: skip


def _profiles(
    engine: Engine, model: str, version: str, start: datetime, end: datetime
) -> dict[str, Profile]:
    with session_factory(engine)() as s:
        return _sliced_profiles(s, model, version, start, end, OVERALL).get(OVERALL, {})


def _sliced_profiles(
    s: Session,
    model: str,
    version: str,
    start: datetime,
    end: datetime,
    only: str | None = None,
) -> dict[str, dict[str, Profile]]:
    t = WindowProfile
    stmt = select(t.slice_key, t.column, t.payload, t.window_start).where(
        t.model == model, t.version == version, t.window_start >= start, t.window_start < end,
    )  # fmt: skip
    if only is not None:
        stmt = stmt.where(t.slice_key == only)
    merged: dict[str, dict[str, Profile]] = {}
    for key, column, payload, window in s.execute(stmt):
        where = f"model {model!r} version {version!r} window {window.isoformat()}"
        profile = profile_from_bytes(payload, where)
        mine = merged.setdefault(key, {})
        old = mine.get(column)
        mine[column] = profile if old is None else _merge(old, profile)
    return merged


def _sliced_serving(
    s: Session, model: str, version: str, start: datetime, end: datetime
) -> dict[str, ServingSummary]:
    t = WindowServing
    stmt = select(t).where(
        t.model == model, t.version == version, t.window_start >= start, t.window_start < end
    )
    out: dict[str, ServingSummary] = {}
    for row in s.scalars(stmt):
        mine = ServingSummary.from_row(row)
        old = out.get(row.slice_key)
        out[row.slice_key] = mine if old is None else old.merge(mine)
    return out


def _merge(a: Profile, b: Profile) -> Profile:
    """Two windows' profiles merged; on different specs (a respec mid-range) the later one is
    moved onto the earlier's spec first."""
    if a.spec.fingerprint != b.spec.fingerprint:
        moved = rebin(b, a.spec)
        return a if moved is None else a.merge(moved)  # type: ignore[arg-type]
    return a.merge(b)  # type: ignore[arg-type]
