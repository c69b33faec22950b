"""A window of one model version as the evaluation sees it: its change marker, its stored
profiles, what one evaluation of it produced, and clearing its marker once evaluated."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.baselines.store import baseline_for
from monitor.config import ModelConfig
from monitor.detectors import DriftResult
from monitor.evaluation._drift_batch import profile_set, where_of
from monitor.evaluation.period_jobs import WINDOW_ITEMS
from monitor.failures import window_item
from monitor.outcomes import OutcomeResult
from monitor.profiles import ProfileSet
from monitor.storage import (
    Change,
    WindowCount,
    WindowProfile,
    consume_changes,
    pending_changes,
    session_factory,
)


@dataclass(frozen=True)
class Window:
    """One model version's window of traffic, `[start, end)` in UTC."""

    model: str
    version: str
    start: datetime
    end: datetime
    # The change marker's sequence number when read (monitor/storage/_changes.py).
    seq: int = field(default=0, compare=False)


@dataclass
class WindowEvaluation:
    """What one evaluation of one window produced."""

    window: Window
    drift: list[DriftResult] = field(default_factory=list)
    outcomes: list[OutcomeResult] = field(default_factory=list)
    seconds: float = 0.0


def changed_windows(engine: Engine, model: str) -> list[Window]:
    """Windows whose profiles changed since their last drift evaluation, oldest first."""
    return [_window(c) for c in pending_changes(engine, model, "drift")]


def labeled_windows(engine: Engine, model: str, window_s: float) -> list[Window]:
    """Windows with labels joined since their last outcome evaluation, oldest first."""
    return [_window(c) for c in pending_changes(engine, model, "outcome")]


def _window(change: Change) -> Window:
    return Window(change.model, change.version, change.start, change.end, change.seq)


def _change(window: Window) -> Change:
    return Change(window.model, window.version, window.start, window.end, window.seq)


def _item(kind: str, cfg: ModelConfig, window: Window) -> str:
    """The evaluate job's item name of one window's drift or outcome evaluation."""
    return window_item(WINDOW_ITEMS[kind], cfg.name, window.version, window.start)


def consume(engine: Engine, kind: str, windows: Sequence[Window]) -> None:
    """Mark windows evaluated unless they changed again since they were read."""
    consume_changes(engine, kind, [_change(w) for w in windows])


class Consumed:
    """Evaluated windows, their markers cleared `batch` at a time (one transaction each).

    A crash before `flush` only means those windows are evaluated again next tick.
    """

    def __init__(self, engine: Engine, kind: str, batch: int = 100) -> None:
        self.engine, self.kind, self.batch = engine, kind, batch
        self.windows: list[Window] = []

    def add(self, window: Window) -> None:
        self.windows.append(window)
        if len(self.windows) >= self.batch:
            self.flush()

    def flush(self) -> None:
        consume(self.engine, self.kind, self.windows)
        self.windows = []


def window_profiles(
    engine: Engine | Session, window: Window, slice_by: Sequence[str]
) -> ProfileSet:
    """The window's stored profiles as a ProfileSet (overall and per slice).

    Given a Session, reads in it (the drift job reads and stores a window on one connection).
    """
    if isinstance(engine, Session):
        return _window_profiles(engine, window, slice_by)
    with session_factory(engine)() as s:
        return _window_profiles(s, window, slice_by)


def _window_profiles(s: Session, window: Window, slice_by: Sequence[str]) -> ProfileSet:
    prof_rows = s.execute(
        select(WindowProfile.slice_key, WindowProfile.column, WindowProfile.payload).where(
            WindowProfile.model == window.model,
            WindowProfile.version == window.version,
            WindowProfile.window_start == window.start,
        )
    ).all()
    counts = s.execute(
        select(WindowCount.slice_key, WindowCount.events).where(
            WindowCount.model == window.model,
            WindowCount.version == window.version,
            WindowCount.window_start == window.start,
        )
    ).all()
    where = where_of(window.model, window.version, window.start)
    return profile_set(where, prof_rows, counts, slice_by)


def reference_for(engine: Engine, model: str, version: str, name: str) -> ProfileSet | None:
    """The profiles of the baseline `choose_baseline` picks; None when there is none."""
    found = baseline_for(engine, model, version, name)
    return None if found is None else found.profiles
