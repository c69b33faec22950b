"""What the collectors have done so far, read from the database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.config import SourceConfig
from monitor.storage import IngestCounter, SourcePosition, WindowCount


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources": [asdict(s) for s in self.sources],
            "models": [asdict(m) for m in self.models],
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
            )
            .tuples()
            .all()
        )
        models = (
            session.execute(
                select(
                    WindowCount.model,
                    WindowCount.version,
                    func.sum(WindowCount.events),
                    func.count(WindowCount.window_start),
                )
                .where(WindowCount.slice_key == "")
                .group_by(WindowCount.model, WindowCount.version)
                .order_by(WindowCount.model, WindowCount.version)
            )
            .tuples()
            .all()
        )
    names = [s.name for s in configured] + sorted(set(counters) - {s.name for s in configured})
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
    return CollectStatus(sources, [ModelStatus(m, v, int(e or 0), int(w)) for m, v, e, w in models])
