"""Derived columns at ingest: the CBPE score (a regression model: the expected losses) and the
PCA reconstruction error of each event.

When the baseline a model version is compared with (`monitor.baselines.store.choose_baseline`)
stores a calibration (`baseline create --score --label`) or a multivariate model
(`--features`), each window of a batch gets `__cbpe_score` and/or `__pca_error`
(`monitor.estimation` owns both), computed over the window's columns at once, then profiled
overall and per slice like any other column.

The score is the event's column named as the baseline's score column, else its `prediction`;
a multiclass baseline (`--score CLASS=COL` per class) gives `__cbpe_score.<k>` per class and
`__cbpe_predicted`, class k's score being the event's column named as that class's score
column, else element k of a list prediction (`prediction[k]`); the predicted class is the
event's own where its prediction names one of the baseline's classes (a label), else the highest
score (`monitor.estimation.predicted_classes`, as `modelwatch estimate --prediction`).
A regression baseline (`--task regression`) gives `__dle_absolute` and `__dle_squared`, each
event's expected loss from the baseline's loss models over its features and prediction.
A window whose derivation fails (a model that cannot score it) is logged and profiled without
the derived columns; the batch goes on. What a version's baseline stores is read once, and again
only when the model's baselines of that name changed: every `REFRESH_S` seconds one query reads
a stamp of every cached model's baselines (how many, the newest id and creation time: baselines
are never updated in place, a replaced one is a new row), so a baseline created, replaced or
deleted while the collector runs is picked up within `REFRESH_S`. Models that were unreadable
are read again then.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from collectors._windows import WindowBatch, WindowKey
from monitor.estimation import (
    ERROR_COLUMN,
    SCORE_COLUMN,
    StoredEstimation,
    StoredMulticlass,
    StoredMultivariate,
    StoredRegression,
    loss_values,
    multiclass_specs,
    multiclass_values,
    score_spec,
    stored_calibration,
    stored_multivariate,
)
from monitor.profiles import ColumnSpec
from monitor.storage import Baseline, Model, ModelVersion, session_factory

log = logging.getLogger(__name__)

REFRESH_S = 60.0
# A model's baselines of one name as last seen: how many, the newest id and creation time (SQLite
# gives a replaced newest baseline its id again); None: unreadable.
Stamp = tuple[int, int, str] | None
NONE: Stamp = (0, 0, "")  # no baseline of the name
PREDICTION = "prediction"
_NUMBER = (int, float)


@dataclass(frozen=True)
class DerivedModels:
    """What one model version's baseline stores for estimation (None: nothing)."""

    estimation: StoredEstimation | StoredMulticlass | StoredRegression | None
    multivariate: StoredMultivariate | None
    specs: dict[str, ColumnSpec]  # the specs of the estimation's derived columns, by column
    loaded_at: float
    stamp: Stamp = None  # the model's baselines when read; None: read again at the next check

    @property
    def empty(self) -> bool:
        return self.estimation is None and self.multivariate is None


class Deriver:
    """Adds the derived columns to a batch's windows; caches each version's stored models."""

    def __init__(
        self,
        engine: Engine,
        baselines: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = engine
        self.baselines = dict(baselines or {})
        self.clock = clock
        self.cache: dict[tuple[str, str], DerivedModels] = {}
        self.checked_at: float | None = None

    def models(self, model: str, version: str) -> DerivedModels:
        """The version's stored models, read again when its model's baselines changed (looked
        at every `REFRESH_S`)."""
        now = self.clock()
        if self.checked_at is None or now - self.checked_at >= REFRESH_S:
            self._check(now)
        found = self.cache.get((model, version))
        if found is None:
            found = self._load(model, version, now)
            self.cache[(model, version)] = found
        return found

    def _check(self, now: float) -> None:
        """Forget the cached versions whose model's baselines changed (one query for all)."""
        self.checked_at = now
        if not self.cache:
            return
        try:
            stamps = self._stamps(sorted({m for m, _ in self.cache}))
        except Exception as exc:  # the database is away: the cache serves, the next check retries
            log.warning("estimation models not checked for changes: %s", exc)
            return
        for key, found in list(self.cache.items()):
            if found.stamp is None or stamps.get(key[0], NONE) != found.stamp:
                del self.cache[key]

    def _stamps(self, models: list[str]) -> dict[str, Stamp]:
        """Per model, the stamp of its baselines of the name it is compared with."""
        stmt = (
            select(
                Model.name,
                Baseline.name,
                func.count(Baseline.id),
                func.max(Baseline.id),
                func.max(Baseline.created_at),
            )
            .join(ModelVersion, ModelVersion.model_id == Model.id)
            .join(Baseline, Baseline.model_version_id == ModelVersion.id)
            .where(Model.name.in_(models))
            .group_by(Model.name, Baseline.name)
        )
        with session_factory(self.engine)() as s:
            rows = s.execute(stmt).all()
        return {
            model: (int(n), int(newest), str(created))
            for model, name, n, newest, created in rows
            if name == self.baselines.get(model, "default")
        }

    def _load(self, model: str, version: str, now: float) -> DerivedModels:
        name = self.baselines.get(model, "default")
        try:
            # Read before the models: a change in between is seen at the next check.
            stamp = self._stamps([model]).get(model, NONE)
            est = stored_calibration(self.engine, model, version, name)
            mv = stored_multivariate(self.engine, model, version, name)
        except Exception as exc:  # a damaged baseline: no derived columns, not a failed batch
            log.warning("model %r version %r: estimation models unreadable: %s", model, version,
                        exc)  # fmt: skip
            stamp, est, mv = None, None, None
        return DerivedModels(est, mv, _specs(est), now, stamp)

    def add(
        self, windows: Mapping[WindowKey, WindowBatch]
    ) -> dict[tuple[str, str, str], ColumnSpec]:
        """Add the derived columns to each window in place; returns the spec per (model,
        version, column) of the estimation columns given (their profiles must be built on it)."""
        specs: dict[tuple[str, str, str], ColumnSpec] = {}
        for (model, version, start), window in windows.items():
            found = self.models(model, version)
            if found.empty or not len(window):
                continue
            try:
                derived = derive(window, found)
            except Exception as exc:  # one window that cannot be scored never stops the batch
                log.warning("model %r version %r window %s: derived columns skipped: %s",
                            model, version, start, exc)  # fmt: skip
                continue
            for column, values in derived.items():
                window.columns[column] = values  # type: ignore[assignment]
                window.arrays[column] = values
                window.types[column] = {float}
            specs.update({(model, version, c): spec for c, spec in found.specs.items()
                          if c in derived})  # fmt: skip
        return specs


def _specs(
    est: StoredEstimation | StoredMulticlass | StoredRegression | None,
) -> dict[str, ColumnSpec]:
    if isinstance(est, StoredMulticlass):
        return multiclass_specs(est.calibration)
    if isinstance(est, StoredRegression):  # the losses are profiled like any numeric column
        return {}
    return {} if est is None else {SCORE_COLUMN: score_spec(est.calibration)}


def derive(window: WindowBatch, found: DerivedModels) -> dict[str, NDArray[np.float64]]:
    """The window's derived columns (float64, NaN where the score is missing)."""
    out: dict[str, NDArray[np.float64]] = {}
    if isinstance(found.estimation, StoredMulticlass):
        scores = [_score(window, c, f"prediction[{k}]")
                  for k, c in enumerate(found.estimation.scores)]  # fmt: skip
        out.update(multiclass_values(found.estimation.calibration, np.column_stack(scores),
                                     window.columns.get(PREDICTION)))  # fmt: skip
    elif isinstance(found.estimation, StoredRegression):
        out.update(_losses(window, found.estimation))
    elif found.estimation is not None:
        column = found.estimation.score
        column = column if column in window.columns else PREDICTION
        if column in window.columns:
            out[SCORE_COLUMN] = floats(window, column)
    if found.multivariate is not None:
        model = found.multivariate.model
        categorical = set(model.categorical)
        arrays = {
            c: objects(window, c) if c in categorical else floats(window, c) for c in model.columns
        }
        out[ERROR_COLUMN] = model.scorer.errors(arrays, len(window))
    return out


def _losses(window: WindowBatch, stored: StoredRegression) -> dict[str, NDArray[np.float64]]:
    """Each event's expected losses: features named as the baseline's (categorical as given,
    numeric as numbers), the prediction from the column named as the baseline's, else
    `prediction`."""
    model = stored.model
    columns = {c: objects(window, c) if c in model.categories else floats(window, c)
               for c in model.features}  # fmt: skip
    column = stored.prediction if stored.prediction in window.columns else PREDICTION
    return loss_values(model, columns, floats(window, column))


def _score(window: WindowBatch, column: str, element: str) -> NDArray[np.float64]:
    """A class's score: the event's column named as the baseline's, else the prediction
    list's element of that class (NaN where neither)."""
    return floats(window, column if column in window.columns else element)


def floats(window: WindowBatch, column: str) -> NDArray[np.float64]:
    """A column as float64: NaN where missing or not a number (imputed, like a null)."""
    ready = window.arrays.get(column)
    if ready is not None:
        return ready
    values = window.columns.get(column)
    if values is None:
        return np.full(len(window), np.nan)
    return np.fromiter(
        (float(v) if type(v) in _NUMBER else np.nan for v in values), np.float64, len(values)
    )


def objects(window: WindowBatch, column: str) -> NDArray[np.object_]:
    """A column as an object array (None where missing)."""
    values = window.columns.get(column)
    if values is None:
        return np.full(len(window), None, dtype=object)
    return np.fromiter(values, dtype=object, count=len(values))
