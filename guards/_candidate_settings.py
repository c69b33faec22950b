"""`compare --store-settings`: each build's measured settings into the registry, in one step.

A build is the registered version of the model whose artifact is its file (the newest such
version), or, when its file is not registered yet, it is registered as the version named by its
file stem. Every target is resolved before anything is measured, so a stem taken by another file
stops the command at once (ConflictError naming both), not after the measurements.

Stored: `hourly_price` and `replicas` (when a price was given: the version's serving cost, as
`models register --hourly-price --replicas` stores them), `precision` (a candidate's preset), and
under `compare` what was measured: file size, peak memory, throughput at the latency SLO, cost
per 1,000 predictions, the gate's verdict and when.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from guards.registry import (
    PRECISIONS,
    list_models,
    optimization_settings,
    register_version,
    update_settings,
)
from monitor.errors import ConflictError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from guards._candidate_row import CandidateRow


@dataclass(frozen=True)
class SettingsTarget:
    """Where one build's settings go: an existing version, or a new one holding `path`."""

    path: Path
    version: str
    registered: bool


def settings_targets(engine: Engine, model: str, paths: Sequence[Path]) -> list[SettingsTarget]:
    """Each build's version of `model` (see the module); ConflictError for a taken stem."""
    found = next((m for m in list_models(engine) if m.name == model), None)
    versions = found.versions if found is not None else ()
    out = []
    for path in paths:
        uri = str(path.resolve())
        mine = [v for v in versions if v.artifact_uri == uri]
        if mine:
            out.append(SettingsTarget(path, mine[-1].version, True))
            continue
        taken = next((v for v in versions if v.version == path.stem), None)
        if taken is not None:
            raise ConflictError(
                f"--store-settings: model {model!r} version {path.stem!r} holds "
                f"{taken.artifact_uri}, not {uri}; register {path.name} under another version"
            )
        out.append(SettingsTarget(path, path.stem, False))
    return out


def stored_settings(row: CandidateRow, replicas: int) -> dict[str, Any]:
    """What `--store-settings` writes for one build's row."""
    out = optimization_settings(
        precision=row.preset if row.preset in PRECISIONS else None,
        hourly_price=row.hourly_price,
        replicas=replicas if row.hourly_price is not None else None,
    )
    at_slo = row.at_slo
    out["compare"] = {
        "role": row.role,
        "file_bytes": row.file_bytes,
        "peak_rss_bytes": None if row.memory is None else row.memory.rss_bytes,
        "device_memory_bytes": None if row.memory is None else row.memory.device_bytes,
        "throughput_at_slo": None if at_slo is None else at_slo.to_dict(),
        "cost_per_1k": row.cost_per_1k,
        "verdict": row.verdict,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    return out


def store_settings(
    engine: Engine,
    model: str,
    targets: Sequence[SettingsTarget],
    rows: Sequence[CandidateRow],
    replicas: int,
) -> list[str]:
    """Write each row's settings to its target (registering the new ones); the versions."""
    for target, row in zip(targets, rows, strict=True):
        settings = stored_settings(row, replicas)
        if target.registered:
            update_settings(engine, model, target.version, settings)
        else:
            register_version(engine, model, target.version, target.path, settings=settings)
    return [t.version for t in targets]
