"""Gate history: each run recorded with content hashes, and the registry acting on its verdict.

Recording a run and the registry's response (marking last-known-good, rolling back) happen in
one transaction, so a rollback event always points at the gate run that caused it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from guards import registry
from guards.events import Rollback, RollbackListener
from guards.golden import sha256_file
from guards.results import GuardVerdict
from monitor.errors import ModelwatchError
from monitor.storage import GateRun, Model, transaction


@dataclass(frozen=True)
class GateRecord:
    """The stored run and what the registry did about it (a one-line `action`)."""

    gate_run_id: int
    action: str
    rollback: Rollback | None = None


def record_gate(
    engine: Engine,
    model: str,
    version: str,
    verdict: GuardVerdict,
    artifacts: tuple[Path, Path, Path],
    listener: RollbackListener | None = None,
    auto_rollback: bool | None = None,
    hashes: tuple[str, str, str] | None = None,
) -> GateRecord:
    """Store the run (reference, candidate, golden hashed by content) and apply the rules.

    `auto_rollback` decides whether a failure of the active version rolls back (a scheduled
    replay's `action`); None: as the version was registered. `hashes`: the three files' sha256
    as the run read them (`GuardVerdict.run`), so that no file is read again; else the files
    are hashed now. ArtifactMismatchError (nothing stored) when `version` is registered with
    other content than the candidate's: a verdict is only ever recorded for the content it
    judged.
    """
    ref_hash, cand_hash, golden_hash = hashes or tuple(sha256_file(p) for p in artifacts)
    doc = verdict.to_dict()
    with transaction(engine) as session:
        _check_candidate(session, model, version, artifacts[1], cand_hash)
        run = GateRun(
            model=model,
            version=version,
            reference_sha256=ref_hash,
            candidate_sha256=cand_hash,
            golden_sha256=golden_hash,
            preset=verdict.preset,
            verdict=verdict.verdict,
            criteria=doc["criteria"],
            verdict_json=doc,
            providers=doc["providers"],
            timing=dict(verdict.timing),
        )
        session.add(run)
        session.flush()
        return _act(session, run, verdict, listener, auto_rollback)


def _check_candidate(session: Session, model: str, version: str, path: Path, got: str) -> None:
    row = session.scalar(select(Model).where(Model.name == model))
    mv = registry.get_version(session, row, version) if row is not None else None
    if mv is not None and mv.artifact_sha256 is not None and mv.artifact_sha256 != got:
        raise registry.artifact_mismatch(model, version, path, got, mv.artifact_sha256)


def _act(
    session: Session,
    run: GateRun,
    verdict: GuardVerdict,
    listener: RollbackListener | None,
    auto_rollback: bool | None,
) -> GateRecord:
    model = session.scalar(select(Model).where(Model.name == run.model).with_for_update())
    mv = registry.get_version(session, model, run.version) if model is not None else None
    if model is None or mv is None:
        return GateRecord(run.id, f"{run.model} {run.version} not registered; registry unchanged")
    active = registry.alias(session, model, "active")
    is_active = active is not None and active.id == mv.id
    if verdict.verdict == "pass" and is_active:
        registry.set_alias(session, model, "last_known_good", mv)
        return GateRecord(run.id, f"{run.model} {run.version} is now last-known-good")
    roll = mv.auto_rollback if auto_rollback is None else auto_rollback
    if verdict.verdict != "fail" or not roll or not is_active:
        why = "not active" if not is_active else f"verdict {verdict.verdict}"
        return GateRecord(run.id, f"registry unchanged ({why})")
    lkg = registry.alias(session, model, "last_known_good")
    if lkg is None or lkg.id == mv.id:
        return GateRecord(run.id, "cannot roll back: no other last-known-good version")
    try:
        lkg = registry.rollback_target(session, model, None)
    except ModelwatchError as exc:  # the run is recorded; the registry stays as it is
        return GateRecord(run.id, f"cannot roll back: {exc}")
    reason = f"gate run {run.id} failed: " + "; ".join(c.describe() for c in verdict.failing[:3])
    outcome = registry.move_active(session, model, lkg, reason, run.id, listener)
    return GateRecord(
        run.id, f"rolled back {run.model} from {run.version} to {lkg.version}", outcome.rollback
    )


def judged_hashes(verdict: GuardVerdict) -> tuple[str, str, str]:
    """The reference's, candidate's and golden set's sha256 as the run read them."""
    files = verdict.run["artifacts"]
    return (files["reference"]["sha256"], files["candidate"]["sha256"], files["golden"]["sha256"])


def latest_verdict(engine: Engine, model: str, version: str) -> dict[str, Any] | None:
    """The verdict document of the newest gate run for a model version, if any."""
    with transaction(engine) as session:
        doc = session.scalar(
            select(GateRun.verdict_json)
            .where(GateRun.model == model, GateRun.version == version)
            .order_by(GateRun.created_at.desc(), GateRun.id.desc())
            .limit(1)
        )
    return dict(doc) if doc is not None else None
