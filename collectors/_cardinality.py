"""Caps on what one window can grow to: distinct versions per model, columns per version.

Every distinct model version and every distinct column name of an event becomes rows (window
counts and profiles, per slice, for every window). One client sending a new version string per
request, or new feature names per event, would grow storage and every evaluation without
bound. So per model and event-time window, at most `collect.max_versions_per_window` versions
are taken, and per model version and window at most `collect.max_columns_per_window` columns
(features and prediction outputs); an event past either cap is a dead letter
(`too_many_versions`, `too_many_columns`) naming the value, and the rest of its batch goes on.

The caps hold across restarts and replicas: before a process takes a version (or columns) it
has not yet counted for a window, it reads what is already stored for that window (`Stored`:
the versions of `window_counts`, the columns of `window_profiles`, both on their primary key's
prefix) and counts that too. Reads happen only then, never per event: per process and window at
most about `2 * cap` reads (each either takes a name, finds it stored, or finds the cap reached,
after which names are refused from memory), one per (model, window) and (model, version,
window) in steady traffic. Two replicas taking a new name at the same instant can each take the
last free place, so the stored total is at most the cap plus the replicas less one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection
from typing import Any, Protocol

import numpy as np
from sqlalchemy import select, tuple_
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors._base import Rejection
from collectors._edge import safe_text
from collectors._table import EventTable
from collectors._validate import utc
from monitor.storage import WindowCount, WindowProfile

__all__ = ["Cardinality", "NothingStored", "Stored", "StoredNames"]

Group = tuple[str, str, float]  # (model, version, window start)
# Columns derived at ingest (`monitor.estimation`: `__cbpe_score`, `__pca_error`, ...) are
# stored beside the event's own but are not counted against the cap.
DERIVED_PREFIX = "__"
# Windows per prefetching select (3 bound values each: well under the databases' limits).
GROUPS_PER_SELECT = 500


class Stored(Protocol):
    """What storage already holds for a window (written by any process, before or now)."""

    def versions(self, model: str, start: float) -> set[str]:
        """Versions of `model` with events in the window starting at `start`."""
        ...

    def columns(self, model: str, version: str, start: float) -> set[str]:
        """Event columns profiled for `model` `version` in the window starting at `start`."""
        ...

    def prefetch(self, groups: Collection[Group]) -> None:
        """Read at once what `versions` and `columns` are about to be asked of these
        windows (a batch of a fleet's traffic first meets ~1,000 models' windows at once)."""
        ...


class NothingStored:
    """No storage (planning alone, in tests): only this process's counts."""

    def versions(self, model: str, start: float) -> set[str]:
        return set()

    def columns(self, model: str, version: str, start: float) -> set[str]:
        return set()

    def prefetch(self, groups: Collection[Group]) -> None:
        return None


class StoredNames:
    """`Stored` read from the database; `retry(action)` retries outages (the ingestor's)."""

    def __init__(
        self, engine: Engine, retry: Callable[[Callable[[], Any]], Any] = lambda f: f()
    ) -> None:
        self.engine = engine
        self.retry = retry
        # What `prefetch` read, until the next `prefetch` (the caller's batch).
        self._versions: dict[tuple[str, float], set[str]] = {}
        self._columns: dict[Group, set[str]] = {}

    def prefetch(self, groups: Collection[Group]) -> None:
        """One select per table (per GROUPS_PER_SELECT windows) for all of `groups`."""
        self._versions = {(m, start): set() for m, _, start in groups}
        self._columns = {group: set() for group in groups}
        wanted = sorted(self._columns)
        for i in range(0, len(wanted), GROUPS_PER_SELECT):
            chunk = wanted[i : i + GROUPS_PER_SELECT]
            at = {(m, utc(start)): start for m, _, start in chunk}
            counts, profiles = WindowCount.__table__.c, WindowProfile.__table__.c
            stmt = select(counts.model, counts.window_start, counts.version).where(
                tuple_(counts.model, counts.window_start).in_(list(at)), counts.slice_key == ""
            )
            for model, start, version in self._rows(stmt):
                self._versions[(model, at[(model, start)])].add(version)
            head = (profiles.model, profiles.version, profiles.window_start)
            groups_at = [(m, v, utc(start)) for m, v, start in chunk]
            stmt = select(*head, profiles.column).where(
                tuple_(*head).in_(groups_at), profiles.slice_key == ""
            )
            for model, version, start, column in self._rows(stmt):
                if not column.startswith(DERIVED_PREFIX):
                    self._columns[(model, version, at[(model, start)])].add(column)

    def _rows(self, stmt: Any) -> list[Any]:
        def read() -> list[Any]:
            with Session(self.engine) as session:
                return list(session.execute(stmt).all())

        return list(self.retry(read))

    def versions(self, model: str, start: float) -> set[str]:
        if (read := self._versions.get((model, start))) is not None:
            return set(read)
        stmt = select(WindowCount.version).where(
            WindowCount.model == model,
            WindowCount.window_start == utc(start),
            WindowCount.slice_key == "",
        )
        return self._names(stmt)

    def columns(self, model: str, version: str, start: float) -> set[str]:
        if (read := self._columns.get((model, version, start))) is not None:
            return set(read)
        stmt = select(WindowProfile.column).where(
            WindowProfile.model == model,
            WindowProfile.version == version,
            WindowProfile.window_start == utc(start),
            WindowProfile.slice_key == "",
        )
        return {c for c in self._names(stmt) if not c.startswith(DERIVED_PREFIX)}

    def _names(self, stmt: Any) -> set[str]:
        def read() -> set[str]:
            with Session(self.engine) as session:
                return set(session.scalars(stmt))

        return set(self.retry(read))


class Cardinality:
    """Versions per (model, window) and columns per (model, version, window) seen so far."""

    def __init__(
        self,
        window_s: float,
        lateness_s: float,
        max_versions: int,
        max_columns: int,
        stored: Stored | None = None,
    ) -> None:
        self.stored = stored or NothingStored()
        self.window_s = window_s
        self.keep_s = 2 * window_s + lateness_s  # windows older than this are closed
        self.max_versions = max_versions
        self.max_columns = max_columns
        self.versions: dict[tuple[str, float], set[str]] = defaultdict(set)
        self.columns: dict[Group, set[str]] = defaultdict(set)
        self.newest = -np.inf

    def over(self, table: EventTable) -> dict[int, Rejection]:
        """Rows of `table` past a cap, with the reason; counts what passes."""
        if not len(table):
            return {}
        starts = np.floor(table.ts / self.window_s) * self.window_s
        self._forget_before(float(starts.max()))
        out: dict[int, Rejection] = {}
        groups = _groups(table, starts)
        first_met = [
            g for g in groups if (g[0], g[2]) not in self.versions or g not in self.columns
        ]
        prefetched = len(first_met) > 1
        if prefetched:
            self.stored.prefetch(first_met)
        try:
            for group, rows in groups.items():
                rejection = self._version(group)
                if rejection is not None:
                    every = range(len(table)) if rows is None else rows
                    out.update(dict.fromkeys(every, rejection))
                    continue
                out.update(self._columns(table, group, rows))
        finally:
            if prefetched:  # what was read is not kept for a later batch, even on failure
                self.stored.prefetch(())
        return out

    def _version(self, group: Group) -> Rejection | None:
        model, version, start = group
        seen = self.versions[(model, start)]
        if version in seen:
            return None
        if len(seen) < self.max_versions:
            seen |= self.stored.versions(model, start)  # a restart's or a replica's
            if version in seen:
                return None
        if len(seen) < self.max_versions:
            seen.add(version)
            return None
        return Rejection(
            "too_many_versions",
            f"model_version: {safe_text(version)} would be version {len(seen) + 1} of model "
            f"{model!r} in the window from {utc(start).isoformat()}; at most "
            f"{self.max_versions} (collect.max_versions_per_window)",
        )

    def _columns(
        self, table: EventTable, group: Group, rows: list[int] | None
    ) -> dict[int, Rejection]:
        known = self.columns[group]
        names = _present(table, rows)
        if known.issuperset(names):
            return {}
        if len(known) < self.max_columns:
            known |= self.stored.columns(*group)  # a restart's or a replica's
            if known.issuperset(names):
                return {}
        # Prediction outputs first: every event has them, the features are what varies.
        new = sorted((c for c in names if c not in known), key=_feature)
        room = max(0, self.max_columns - len(known))
        known.update(new[:room])
        out: dict[int, Rejection] = {}
        for column in new[room:]:
            where = "prediction" if column.startswith("prediction") else "features"
            rejection = Rejection(
                "too_many_columns",
                f"{where}: name {safe_text(column)} would be column {len(known) + 1} of model "
                f"{group[0]!r} version {safe_text(group[1])} in the window from "
                f"{utc(group[2]).isoformat()}; at most {self.max_columns} "
                "(collect.max_columns_per_window)",
            )
            mask = table.present.get(column)
            for i in range(len(table)) if rows is None else rows:
                if (mask is None or mask[i]) and i not in out:
                    out[i] = rejection
        return out

    def _forget_before(self, start: float) -> None:
        """Drop the counts of windows long closed (bounded memory)."""
        if start <= self.newest:
            return
        self.newest = start
        cutoff = start - self.keep_s
        for versions in [k for k in self.versions if k[1] < cutoff]:
            del self.versions[versions]
        for columns in [k for k in self.columns if k[2] < cutoff]:
            del self.columns[columns]


def _groups(table: EventTable, starts: np.ndarray) -> dict[Group, list[int] | None]:
    """Rows per (model, version, window start); None: all rows (one group, the common case)."""
    if len(set(table.model)) == 1 and len(set(table.version)) == 1 and starts.min() == starts.max():
        return {(table.model[0], table.version[0], float(starts[0])): None}
    out: dict[Group, list[int] | None] = {}
    for i, key in enumerate(zip(table.model, table.version, starts.tolist(), strict=True)):
        rows = out.setdefault(key, [])
        assert rows is not None
        rows.append(i)
    return out


def _feature(column: str) -> bool:
    return not column.startswith("prediction")


def _present(table: EventTable, rows: list[int] | None) -> list[str]:
    """The columns some event of `rows` has, in first-seen order."""
    out = []
    for column in table.columns:
        mask = table.present.get(column)
        if mask is None:
            out.append(column)
        elif any(mask) if rows is None else any(mask[i] for i in rows):
            out.append(column)
    return out
