"""Which spec (bin edges, categories) a window profile is built on, and building batch profiles.

Order, per (model, version, column), cached for the life of the collector:
1. the model version's stored baseline (the newest one; its overall profile of the column);
2. an existing window profile of the same model version and column (so restarts and replicas
   keep the spec they started with);
3. learned from the first batch of the model version's first window (all its values of that
   column), then kept through the profiles stored with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors.base import PredictionEvent
from collectors.plan import GroupKey, WindowKey, prediction_columns
from collectors.profiling import Profile, ProfileBackend
from monitor.storage import Baseline, BaselineProfile, Model, ModelVersion, WindowProfile

SpecKey = tuple[str, str, str]  # (model, version, column)


@dataclass(frozen=True, slots=True)
class BuiltProfile:
    """A batch's profile of one column in one group."""

    kind: str
    profile: Profile


def column_values(events: Sequence[PredictionEvent]) -> dict[str, list[Any]]:
    """Values per column (features, then prediction columns); missing values are None."""
    preds = [prediction_columns(e.prediction) for e in events]
    names: dict[str, None] = {}
    for e in events:
        names.update(dict.fromkeys(e.features))
    for p in preds:
        names.update(dict.fromkeys(p))
    out = {c: [e.features.get(c) for e in events] for c in names if not c.startswith("prediction")}
    for c in names:
        if c.startswith("prediction"):
            out[c] = [p.get(c) for p in preds]
    return out


class SpecResolver:
    """Finds or learns the spec of each (model, version, column)."""

    def __init__(self, engine: Engine, backend: ProfileBackend) -> None:
        self.engine = engine
        self.backend = backend
        self.cache: dict[SpecKey, Any] = {}
        self.missing: set[SpecKey] = set()

    def kind_of(self, model: str, version: str, column: str) -> str | None:
        """The kind of an already known spec (baseline or stored window); None if not known yet."""
        key = (model, version, column)
        if key not in self.cache and key not in self.missing:
            payload = self._stored(key)
            if payload is None:
                self.missing.add(key)
            else:
                self.cache[key] = self.backend.spec_of(payload)
        spec = self.cache.get(key)
        return None if spec is None else self.backend.kind(spec)

    def _stored(self, key: SpecKey) -> bytes | None:
        with Session(self.engine) as session:
            return _baseline_payload(session, key) or _window_payload(session, key)

    def resolve(self, key: SpecKey, sample: Sequence[Any]) -> Any:
        spec = self.cache.get(key)
        if spec is None:
            payload = None if key in self.missing else self._stored(key)
            spec = self.backend.spec_of(payload) if payload else self.backend.learn(key[2], sample)
            self.cache[key] = spec
            self.missing.discard(key)
        return spec


def _baseline_payload(session: Session, key: SpecKey) -> bytes | None:
    model, version, column = key
    stmt = (
        select(BaselineProfile.payload)
        .join(Baseline, BaselineProfile.baseline_id == Baseline.id)
        .join(ModelVersion, Baseline.model_version_id == ModelVersion.id)
        .join(Model, ModelVersion.model_id == Model.id)
        .where(Model.name == model, ModelVersion.version == version)
        .where(BaselineProfile.slice_key == "", BaselineProfile.column == column)
        .order_by(Baseline.created_at.desc(), Baseline.id.desc())
        .limit(1)
    )
    return session.execute(stmt).scalar_one_or_none()


def _window_payload(session: Session, key: SpecKey) -> bytes | None:
    model, version, column = key
    stmt = (
        select(WindowProfile.payload)
        .where(WindowProfile.model == model, WindowProfile.version == version)
        .where(WindowProfile.column == column, WindowProfile.slice_key == "")
        .limit(1)
    )
    return session.execute(stmt).scalar_one_or_none()


def _gather(values: list[Any], indices: list[int], total: int) -> list[Any]:
    if len(indices) == total:
        return values
    if len(indices) == 1:
        return [values[indices[0]]]
    return list(itemgetter(*indices)(values))


def build_profiles(
    windows: dict[WindowKey, list[PredictionEvent]],
    groups: dict[GroupKey, list[int]],
    resolver: SpecResolver,
) -> dict[tuple[GroupKey, str], BuiltProfile]:
    """Profile every column of every group of a batch, on its resolved spec."""
    backend = resolver.backend
    columns = {window: column_values(events) for window, events in windows.items()}
    samples: dict[SpecKey, list[Any]] = {}
    for (model, version, _), cols in columns.items():
        for column, vals in cols.items():
            samples.setdefault((model, version, column), []).extend(vals)
    built: dict[tuple[GroupKey, str], BuiltProfile] = {}
    for group, indices in groups.items():
        total = len(windows[group[:3]])
        for column, vals in columns[group[:3]].items():
            spec_key = (group[0], group[1], column)
            spec = resolver.resolve(spec_key, samples[spec_key])
            profile = backend.build(spec, _gather(vals, indices, total))
            built[(group, column)] = BuiltProfile(backend.kind(spec), profile)
    return built
