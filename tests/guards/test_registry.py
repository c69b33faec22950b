"""Registry, gate history and rollback on SQLite and PostgreSQL."""

from __future__ import annotations

import shutil
from hashlib import sha256
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from guards import (
    CollectingListener,
    GateRequest,
    GuardVerdict,
    Rollback,
    latest_verdict,
    list_models,
    load_golden,
    preset,
    record_gate,
    register_version,
    rollback,
    run_gate,
)
from guards.registry import rollback_canary
from monitor.errors import ArtifactMismatchError, ConflictError, InputError, NotFoundError
from monitor.storage import GateRun, RollbackEvent, transaction
from tests.guards.conftest import Suite


def verdict_for(suite: Suite, candidate: str, name: str) -> GuardVerdict:
    golden = load_golden(suite.golden, id_column="id", label_column="label", slice_by=["segment"],
                         features=[f"f{i}" for i in range(8)])  # fmt: skip
    return run_gate(
        GateRequest(
            suite.models["reference"],
            suite.models[candidate],
            golden,
            preset(name),
            latency_batch_sizes=(),
        )  # fmt: skip
    )


@pytest.fixture(scope="module")
def verdicts(suite: Suite) -> dict[str, GuardVerdict]:
    return {
        "pass": verdict_for(suite, "reexport", "fp32"),
        "fail": verdict_for(suite, "int8_bad", "int8"),
    }


def artifacts(suite: Suite, candidate: str) -> tuple[Path, Path, Path]:
    return suite.models["reference"], suite.models[candidate], suite.golden


def aliases(engine: Engine, model: str) -> tuple[str | None, str | None]:
    (info,) = [m for m in list_models(engine) if m.name == model]
    return info.active, info.last_known_good


def count(engine: Engine, table: type) -> int:
    with transaction(engine) as session:
        return int(session.scalar(select(func.count()).select_from(table)) or 0)


def test_failed_gate_rolls_back_once_and_tells_the_listener(
    engine: Engine, suite: Suite, verdicts: dict[str, GuardVerdict]
) -> None:
    # Version 1 is the re-export: a verdict is recorded only for the registered content.
    register_version(engine, "fraud", "1", suite.models["reexport"], activate=True)
    first = record_gate(engine, "fraud", "1", verdicts["pass"], artifacts(suite, "reexport"))
    assert "last-known-good" in first.action
    register_version(
        engine, "fraud", "2", suite.models["int8_bad"], auto_rollback=True, activate=True
    )
    assert aliases(engine, "fraud") == ("2", "1")
    listener = CollectingListener()
    failed = record_gate(
        engine, "fraud", "2", verdicts["fail"], artifacts(suite, "int8_bad"), listener
    )
    assert aliases(engine, "fraud") == ("1", "1")
    assert failed.rollback is not None and listener.rollbacks == [failed.rollback]
    event = failed.rollback
    assert (event.from_version, event.to_version) == ("2", "1")
    assert event.gate_run_id == failed.gate_run_id
    assert "segment=high" in event.reason
    again = record_gate(
        engine, "fraud", "2", verdicts["fail"], artifacts(suite, "int8_bad"), listener
    )
    assert again.rollback is None and len(listener.rollbacks) == 1
    assert aliases(engine, "fraud") == ("1", "1")
    assert count(engine, RollbackEvent) == 1 and count(engine, GateRun) == 3


def test_gate_run_stores_content_hashes_and_latest_verdict(
    engine: Engine, suite: Suite, verdicts: dict[str, GuardVerdict]
) -> None:
    assert latest_verdict(engine, "fraud", "2") is None
    record_gate(engine, "fraud", "2", verdicts["pass"], artifacts(suite, "reexport"))
    record_gate(engine, "fraud", "2", verdicts["fail"], artifacts(suite, "int8_bad"))
    latest = latest_verdict(engine, "fraud", "2")
    assert latest == verdicts["fail"].to_dict()
    with transaction(engine) as session:
        runs = session.scalars(select(GateRun).order_by(GateRun.id)).all()
        assert runs[0].reference_sha256 == runs[1].reference_sha256
        assert runs[0].candidate_sha256 != runs[1].candidate_sha256
        assert runs[1].verdict == "fail" and runs[1].preset == "int8"
        assert runs[1].created_at.tzinfo is not None


def test_passing_candidate_is_not_known_good_until_active(
    engine: Engine, suite: Suite, verdicts: dict[str, GuardVerdict]
) -> None:
    register_version(engine, "m", "1", suite.models["reference"], activate=True)
    register_version(engine, "m", "2", suite.models["reexport"])
    record = record_gate(engine, "m", "2", verdicts["pass"], artifacts(suite, "reexport"))
    assert "unchanged" in record.action
    assert aliases(engine, "m") == ("1", None)


def test_manual_rollback_is_idempotent_and_explains_missing_targets(
    engine: Engine, suite: Suite, verdicts: dict[str, GuardVerdict]
) -> None:
    register_version(engine, "m", "1", suite.models["reexport"], activate=True)
    with pytest.raises(ConflictError, match="no last-known-good"):
        rollback(engine, "m")
    register_version(engine, "m", "2", suite.models["int8_bad"], activate=True)
    with pytest.raises(ConflictError, match="version '1' of model 'm' is not a rollback target"):
        rollback(engine, "m", "1")  # never gated
    record_gate(engine, "m", "1", verdicts["pass"], artifacts(suite, "reexport"))
    seen: list[Rollback] = []

    def listener(session: Session, event: Rollback) -> None:
        seen.append(event)

    moved = rollback(engine, "m", "1", listener=listener)
    assert moved.changed and seen[0].from_version == "2" and seen[0].reason == "manual rollback"
    assert not rollback(engine, "m", "1", listener=listener).changed
    assert len(seen) == 1 and count(engine, RollbackEvent) == 1
    with pytest.raises(NotFoundError, match="no version '9'"):
        rollback(engine, "m", "9")
    with pytest.raises(NotFoundError, match="no model 'nope'"):
        rollback(engine, "nope")


def test_register_rejects_duplicates_and_missing_files(engine: Engine, suite: Suite) -> None:
    register_version(engine, "m", "1", suite.models["reference"])
    with pytest.raises(ConflictError, match="already has a version '1'"):
        register_version(engine, "m", "1", suite.models["reference"])
    with pytest.raises(InputError, match="not found"):
        register_version(engine, "m", "2", suite.directory / "missing.onnx")


def test_rollback_targets_are_verified_known_good_only(
    engine: Engine, suite: Suite, verdicts: dict[str, GuardVerdict], tmp_path: Path
) -> None:
    """Every rollback path (gate, manual, canary, alert action) asks `rollback_target`: a
    version that failed its newest gate, whose file changed, or that was gated as other
    content is never one."""
    v1 = tmp_path / "v1.onnx"
    shutil.copy(suite.models["reexport"], v1)
    register_version(engine, "m", "1", v1, activate=True)
    record_gate(engine, "m", "1", verdicts["pass"], (suite.models["reference"], v1, suite.golden))
    register_version(engine, "m", "2", suite.models["int8_bad"], auto_rollback=True, activate=True)
    original = v1.read_bytes()
    v1.write_bytes(original + b"swapped")
    with pytest.raises(ArtifactMismatchError) as swapped:
        rollback(engine, "m")
    registered = sha256(original).hexdigest()
    assert str(v1) in str(swapped.value) and registered in str(swapped.value)
    assert sha256(original + b"swapped").hexdigest() in str(swapped.value)
    with pytest.raises(ArtifactMismatchError):
        rollback_canary(engine, "m", "2", "1")
    failed = record_gate(engine, "m", "2", verdicts["fail"], artifacts(suite, "int8_bad"))
    assert failed.rollback is None and "cannot roll back" in failed.action
    assert str(v1) in failed.action and aliases(engine, "m") == ("2", "1")
    v1.write_bytes(original)
    with pytest.raises(ArtifactMismatchError, match="the gate run is not recorded|changed"):
        record_gate(engine, "m", "1", verdicts["fail"], artifacts(suite, "int8_bad"))
    record_gate(engine, "m", "1", verdicts["fail"], (suite.models["reference"], v1, suite.golden))
    with pytest.raises(ConflictError, match="newest gate run is fail"):
        rollback(engine, "m", "1")
    assert aliases(engine, "m")[0] == "2" and count(engine, RollbackEvent) == 0
