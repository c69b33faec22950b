"""The model registry: versions, the `active` and `last_known_good` aliases, and rollback.

Rules:
  - `active` is the version serving traffic; `last_known_good` is the newest version that passed
    a gate *while it was active* (a candidate that passes before rollout is not yet known good:
    it becomes so when a gate passes after it is activated).
  - A failed gate for the active version, registered with `auto_rollback`, moves `active` back to
    `last_known_good` and records a rollback event. Repeating it changes nothing: the failed
    version is no longer active.
  - Every rollback (a failed gate, an alert's `rollback` action, a failed canary, an operator's
    `rollback`) picks its target through :func:`rollback_target`: a registered version whose
    artifact file still holds the content it was registered with (sha256) and whose newest
    gate run passed on that same content. A version only seen in traffic, or one whose file
    changed, is never a target.
  - A registered version's file is checked against its hash (:func:`verify_artifact`) before
    it is gated, before it becomes a rollback target and before `activate` makes it active
    (every path that moves `active` goes through `rollback_target` or `activate`); a mismatch
    is an `ArtifactMismatchError` naming the file and both hashes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from guards._artifact import Artifact
from guards.events import Rollback, RollbackListener
from guards.golden import sha256_file
from monitor.errors import ArtifactMismatchError, ConflictError, InputError, NotFoundError
from monitor.storage import (
    GateRun,
    Model,
    ModelAlias,
    ModelVersion,
    RollbackEvent,
    transaction,
    utcnow,
)


@dataclass(frozen=True)
class VersionInfo:
    """One registered version."""

    version: str
    artifact_uri: str | None
    artifact_sha256: str | None
    auto_rollback: bool
    created_at: datetime
    settings: Mapping[str, Any] = field(default_factory=dict)


PRECISIONS = ("fp32", "fp16", "int8")
SETTING_KEYS = ("precision", "quantization", "batching", "runtime")


def optimization_settings(
    *,
    precision: str | None = None,
    quantization: str | None = None,
    batching: str | None = None,
    runtime: str | None = None,
    meta: Mapping[str, str] | None = None,
    hourly_price: float | None = None,
    replicas: int | None = None,
) -> dict[str, Any]:
    """How a version was optimized and what it costs to serve, as stored with it: `hourly_price`
    (dollars per replica-hour) × `replicas` is the version's own cost, which its SLO cost is
    charged from (`monitor.slo.evaluate.version_prices`). InputError for an unknown precision
    or a price that is not a positive finite number."""
    if precision is not None and precision not in PRECISIONS:
        raise InputError(f"precision: {precision!r} is not one of {', '.join(PRECISIONS)}")
    if hourly_price is not None and not (math.isfinite(hourly_price) and hourly_price > 0):
        raise InputError(f"hourly_price: {hourly_price!r} is not a positive number")
    if replicas is not None and (hourly_price is None or replicas < 1):
        raise InputError(f"replicas: {replicas!r} needs an hourly_price and at least 1")
    given = zip(SETTING_KEYS, (precision, quantization, batching, runtime), strict=True)
    out: dict[str, Any] = {k: v for k, v in given if v is not None}
    if hourly_price is not None:
        out["hourly_price"] = float(hourly_price)
        out["replicas"] = replicas or 1
    if meta:
        out["meta"] = dict(meta)
    return out


def parse_meta(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """`key=value` strings as a mapping; InputError naming a malformed one."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--meta {item!r}: expected key=value")
        out[key.strip()] = value
    return out


@dataclass(frozen=True)
class ModelInfo:
    """A model, its versions and where its aliases point."""

    name: str
    versions: tuple[VersionInfo, ...]
    active: str | None
    last_known_good: str | None


@dataclass(frozen=True)
class RollbackOutcome:
    """What a rollback did; `rollback` is None when nothing changed."""

    model: str
    active: str
    rollback: Rollback | None

    @property
    def changed(self) -> bool:
        return self.rollback is not None


def register_version(
    engine: Engine,
    model: str,
    version: str,
    path: Path,
    *,
    auto_rollback: bool = False,
    activate: bool = False,
    settings: Mapping[str, Any] | None = None,
) -> VersionInfo:
    """Register `version` of `model` with its artifact and optimization `settings`
    (see :func:`optimization_settings`); optionally make it active."""
    if not path.is_file():
        raise InputError(f"{path}: model artifact not found")
    with transaction(engine) as session:
        row = session.scalar(select(Model).where(Model.name == model).with_for_update())
        if row is None:
            row = Model(name=model)
            session.add(row)
            session.flush()
        if get_version(session, row, version) is not None:
            raise ConflictError(f"model {model!r} already has a version {version!r}")
        mv = ModelVersion(
            model_id=row.id,
            version=version,
            artifact_uri=str(path.resolve()),
            artifact_sha256=sha256_file(path),
            auto_rollback=auto_rollback,
            settings=dict(settings or {}),
        )
        session.add(mv)
        session.flush()
        if activate:
            set_alias(session, row, "active", mv)
        return _info(mv)


def list_models(engine: Engine) -> list[ModelInfo]:
    """Every model with its versions and aliases, by name."""
    with transaction(engine) as session:
        models = session.scalars(select(Model).order_by(Model.name)).all()
        return [
            ModelInfo(
                name=m.name,
                versions=tuple(_info(v) for v in m.versions),
                active=_alias_version(session, m, "active"),
                last_known_good=_alias_version(session, m, "last_known_good"),
            )
            for m in models
        ]


def rollback(
    engine: Engine,
    model: str,
    to_version: str | None = None,
    *,
    reason: str = "manual rollback",
    listener: RollbackListener | None = None,
) -> RollbackOutcome:
    """Move `active` to `to_version` (default: last-known-good); no change if already there."""
    with transaction(engine) as session:
        row = find_model(session, model)
        target = rollback_target(session, row, to_version)
        return move_active(session, row, target, reason, None, listener)


def activate(
    engine: Engine, model: str, version: str, *, listener: RollbackListener | None = None
) -> RollbackOutcome:
    """Make `version` the active one (forward or back); the move is recorded like a rollback.

    A model without an active version gets one; `rollback` is None when nothing moved. The
    version's file must still hash to what was registered (ArtifactMismatchError).
    """
    with transaction(engine) as session:
        row = find_model(session, model)
        target = find_version(session, row, version)
        verify_artifact(model, target)
        if alias(session, row, "active") is None:
            set_alias(session, row, "active", target)
            return RollbackOutcome(model, version, None)
        return move_active(session, row, target, "activated", None, listener)


def rollback_canary(
    engine: Engine,
    model: str,
    canary: str,
    stable: str,
    *,
    listener: RollbackListener | None = None,
) -> RollbackOutcome | None:
    """After a failed canary analysis: if `canary` is active, move `active` to `stable`
    (which must be a rollback target, see :func:`rollback_target`).

    None when the canary is not the active version (nothing to roll back); idempotent.
    """
    with transaction(engine) as session:
        row = find_model(session, model)
        current = alias(session, row, "active")
        if current is None or current.version != canary:
            return None
        target = rollback_target(session, row, stable)
        reason = f"canary {canary} failed against {stable}"
        return move_active(session, row, target, reason, None, listener)


def find_model(session: Session, model: str) -> Model:
    """The model row, locked for update; NotFoundError if unknown."""
    row = session.scalar(select(Model).where(Model.name == model).with_for_update())
    if row is None:
        raise NotFoundError(f"no model {model!r} in the registry; register it first")
    return row


def find_version(session: Session, model: Model, version: str) -> ModelVersion:
    """A version row; NotFoundError listing the known versions."""
    mv = get_version(session, model, version)
    if mv is None:
        known = ", ".join(v.version for v in model.versions) or "none"
        raise NotFoundError(f"model {model.name!r} has no version {version!r} (known: {known})")
    return mv


def alias(session: Session, model: Model, name: str) -> ModelVersion | None:
    """The version an alias points to, if set."""
    row = session.get(ModelAlias, (model.id, name), with_for_update=True)
    return row.version if row is not None else None


def set_alias(session: Session, model: Model, name: str, version: ModelVersion) -> None:
    """Point an alias at a version (insert or update)."""
    row = session.get(ModelAlias, (model.id, name), with_for_update=True)
    if row is None:
        session.add(ModelAlias(model_id=model.id, alias=name, version_id=version.id))
    elif row.version_id != version.id:
        row.version_id = version.id
        row.updated_at = utcnow()
    session.flush()


def move_active(
    session: Session,
    model: Model,
    target: ModelVersion,
    reason: str,
    gate_run_id: int | None,
    listener: RollbackListener | None,
) -> RollbackOutcome:
    """Point `active` at `target`, record the event and tell the listener; idempotent."""
    current = alias(session, model, "active")
    if current is None:
        raise ConflictError(f"model {model.name!r} has no active version to roll back")
    if current.id == target.id:
        return RollbackOutcome(model.name, target.version, None)
    set_alias(session, model, "active", target)
    event = RollbackEvent(
        model=model.name,
        from_version=current.version,
        to_version=target.version,
        reason=reason,
        gate_run_id=gate_run_id,
    )
    session.add(event)
    session.flush()
    notice = Rollback(
        event.id,
        model.name,
        current.version,
        target.version,
        reason,
        gate_run_id,
        event.created_at,
    )
    if listener is not None:
        listener(session, notice)
    return RollbackOutcome(model.name, target.version, notice)


def rollback_target(session: Session, model: Model, to_version: str | None) -> ModelVersion:
    """The version a rollback may move `active` to: `to_version`, or last-known-good.

    The one place every rollback path asks. The target must be registered (NotFoundError),
    not newer than the active version, hold a passing verdict of its newest gate run on its
    registered content (ConflictError), and its file must still hash to what was registered
    (ArtifactMismatchError).
    """
    if to_version is not None:
        target = find_version(session, model, to_version)
        current = alias(session, model, "active")
        if current is not None and target.id > current.id:
            # A rollback goes back; moving to a newer version is an activation.
            raise ConflictError(
                f"version {to_version!r} of model {model.name!r} is newer than the active "
                f"{current.version!r}; to move forward use `modelwatch models activate "
                f"--model {model.name} --version {to_version}`"
            )
    else:
        lkg = alias(session, model, "last_known_good")
        if lkg is None:
            raise ConflictError(
                f"model {model.name!r} has no last-known-good version; pass --to VERSION"
            )
        target = lkg
    _require_passing_gate(session, model, target)
    verify_artifact(model.name, target)
    return target


def _require_passing_gate(session: Session, model: Model, mv: ModelVersion) -> None:
    newest = session.execute(
        select(GateRun.verdict, GateRun.candidate_sha256)
        .where(GateRun.model == model.name, GateRun.version == mv.version)
        .order_by(GateRun.created_at.desc(), GateRun.id.desc())
        .limit(1)
    ).first()
    name = f"version {mv.version!r} of model {model.name!r}"
    if newest is None:
        raise ConflictError(
            f"{name} is not a rollback target: it was never gated (a target needs a passing "
            f"gate run: modelwatch gate --model {model.name} --version {mv.version} ...)"
        )
    if newest.verdict != "pass":
        raise ConflictError(
            f"{name} is not a rollback target: its newest gate run is {newest.verdict}"
        )
    if mv.artifact_sha256 is None or newest.candidate_sha256 != mv.artifact_sha256:
        raise ConflictError(
            f"{name} is not a rollback target: its passing gate run was of other content "
            f"(sha256 {newest.candidate_sha256}) than its registered artifact"
        )


def verify_artifact(model: str, mv: ModelVersion) -> Path:
    """The version's artifact file, checked against its registered sha256 (streamed)."""
    if mv.artifact_uri is None or mv.artifact_sha256 is None:
        raise ConflictError(f"model {model!r} version {mv.version!r} has no registered artifact")
    path = Path(mv.artifact_uri)
    check_artifact(model, mv.version, path, mv.artifact_sha256)
    return path


def check_artifact(model: str, version: str, path: Path, expected: str) -> None:
    """ArtifactMismatchError naming `path` and both hashes unless it hashes to `expected`."""
    try:
        actual = sha256_file(path)
    except OSError as exc:
        raise _unreadable(model, version, path, expected, exc) from None
    if actual != expected:
        raise artifact_mismatch(model, version, path, actual, expected)


def read_verified(model: str, version: str, path: Path, expected: str) -> Artifact:
    """The file read once, for a run that loads it: its bytes hash to `expected`
    (ArtifactMismatchError naming `path` and both hashes otherwise)."""
    try:
        artifact = Artifact.of(path, path.read_bytes())
    except OSError as exc:
        raise _unreadable(model, version, path, expected, exc) from None
    if artifact.sha256 != expected:
        raise artifact_mismatch(model, version, path, artifact.sha256, expected)
    return artifact


def _unreadable(
    model: str, version: str, path: Path, expected: str, exc: OSError
) -> ArtifactMismatchError:
    return ArtifactMismatchError(
        f"{path}: cannot read the artifact of model {model!r} version {version!r} "
        f"({exc.strerror or exc}); registered sha256 {expected}"
    )


def artifact_mismatch(
    model: str, version: str, path: Path, actual: str, expected: str
) -> ArtifactMismatchError:
    """The one-line error of a file whose content is not the registered version's."""
    return ArtifactMismatchError(
        f"{path}: sha256 {actual} does not match the registered {expected} of model "
        f"{model!r} version {version!r}; the file changed since it was registered"
    )


def verify_registered(engine: Engine, model: str, version: str, path: Path) -> None:
    """Before gating `path` as `version` of `model`: if that version is registered with a
    hash, `path` must hold that content (ArtifactMismatchError otherwise)."""
    with transaction(engine) as session:
        row = session.scalar(select(Model).where(Model.name == model))
        mv = get_version(session, row, version) if row is not None else None
        expected = mv.artifact_sha256 if mv is not None else None
    if expected is not None:
        check_artifact(model, version, path, expected)


def get_version(session: Session, model: Model, version: str) -> ModelVersion | None:
    return session.scalar(
        select(ModelVersion).where(
            ModelVersion.model_id == model.id, ModelVersion.version == version
        )
    )


def _alias_version(session: Session, model: Model, name: str) -> str | None:
    row = session.get(ModelAlias, (model.id, name))
    return row.version.version if row is not None else None


def _info(mv: ModelVersion) -> VersionInfo:
    return VersionInfo(
        mv.version,
        mv.artifact_uri,
        mv.artifact_sha256,
        mv.auto_rollback,
        mv.created_at,
        dict(mv.settings or {}),
    )


def update_settings(
    engine: Engine, model: str, version: str, updates: Mapping[str, Any]
) -> dict[str, Any]:
    """Merge `updates` into a registered version's settings (a key given replaces the stored
    one) and return them; NotFoundError naming an unknown model or version."""
    with transaction(engine) as session:
        mv = find_version(session, find_model(session, model), version)
        merged = {**dict(mv.settings or {}), **updates}
        mv.settings = merged  # a new dict: the JSON column sees the change
        return merged


def version_settings(engine: Engine, model: str, version: str) -> dict[str, Any]:
    """The optimization settings stored with a version ({} when unknown or none)."""
    with transaction(engine) as session:
        row = session.scalar(select(Model).where(Model.name == model))
        mv = get_version(session, row, version) if row is not None else None
        return dict(mv.settings or {}) if mv is not None else {}
