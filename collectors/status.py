"""What the collectors have done so far, read from the database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors._http_bodies import ADAPTERS, SOURCES
from monitor.config import SourceConfig
from monitor.storage import IngestCounter, IntakeEntry, SourcePosition, WindowCount


@dataclass(frozen=True)
class SourceStatus:
    """Totals of one source; `lag` is known end minus committed position, as of its last batch."""

    name: str
    type: str
    events: int
    labels: int
    dead_letters: int
    late: int
    lag: int


@dataclass(frozen=True)
class ModelStatus:
    """Events aggregated per model version, and in how many windows."""

    name: str
    version: str
    events: int
    windows: int


@dataclass(frozen=True)
class CollectStatus:
    """Sources and models, as `modelwatch status --json` prints them."""

    sources: list[SourceStatus]
    models: list[ModelStatus]
    # HTTP requests appended to the intake log and not yet aggregated (their events are the
    # `lag` of the `http` and `http-cloudevents` sources).
    intake_backlog: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources": [asdict(s) for s in self.sources],
            "models": [asdict(m) for m in self.models],
            "intake_backlog": self.intake_backlog,
        }


def collect_status(engine: Engine, configured: Sequence[SourceConfig] = ()) -> CollectStatus:
    """Counters per source (configured ones first, even if idle) and per model version."""
    with Session(engine) as session:
        counters = {c.source: c for c in session.execute(select(IngestCounter)).scalars()}
        lag = dict(
            session.execute(
                select(
                    SourcePosition.source,
                    func.sum(SourcePosition.end_offset - SourcePosition.offset),
                ).group_by(SourcePosition.source)
            ).all()
        )
        requests = _intake_lag(session, lag)
        models = session.execute(
            select(
                WindowCount.model,
                WindowCount.version,
                func.sum(WindowCount.events),
                func.count(WindowCount.window_start),
            )
            .where(WindowCount.slice_key == "")
            .group_by(WindowCount.model, WindowCount.version)
            .order_by(WindowCount.model, WindowCount.version)
        ).all()
    seen = set(counters) | {name for name, n in lag.items() if n}
    names = [s.name for s in configured] + sorted(seen - {s.name for s in configured})
    types = {s.name: s.type for s in configured}
    sources = []
    for name in names:
        c = counters.get(name)
        sources.append(
            SourceStatus(
                name,
                c.type if c else types.get(name, "?"),
                c.events if c else 0,
                c.labels if c else 0,
                c.dead_letters if c else 0,
                c.late if c else 0,
                int(lag.get(name) or 0),
            )
        )
    model_rows = [ModelStatus(m, v, int(e or 0), int(w)) for m, v, e, w in models]
    return CollectStatus(sources, model_rows, requests)


def _intake_lag(session: Session, lag: dict[str, Any]) -> int:
    """Add the intake log's pending events to its sources' lag; returns pending requests."""
    pending = session.execute(
        select(IntakeEntry.kind, func.count(), func.sum(IntakeEntry.events))
        .where(IntakeEntry.consumed_at.is_(None))
        .group_by(IntakeEntry.kind)
    ).all()
    for kind, _, events in pending:
        source = SOURCES[ADAPTERS.get(kind, "modelwatch")][0]
        lag[source] = int(lag.get(source) or 0) + int(events or 0)
    return sum(int(n) for _, n, _ in pending)
