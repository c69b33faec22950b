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

from collectors.base import PredictionEvent, Rejection
from collectors.plan import GroupKey, Plan, WindowKey, prediction_columns
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
    feats = [e.features for e in events]
    names = list(feats[0])
    try:
        # Fast path (every event has the same features): C-level gather and transpose.
        if len(names) > 1 and all(len(f) == len(names) for f in feats):
            rows = list(map(itemgetter(*names), feats))
            out = {c: list(col) for c, col in zip(names, zip(*rows, strict=True), strict=True)}
        else:
            raise KeyError
    except KeyError:
        names = list(dict.fromkeys(c for f in feats for c in f))
        out = {c: [f.get(c) for f in feats] for c in names}
    if all(type(e.prediction) in (int, float) for e in events):
        out["prediction"] = [e.prediction for e in events]
        return out
    preds = [prediction_columns(e.prediction) for e in events]
    for c in dict.fromkeys(c for p in preds for c in p):
        out[c] = [p.get(c) for p in preds]
    return out


def kind_mismatches(plan: Plan, resolver: SpecResolver) -> dict[tuple[str, int], Rejection]:
    """Records holding a string in a column whose known spec is numeric (fills plan.columns)."""
    bad: dict[tuple[str, int], Rejection] = {}
    for wkey, events in plan.windows.items():
        columns = plan.columns.setdefault(wkey, column_values(events))
        for column, values in columns.items():
            if str not in set(map(type, values)):
                continue
            if resolver.kind_of(wkey[0], wkey[1], column) != "numeric":
                continue
            where = column if column.startswith("prediction") else f"features.{column}"
            reason = Rejection("wrong_type", f"{where}: expected number (column is numeric)")
            for i, value in enumerate(values):
                if type(value) is str:
                    bad[plan.origins[wkey][i]] = reason
    return bad


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
    cached: dict[WindowKey, dict[str, list[Any]]],
) -> dict[tuple[GroupKey, str], BuiltProfile]:
    """Profile every column of every group of a batch, on its resolved spec."""
    backend = resolver.backend
    columns = {w: cached.get(w) or column_values(events) for w, events in windows.items()}
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
