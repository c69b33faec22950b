"""Baselines: a reference dataset's ProfileSet stored once and loaded for every comparison.

A baseline may also carry its reference's variability (per-column, per-method spreads of the
statistic between reference chunks and the whole reference), stored in its settings document
under "variability"; `ReferenceThresholds` derives drift bounds from it. Reference
attributions (`monitor.attributions`) are stored there too, under "attributions".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.attributions import sums_from_settings
from monitor.detectors.variability import Variability
from monitor.errors import ConflictError, NotFoundError
from monitor.profiles import OVERALL, ProfileSet, profile_from_bytes, spec_of
from monitor.profiles.kinds import Profile
from monitor.storage import Baseline, BaselineProfile, Model, ModelVersion, transaction


@dataclass(frozen=True)
class BaselineInfo:
    """A stored baseline's identity and size."""

    id: int
    model: str
    version: str
    name: str
    n_rows: int
    slice_by: tuple[str, ...]
    n_profiles: int
    source: str | None
    created_at: datetime


@dataclass(frozen=True)
class StoredBaseline:
    """A loaded baseline: its profiles and, when it was stored with one, its variability."""

    profiles: ProfileSet
    variability: Variability | None
    # Reference attributions per feature: (count, sum of |attribution|); {} when none.
    attributions: Mapping[str, tuple[int, float]] = field(default_factory=dict)
    # The same per slice key, where the reference file had the slice columns too.
    attributions_by_slice: Mapping[str, Mapping[str, tuple[int, float]]] = field(
        default_factory=dict
    )


def ensure_model_version(session: Session, model: str, version: str) -> ModelVersion:
    """The model_version row, created (with its model) when missing."""
    m = session.scalar(select(Model).where(Model.name == model))
    if m is None:
        m = Model(name=model)
        session.add(m)
        session.flush()
    mv = session.scalar(
        select(ModelVersion).where(ModelVersion.model_id == m.id, ModelVersion.version == version)
    )
    if mv is None:
        mv = ModelVersion(model_id=m.id, version=version)
        session.add(mv)
        session.flush()
    return mv


def save_baseline(
    engine: Engine,
    model: str,
    version: str,
    profiles: ProfileSet,
    name: str = "default",
    source: str | None = None,
    source_sha256: str | None = None,
    replace: bool = False,
    settings: Mapping[str, Any] | None = None,
    variability: Variability | None = None,
) -> int:
    """Store `profiles` (and `variability`) as baseline `name` of model/version; returns its id."""
    with transaction(engine) as session:
        mv = ensure_model_version(session, model, version)
        old = _find(session, mv.id, name)
        if old is not None:
            if not replace:
                raise ConflictError(
                    f"baseline '{name}' of model '{model}' version '{version}' exists; "
                    "pass --replace to overwrite it"
                )
            session.delete(old)
            session.flush()
        row = Baseline(
            model_version_id=mv.id,
            name=name,
            source=source,
            source_sha256=source_sha256,
            n_rows=profiles.n_rows,
            slice_by=list(profiles.slice_by),
            settings={
                **(settings or {}),
                "rows": dict(profiles.rows),
                "columns": list(profiles.specs),
                **({} if variability is None else {"variability": variability.to_dict()}),
            },
        )
        row.profiles = [_profile_row(key, col, p) for (key, col), p in profiles.profiles.items()]
        session.add(row)
        session.flush()
        return row.id


def _profile_row(key: str, column: str, profile: Profile) -> BaselineProfile:
    return BaselineProfile(
        slice_key=key, column=column, kind=profile.kind, n=profile.n, payload=profile.to_bytes()
    )


def load_baseline(engine: Engine, model: str, version: str, name: str = "default") -> ProfileSet:
    """The stored ProfileSet; NotFoundError naming model, version and baseline if absent."""
    return load_stored_baseline(engine, model, version, name).profiles


def load_stored_baseline(
    engine: Engine, model: str, version: str, name: str = "default"
) -> StoredBaseline:
    """The stored profiles and variability; NotFoundError naming model, version and baseline."""
    with transaction(engine) as session:
        mv = session.scalar(
            select(ModelVersion)
            .join(Model, ModelVersion.model_id == Model.id)
            .where(Model.name == model, ModelVersion.version == version)
        )
        row = None if mv is None else _find(session, mv.id, name)
        if row is None:
            raise NotFoundError(f"no baseline '{name}' for model '{model}' version '{version}'")
        where = f"baseline '{name}' of model '{model}' version '{version}'"
        profiles = {
            (p.slice_key, p.column): profile_from_bytes(p.payload, where) for p in row.profiles
        }
        rows = {str(k): int(v) for k, v in row.settings.get("rows", {OVERALL: row.n_rows}).items()}
        overall = {col: spec_of(p) for (key, col), p in profiles.items() if key == OVERALL}
        order = row.settings.get("columns") or sorted(overall)
        specs = {col: overall[col] for col in order if col in overall}
        spread = row.settings.get("variability")
        return StoredBaseline(
            ProfileSet(profiles, rows, tuple(row.slice_by), specs),
            None if spread is None else Variability.from_dict(spread),
            sums_from_settings(row.settings.get("attributions")),
            {
                k: sums_from_settings(v)
                for k, v in row.settings.get("attributions_by_slice", {}).items()
            },
        )


def stored_settings(
    engine: Engine, model: str, version: str, name: str = "default"
) -> dict[str, Any]:
    """The settings stored with a baseline (bins, rows, estimation, ...); NotFoundError if none."""
    with transaction(engine) as session:
        settings = session.scalar(
            select(Baseline.settings)
            .join(ModelVersion, Baseline.model_version_id == ModelVersion.id)
            .join(Model, ModelVersion.model_id == Model.id)
            .where(Model.name == model, ModelVersion.version == version, Baseline.name == name)
        )
    if settings is None:
        raise NotFoundError(f"no baseline '{name}' for model '{model}' version '{version}'")
    return dict(settings)


@dataclass(frozen=True)
class ChosenBaseline:
    """Which stored baseline a model version is compared with, and that row's identity: a
    replaced baseline is a new row (new id and created_at), so a decoded copy is checked with
    one small query (`chosen_baseline`) instead of being loaded again."""

    version: str
    name: str
    id: int
    created_at: datetime


def choose_baseline(
    engine: Engine, model: str, version: str, name: str = "default"
) -> tuple[str, str] | None:
    """Which baseline model/version is compared with, as (version, name); None if none.

    The one owner of this choice (collectors build window profiles on its specs; the
    evaluator compares with it): the version's own baseline `name`, else the newest baseline
    `name` of another version of the model.
    """
    chosen = chosen_baseline(engine, model, version, name)
    return None if chosen is None else (chosen.version, chosen.name)


def chosen_baseline(
    engine: Engine | Session, model: str, version: str, name: str = "default"
) -> ChosenBaseline | None:
    """`choose_baseline`'s pick with its row's id and created_at; None if none (read in the
    caller's session when given one)."""
    stmt = (
        select(ModelVersion.version, Baseline.id, Baseline.created_at)
        .join(Baseline, Baseline.model_version_id == ModelVersion.id)
        .join(Model, ModelVersion.model_id == Model.id)
        .where(Model.name == model, Baseline.name == name)
        .order_by((ModelVersion.version == version).desc(), Baseline.id.desc())
        .limit(1)
    )
    if isinstance(engine, Session):
        found = engine.execute(stmt).first()
    else:
        with transaction(engine) as session:
            found = session.execute(stmt).first()
    return None if found is None else ChosenBaseline(found[0], name, int(found[1]), found[2])


def baseline_for(
    engine: Engine, model: str, version: str, name: str = "default"
) -> StoredBaseline | None:
    """The baseline `choose_baseline` picks for model/version, loaded; None when none."""
    chosen = choose_baseline(engine, model, version, name)
    return None if chosen is None else load_stored_baseline(engine, model, *chosen)


def baseline_spec_payloads(
    engine: Engine, model: str, version: str, name: str = "default"
) -> dict[str, bytes]:
    """The chosen baseline's overall profile of every column (their specs), encoded, by column;
    empty if there is no baseline. One query for all columns: a collector's first batch of a
    version needs them all (one query per column was its first cost at 1,000 models)."""
    chosen = choose_baseline(engine, model, version, name)
    if chosen is None:
        return {}
    stmt = (
        select(BaselineProfile.column, BaselineProfile.payload)
        .join(Baseline, BaselineProfile.baseline_id == Baseline.id)
        .join(ModelVersion, Baseline.model_version_id == ModelVersion.id)
        .join(Model, ModelVersion.model_id == Model.id)
        .where(Model.name == model, ModelVersion.version == chosen[0], Baseline.name == name)
        .where(BaselineProfile.slice_key == OVERALL)
    )
    with transaction(engine) as session:
        return {column: payload for column, payload in session.execute(stmt)}


def baseline_keys(engine: Engine) -> list[tuple[str, str, str]]:
    """(model, version, name) of every stored baseline, newest first (one query, no profiles
    loaded)."""
    stmt = (
        select(Model.name, ModelVersion.version, Baseline.name)
        .join(ModelVersion, Baseline.model_version_id == ModelVersion.id)
        .join(Model, ModelVersion.model_id == Model.id)
        .order_by(Baseline.id.desc())
    )
    with transaction(engine) as session:
        return [(m, v, n) for m, v, n in session.execute(stmt).all()]


def list_baselines(engine: Engine, model: str | None = None) -> list[BaselineInfo]:
    """Stored baselines, newest first, optionally of one model."""
    stmt = (
        select(Baseline, ModelVersion.version, Model.name)
        .join(ModelVersion, Baseline.model_version_id == ModelVersion.id)
        .join(Model, ModelVersion.model_id == Model.id)
    )
    if model is not None:
        stmt = stmt.where(Model.name == model)
    with transaction(engine) as session:
        return [
            BaselineInfo(
                id=b.id,
                model=m,
                version=v,
                name=b.name,
                n_rows=b.n_rows,
                slice_by=tuple(b.slice_by),
                n_profiles=len(b.profiles),
                source=b.source,
                created_at=b.created_at,
            )
            for b, v, m in session.execute(stmt.order_by(Baseline.id.desc())).all()
        ]


def _find(session: Session, model_version_id: int, name: str) -> Baseline | None:
    return session.scalar(
        select(Baseline).where(Baseline.model_version_id == model_version_id, Baseline.name == name)
    )
