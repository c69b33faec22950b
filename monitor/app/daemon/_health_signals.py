"""Alert signals about the pipeline itself: failing evaluations, lag, dead letters, silence.

* `evaluation_failed` per model version: value = its failing items of the evaluate job
  (windows, the baseline); firing while any fails, resolving when they all succeed again.
* `ingest_lag` per lagging source: messages between the committed position and the end.
* `dead_letter_rate` per source: dead letters / (events + dead letters) since the previous
  evaluation (the first one: since the source started); firing when above 0.
* `no_data` per model: minutes since the model's last event was written; firing after two
  windows without one, or when the model never had one (value None).
Rules with `above:` set their own bound on each value.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from alerts import Signal
from monitor.failures import list_failures
from monitor.storage import IngestCounter, SourcePosition, WindowCount, session_factory

NO_DATA_WINDOWS = 2


def evaluation_failed_signals(
    engine: Engine, job: str, models: Iterable[str], now: datetime
) -> list[Signal]:
    """One firing signal per model version with failing items of `job`."""
    wanted = set(models)
    failing: dict[tuple[str, str], int] = {}
    for f in list_failures(engine, job):
        if f.model in wanted:
            key = (f.model, f.version or "")
            failing[key] = failing.get(key, 0) + 1
    return [
        Signal("evaluation_failed", {"model": m, "version": v}, float(n), None, True, now)
        for (m, v), n in sorted(failing.items())
    ]


def ingest_lag_signals(engine: Engine, now: datetime) -> list[Signal]:
    """Messages each lagging source is behind the end of its topics or files.

    Only rows that are behind are read (the partial index of migration 0013), so the cost
    follows the lagging partitions, not the one row per HTTP idempotency key; a source that
    caught up has no signal, which resolves its alert.
    """
    behind = func.sum(SourcePosition.end_offset - SourcePosition.offset)
    with session_factory(engine)() as s:
        rows = s.execute(
            select(SourcePosition.source, behind)
            .where(SourcePosition.end_offset > SourcePosition.offset)
            .group_by(SourcePosition.source)
        ).all()
    return [
        Signal("ingest_lag", {"source": src}, float(max(lag or 0, 0)), None, (lag or 0) > 0, now)
        for src, lag in rows
    ]


class DeadLetterRate:
    """`dead_letter_rate` signals; remembers each source's totals between evaluations."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, int]] = {}

    def __call__(self, engine: Engine, now: datetime) -> list[Signal]:
        with session_factory(engine)() as s:
            rows = s.execute(
                select(IngestCounter.source, IngestCounter.events, IngestCounter.dead_letters)
            ).all()
        out = []
        for source, events, dead in rows:
            before_events, before_dead = self._seen.get(source, (0, 0))
            d_events, d_dead = max(events - before_events, 0), max(dead - before_dead, 0)
            self._seen[source] = (events, dead)
            total = d_events + d_dead
            rate = d_dead / total if total else 0.0
            out.append(Signal("dead_letter_rate", {"source": source}, rate, None, rate > 0, now))
        return out


def no_data_signals(
    engine: Engine, models: Iterable[str], window: timedelta, now: datetime
) -> list[Signal]:
    """Minutes since each model's last event; firing after `NO_DATA_WINDOWS` windows."""
    names = list(models)
    # One indexed max per model (a GROUP BY over all models would scan every window kept).
    newest = select(func.max(WindowCount.updated_at))
    with session_factory(engine)() as s:
        last = {m: s.scalar(newest.where(WindowCount.model == m)) for m in names}
    limit = NO_DATA_WINDOWS * window
    out = []
    for model in names:
        at = last.get(model)
        minutes = None if at is None else max((now - at).total_seconds(), 0.0) / 60.0
        firing = at is None or now - at > limit
        out.append(
            Signal("no_data", {"model": model}, minutes, limit.total_seconds() / 60, firing, now)
        )
    return out
