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

from monitor.config import ModelConfig
from monitor.detectors import rebin
from monitor.outcomes import OutcomeResult
from monitor.profiles import OVERALL, Profile, profile_from_bytes
from monitor.profiles.serving import ServingSummary
from monitor.slo.evaluate import serving_summary
from monitor.storage import WindowProfile, session_factory
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


def _profiles(
    engine: Engine, model: str, version: str, start: datetime, end: datetime
) -> dict[str, Profile]:
    t = WindowProfile
    stmt = select(t.column, t.payload, t.window_start).where(
        t.model == model, t.version == version, t.slice_key == OVERALL,
        t.window_start >= start, t.window_start < end,
    )  # fmt: skip
    merged: dict[str, Profile] = {}
    with session_factory(engine)() as s:
        for column, payload, window in s.execute(stmt):
            where = f"model {model!r} version {version!r} window {window.isoformat()}"
            profile = profile_from_bytes(payload, where)
            old = merged.get(column)
            merged[column] = profile if old is None else _merge(old, profile)
    return merged


def _merge(a: Profile, b: Profile) -> Profile:
    """Two windows' profiles merged; on different specs (a respec mid-range) the later one is
    moved onto the earlier's spec first."""
    if a.spec.fingerprint != b.spec.fingerprint:
        moved = rebin(b, a.spec)
        return a if moved is None else a.merge(moved)  # type: ignore[arg-type]
    return a.merge(b)  # type: ignore[arg-type]
