"""Drift of many changed windows at once: one read, compute in memory, one upsert, one commit.

A burst (a backfill, a replayed topic, a restart after an outage) changes hundreds of windows.
Evaluated one transaction each, most of a window's time goes to round trips: two reads, an
upsert, a commit and its share of the marker update. A batch of up to `BATCH` windows of one
version is read in two queries (three with attributions), compared in Python by the same
function as a single window (:func:`drift_of`, no database access), stored in ONE upsert and its
change markers consumed in the same transaction: a crash before the commit leaves every window of
the batch pending, never half of it. When a batch fails, the caller evaluates its windows one by
one (`WindowEvaluator`), so one bad window (a corrupt profile) is its own job failure and the
others are stored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from itertools import groupby
from operator import itemgetter
from typing import Protocol, TypeVar

from sqlalchemy import DateTime, select, type_coerce
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.attributions import AttributionReference
from monitor.baselines.store import StoredBaseline
from monitor.config import ModelConfig
from monitor.detectors import DriftResult, ThresholdStrategy, evaluate, threshold_strategy
from monitor.profiles import OVERALL, ProfileSet, profiles_from_bytes, spec_of
from monitor.profiles.serving import ServingSummary
from monitor.results.store import store_drift_windows
from monitor.storage import (
    Change,
    WindowCount,
    WindowProfile,
    WindowServing,
    consume_changes,
    fetch_rows,
    transaction,
)

BATCH = 50
"""Windows per batch: ~15,000 result rows (one JSON parameter of a few MB) at 300 per window."""

Reference = tuple[ProfileSet, ThresholdStrategy, AttributionReference]
"""A version's baseline profiles, threshold strategy and reference attributions."""

ProfileRow = tuple[str, str, bytes]  # slice key, column, payload


class _Versioned(Protocol):
    @property
    def version(self) -> str: ...


V = TypeVar("V", bound=_Versioned)


def batches(windows: Iterable[V], size: int = BATCH) -> Iterator[list[V]]:
    """Changed windows grouped by version (in order of first appearance), `size` at a time."""
    by_version: dict[str, list[V]] = defaultdict(list)
    for window in windows:
        by_version[window.version].append(window)
    for group in by_version.values():
        for i in range(0, len(group), size):
            yield group[i : i + size]


def where_of(model: str, version: str, start: datetime) -> str:
    """How errors name a window (a corrupt profile's message starts with it)."""
    return f"model '{model}' version '{version}' window {start.isoformat()}"


def profile_set(
    where: str,
    rows: Iterable[ProfileRow],
    counts: Iterable[tuple[str, int]],
    slice_by: Sequence[str],
) -> ProfileSet:
    """A window's stored profile rows and slice counts as a ProfileSet (CorruptProfileError)."""
    return profile_sets([(where, list(rows), counts)], slice_by)[0]


def profile_sets(
    windows: Sequence[tuple[str, Sequence[ProfileRow], Iterable[tuple[str, int]]]],
    slice_by: Sequence[str],
) -> list[ProfileSet]:
    """Several windows' (where, profile rows, slice counts) as ProfileSets, their payloads
    decoded together: one stacked decode per column spec for the whole batch instead of one
    per window and spec (a 50-window batch: ~20 array passes instead of ~1,000). A corrupt
    payload raises CorruptProfileError naming its window and slice."""
    flat = [(where, row) for where, rows, _ in windows for row in rows]
    decoded = iter(profiles_from_bytes(
        [payload for _, (_, _, payload) in flat],
        lambda i: f"{flat[i][0]} slice {flat[i][1][0] or 'overall'}",
    ))  # fmt: skip
    out = []
    for _, rows, counts in windows:
        profiles = {(key, col): next(decoded) for key, col, _ in rows}
        specs = {col: spec_of(p) for (key, col), p in profiles.items() if key == OVERALL}
        out.append(ProfileSet(profiles, {k: int(n) for k, n in counts}, tuple(slice_by), specs))
    return out


def thresholds_for(cfg: ModelConfig, baseline: StoredBaseline) -> ThresholdStrategy:
    """The model's configured threshold strategy over its baseline's variability."""
    t = cfg.drift.thresholds
    return threshold_strategy(t.strategy, baseline.variability, t.k, t.floor_fraction)


def drift_of(
    cfg: ModelConfig,
    reference: Reference,
    current: ProfileSet,
    served: Mapping[str, ServingSummary] | None,
) -> list[DriftResult]:
    """A window's drift results: its profiles against the baseline, then its attributions
    (`served`: the window's serving summaries by slice key; None when the baseline has none)."""
    profiles, thresholds, attributions = reference
    results = evaluate(
        profiles,
        current,
        methods=cfg.drift.methods or None,
        thresholds=thresholds,
        alpha=cfg.drift.alpha,
        evidence_alpha=cfg.drift.evidence_alpha,
        min_n=cfg.drift.min_n,
    )
    if served is not None:
        results = [*results, *attributions.drift(served, cfg.drift.min_n)]
    return results


def evaluate_batch(
    engine: Engine,
    cfg: ModelConfig,
    changes: Sequence[Change],
    reference: Reference,
    seen: Callable[[str, datetime, ProfileSet], None] | None = None,
) -> list[list[DriftResult]]:
    """Evaluate, store and consume one version's changed windows in one transaction; each
    window's results in the order of `changes`. Raises whatever one window raises. `seen`
    gets each window's decoded profiles once the batch is stored (its days merge them)."""
    model, version = changes[0].model, changes[0].version
    starts = [c.start for c in changes]
    slice_by = reference[0].slice_by or cfg.slices
    with transaction(engine) as s:
        rows, counts = _profiles(s, model, version, starts)
        served = _served(s, model, version, starts) if reference[2].overall else None
        currents = profile_sets(
            [(where_of(model, version, c.start), rows[c.start], counts[c.start]) for c in changes],
            slice_by,
        )
        done = [
            drift_of(cfg, reference, current, None if served is None else served[c.start])
            for c, current in zip(changes, currents, strict=True)
        ]
        store_drift_windows(
            s, model, version, [((c.start, c.end), r) for c, r in zip(changes, done, strict=True)]
        )
        consume_changes(s, "drift", changes)
    if seen is not None:
        for c, current in zip(changes, currents, strict=True):
            seen(version, c.start, current)
    return done


def _profiles(
    s: Session, model: str, version: str, starts: Sequence[datetime]
) -> tuple[dict[datetime, list[ProfileRow]], dict[datetime, list[tuple[str, int]]]]:
    """The windows' profile rows and slice counts by window start. The rows are grouped by
    runs of one window (the index returns them so; any order is right): ~40,000 per burst, and
    hashing an aware datetime per row costs more than reading the row. The start is read
    without its per-row UTC conversion, done per run."""
    p, c = WindowProfile, WindowCount
    start = type_coerce(p.window_start, DateTime(timezone=True))
    stmt = select(start, p.slice_key, p.column, p.payload).where(
        p.model == model, p.version == version, p.window_start.in_(starts)
    )
    rows: dict[datetime, list[ProfileRow]] = defaultdict(list)
    for at, run in groupby(fetch_rows(s, stmt), key=itemgetter(0)):
        rows[at.astimezone(UTC)].extend((key, col, payload) for _, key, col, payload in run)
    counts: dict[datetime, list[tuple[str, int]]] = defaultdict(list)
    by_window = select(c.window_start, c.slice_key, c.events).where(
        c.model == model, c.version == version, c.window_start.in_(starts)
    )
    for at, key, n in fetch_rows(s, by_window):
        counts[at].append((key, n))
    return rows, counts


def _served(
    s: Session, model: str, version: str, starts: Sequence[datetime]
) -> dict[datetime, dict[str, ServingSummary]]:
    t = WindowServing
    out: dict[datetime, dict[str, ServingSummary]] = defaultdict(dict)
    stmt = select(t).where(t.model == model, t.version == version, t.window_start.in_(starts))
    for row in s.scalars(stmt):
        out[row.window_start][row.slice_key] = ServingSummary.from_row(row)
    return out
