"""Which models' stored results a tick reads again for its signals and gauges.

A model's window results (drift, outcomes, estimates, fairness, serving summaries) change only
when its evaluation runs, and a tick evaluates only the models with work due (`_due`). So a
tick reads again the results of the models due in this tick or the one before (a unit that
finishes after its tick stopped waiting is read at the next), and reuses the others' signals
and gauges as they were; every `scheduler.results_refresh_s` it reads every model (results a
unit stored later still, or another process such as `modelwatch evaluate`, are seen then).
Signals that change with time alone (SLO burn rates, gate runs, no-data, lag) are read on
every tick whatever this says. With 1,000 models, reading every model's newest results cost
~35 s of a 10 s tick (bench/fleet.py, issue 40); an idle fleet now costs nothing per tick.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime


class ResultRefresh:
    """Decides per tick which models' results are read again (`models`)."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self._full_at: datetime | None = None
        self._previous: set[str] = set()

    def models(self, now: datetime, due: Iterable[str] | None) -> set[str] | None:
        """The models to read again at `now`, given the models `due` this tick (None: not
        known, e.g. the queue failed); None means every model (a full refresh)."""
        due_now = None if due is None else set(due)
        full = (
            due_now is None
            or self._full_at is None
            or (now - self._full_at).total_seconds() >= self.every_s
            or now < self._full_at  # the clock went back: start again
        )
        previous, self._previous = self._previous, due_now or set()
        if full:
            self._full_at = now
            return None
        assert due_now is not None
        return due_now | previous
