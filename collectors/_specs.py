"""Which spec (bin edges, categories) a window profile is built on, and building batch profiles.

Order, per (model, version, column), cached for the life of the collector:
1. the baseline the evaluator will compare the version with
   (`monitor.baselines.store.choose_baseline`: the version's own baseline of the model's
   configured name, else another version's), so windows and their baseline share edges;
2. an existing window profile of the same model version and column (so restarts and replicas
   keep the spec they started with);
3. learned from the first batch of the model version's first window (all its values of that
   column), then kept through the profiles stored with it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors._base import Rejection
from collectors._derived import Deriver
from collectors._plan import GroupKey, Plan, WindowKey
from collectors._profiling import Profile, ProfileBackend
from collectors._windows import WindowBatch
from monitor.baselines.store import baseline_spec_payloads
from monitor.common.cache import BoundedCache
from monitor.storage import WindowProfile

SpecKey = tuple[str, str, str]  # (model, version, column)
_NOT_NUMBERS = frozenset({str, bool})  # a boolean is categorical, never silently 1.0


@dataclass(frozen=True, slots=True)
class BuiltProfile:
    """A batch's profile of one column in one group."""

    kind: str
    profile: Profile


def kind_mismatches(plan: Plan, resolver: SpecResolver) -> dict[tuple[str, int], Rejection]:
    """Records holding a string or boolean in a column whose known spec is numeric."""
    bad: dict[tuple[str, int], Rejection] = {}
    resolver.new_batch()
    for (model, version, _), window in plan.windows.items():
        for column, values in window.columns.items():
            if not _NOT_NUMBERS & window.types[column]:
                continue
            if resolver.kind_of(model, version, column) != "numeric":
                continue
            where = column if column.startswith("prediction") else f"features.{column}"
            reason = Rejection("wrong_type", f"{where}: expected number (column is numeric)")
            for i, value in enumerate(values):
                if type(value) in _NOT_NUMBERS:
                    bad[plan.origin(window.origin[i])] = reason
    return bad


# Specs kept per collector process (least recently used dropped first, loaded again on use):
# a fleet of 1,000 models of 20 columns and two live versions each is 40,000.
SPEC_CACHE_SIZE = 50_000
_NONE_STORED = object()  # looked up: neither a baseline nor a window profile holds a spec yet


class SpecResolver:
    """Finds or learns the spec of each (model, version, column), loaded when a model's events
    first need it and kept in a bounded cache (`cache_size` specs)."""

    def __init__(
        self,
        engine: Engine,
        backend: ProfileBackend,
        baselines: Mapping[str, str] | None = None,
        cache_size: int = SPEC_CACHE_SIZE,
    ) -> None:
        self.engine = engine
        self.backend = backend
        # model -> name of the baseline it is compared with (default "default")
        self.baselines = dict(baselines or {})
        self.cache: BoundedCache[SpecKey, Any] = BoundedCache(cache_size)
        # The baseline specs of the versions one batch touched, read once per version and batch
        # (`kind_mismatches`, the first step of each batch, calls `new_batch`, which forgets
        # them: a baseline created meanwhile is seen by the next batch).
        self._baseline_payloads: dict[tuple[str, str], dict[str, bytes]] = {}
        # Derived columns (`collectors._derived`) of versions whose baseline stores estimation.
        self.derived = Deriver(engine, self.baselines)

    def kind_of(self, model: str, version: str, column: str) -> str | None:
        """The kind of an already known spec (baseline or stored window); None if not known yet."""
        key = (model, version, column)
        spec = self.cache.get(key)
        if spec is None:
            payload = self._stored(key)
            spec = _NONE_STORED if payload is None else self.backend.spec_of(payload)
            self.cache[key] = spec
        return None if spec is _NONE_STORED else self.backend.kind(spec)

    def new_batch(self) -> None:
        """Forget the baseline specs read for the previous batch (the decoded specs stay)."""
        self._baseline_payloads.clear()

    def _stored(self, key: SpecKey) -> bytes | None:
        model, version, column = key
        payloads = self._baseline_payloads.get((model, version))
        if payloads is None:
            name = self.baselines.get(model, "default")
            payloads = baseline_spec_payloads(self.engine, model, version, name)
            self._baseline_payloads[(model, version)] = payloads
        found = payloads.get(column)
        if found is not None:
            return found
        with Session(self.engine) as session:
            return _window_payload(session, key)

    def forget(self, model: str, version: str, column: str) -> None:
        """Drop the cached spec of a column whose stored window profile uses another one (a
        replica learned it first): the next batch reads the stored spec (order 2 above)."""
        self.cache.pop((model, version, column))

    def resolve(self, key: SpecKey, sample: Callable[[], Sequence[Any]]) -> Any:
        """The spec of `key`: cached, stored, or learned from `sample()`."""
        spec = self.cache.get(key)
        if spec is None or spec is _NONE_STORED:
            payload = None if spec is _NONE_STORED else self._stored(key)
            if payload:
                spec = self.backend.spec_of(payload)
            else:
                spec = self.backend.learn(key[2], sample())
            self.cache[key] = spec
        return spec


def _window_payload(session: Session, key: SpecKey) -> bytes | None:
    model, version, column = key
    stmt = (
        select(WindowProfile.payload)
        .where(WindowProfile.model == model, WindowProfile.version == version)
        .where(WindowProfile.column == column, WindowProfile.slice_key == "")
        .limit(1)
    )
    return session.execute(stmt).scalar_one_or_none()


Built = dict[tuple[GroupKey, str], BuiltProfile]


def profile_builder(
    windows: dict[WindowKey, WindowBatch], resolver: SpecResolver
) -> Callable[[Iterable[WindowKey]], Built]:
    """A function that profiles every column of some of a batch's windows, overall and per
    slice, on its spec (derived columns included: their specs are the baseline calibration's,
    learned here once). A batch's windows are profiled a bounded number at a time as they are
    written (`collectors._store.merge_profiles`): a batch of a whole window of a fleet's
    traffic holds profiles for ~1,000 models' windows otherwise."""
    for key, spec in resolver.derived.add(windows).items():
        resolver.cache[key] = spec
    return functools.partial(_build, windows, resolver)


def build_profiles(windows: dict[WindowKey, WindowBatch], resolver: SpecResolver) -> Built:
    """Every window's profiles at once (`profile_builder`)."""
    return profile_builder(windows, resolver)(windows)


def _build(
    windows: dict[WindowKey, WindowBatch], resolver: SpecResolver, keys: Iterable[WindowKey]
) -> Built:
    backend = resolver.backend
    built: Built = {}
    for model, version, start in keys:
        window = windows[(model, version, start)]
        for column, values in window.columns.items():
            key = (model, version, column)
            spec = resolver.resolve(key, functools.partial(_sample, windows, key))
            kind = backend.kind(spec)
            encoded = window.arrays.get(column) if kind == "numeric" else None
            subsets = list(window.slices.values())
            profiles = backend.build(spec, values if encoded is None else encoded, subsets)
            for slice_key, profile in zip(window.slices, profiles, strict=True):
                built[((model, version, start, slice_key), column)] = BuiltProfile(kind, profile)
    return built


def _sample(windows: dict[WindowKey, WindowBatch], key: SpecKey) -> list[Any]:
    """A column's values in all of a batch's windows of one model version (to learn a spec)."""
    model, version, column = key
    return [
        value
        for (m, v, _), window in windows.items()
        if (m, v) == (model, version)
        for value in window.columns.get(column, [])
    ]
