"""Release endpoints: gate runs and rollback of the `active` alias.

The verdict endpoints for deployment tools live in monitor/app/daemon/_gate_api.py. Gate runs
happen in a worker thread, one at a time.
"""

from __future__ import annotations

import re
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import SkipJsonSchema
from sqlalchemy.orm import Session

from guards import gate_request, registry
from guards.gate import Loaded, run_gate
from guards.history import judged_hashes, record_gate
from guards.registry import rollback, version_settings
from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import ApiModel, daemon, errors
from monitor.config import GatePolicyConfig, GuardsConfig
from monitor.config.guards import GoldenSetConfig
from monitor.errors import ConflictError, InputError
from monitor.storage import Model, ModelVersion, transaction

router = APIRouter(tags=["release"])

# One gate run at a time per daemon: a run loads two models and replays the whole golden set.
_GATE_LOCK = threading.Lock()

# A golden set's name: no path separators, so nothing in a request can address a file.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*")


class Verdict(BaseModel):
    """A gate verdict document (as `modelwatch gate --json` writes it)."""

    model_config = ConfigDict(extra="allow")

    verdict: Literal["pass", "fail", "inconclusive"]
    preset: str
    criteria: list[dict[str, Any]]


class RunInfo(BaseModel):
    """What a gate run compared and what the registry did about it."""

    gate_run_id: int
    action: str
    reference: str
    candidate: str
    golden: str = Field(description="Name of the configured golden set replayed.")


class RunVerdict(Verdict):
    """The verdict of a gate run just made, with the run's bookkeeping under `run`."""

    run: RunInfo


class GuardRunRequest(ApiModel):
    """A gate run of a registered version, by names only.

    The golden set is an entry of `guards.golden_sets` and both models are registered
    artifacts, so a request can never make the daemon read a file it names: a path is refused
    (422) before anything touches the file system. Other keys override the golden set's.
    """

    golden: str | None = Field(
        default=None,
        max_length=200,
        description="Name of a configured golden set (guards.golden_sets); default: the model's.",
        examples=["fraud"],
    )
    # Paths were accepted once; refused with a message saying what to do instead.
    reference: SkipJsonSchema[str | None] = None
    reference_version: str | None = Field(
        default=None, description="Registered version to compare with (default: last-known-good)."
    )
    preset: Literal["fp32", "fp16", "int8"] | None = None
    label_column: str | None = None
    id_column: str | None = None
    slice_by: list[str] | None = None
    features: list[str] | None = None
    output: str | None = None
    thresholds: GatePolicyConfig | None = None
    latency: bool = True

    @field_validator("golden")
    @classmethod
    def _a_name(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.fullmatch(value):
            raise ValueError(
                "takes the name of a configured golden set (guards.golden_sets), not a path"
            )
        return value

    @field_validator("reference")
    @classmethod
    def _no_path(cls, value: str | None) -> None:
        if value is not None:
            raise ValueError(
                "file paths are not accepted; register the reference version "
                "(modelwatch models register) and pass reference_version"
            )
        return None


class RollbackRequest(ApiModel):
    """Where `active` goes (default: the last-known-good version) and why."""

    to: str | None = None
    reason: str = Field(default="rollback via API", min_length=1, max_length=500)


class RollbackResult(BaseModel):
    """Where `active` points now; `changed` is false when it already pointed there."""

    model: str
    active: str
    changed: bool
    from_version: str | None = None
    event_id: int | None = None


def _verdict_response(doc: dict[str, Any], strict: bool) -> JSONResponse:
    passed = doc.get("verdict") == "pass"
    return JSONResponse(doc, status_code=200 if passed or not strict else 409)


@router.post(
    "/guard/{model}/{version}/run",
    dependencies=[Depends(requires("admin"))],
    response_model=RunVerdict,
    responses={
        **errors(404, 409, 422),
        409: {"model": RunVerdict, "description": "failed or inconclusive (or a conflict)"},
    },
)
def run_guard(
    model: str, version: str, request: Request, body: GuardRunRequest | None = None
) -> JSONResponse:
    """Run the gate for a registered version against its reference; record it (rollback rules
    apply) and answer with the verdict: 200 pass, 409 fail or inconclusive."""
    state = daemon(request)
    body = body or GuardRunRequest()
    golden_name, golden_cfg = _golden_config(state.config.guards, model, body)
    loaded = _artifacts(state.engine, model, version, body)
    reference, candidate = (a.path for a in loaded)
    thresholds = () if body.thresholds is None else (body.thresholds.model_dump(exclude_none=True),)
    to_run = gate_request(
        reference,
        candidate,
        golden_cfg,
        state.config.guards,
        golden_cfg.preset,
        thresholds,
        latency_batch_sizes=None if body.latency else (),
        output=golden_cfg.output,
    )
    golden_path = Path(golden_cfg.path)
    with _GATE_LOCK:
        verdict = run_gate(to_run, loaded)
        settings = version_settings(state.engine, model, version)
        verdict = replace(verdict, run={**verdict.run, "settings": settings})
        record = record_gate(
            state.engine,
            model,
            version,
            verdict,
            (reference, candidate, golden_path),
            state.rollback_listener,
            hashes=judged_hashes(verdict),
        )
    doc = verdict.to_dict()
    doc["run"] = RunInfo(
        gate_run_id=record.gate_run_id,
        action=record.action,
        reference=str(reference),
        candidate=str(candidate),
        golden=golden_name,
    ).model_dump()
    return _verdict_response(doc, strict=True)


def _artifacts(engine: Any, model: str, version: str, body: GuardRunRequest) -> Loaded:
    """Both registered files, each read once and checked against its registered sha256 before
    the run, which uses those bytes (ArtifactMismatchError, 409, naming the file and both
    hashes)."""
    with transaction(engine) as session:
        row = registry.find_model(session, model)
        candidate = registry.find_version(session, row, version)
        reference = _reference(session, row, candidate, body)
        if candidate.artifact_uri is None or candidate.artifact_sha256 is None:
            raise ConflictError(f"model {model!r} version {version!r} has no registered artifact")
        files = [(v.version, Path(v.artifact_uri or ""), v.artifact_sha256 or "")
                 for v in (reference, candidate)]  # fmt: skip
    # Read outside the transaction: no lock held.
    ref, cand = (registry.read_verified(model, v, path, sha256) for v, path, sha256 in files)
    return ref, cand


def _reference(
    session: Session, row: Model, candidate: ModelVersion, body: GuardRunRequest
) -> ModelVersion:
    chosen: ModelVersion | None
    if body.reference_version is not None:
        chosen = registry.find_version(session, row, body.reference_version)
    else:
        options = (registry.alias(session, row, a) for a in ("last_known_good", "active"))
        chosen = next((v for v in options if v is not None and v.id != candidate.id), None)
    if chosen is None or chosen.artifact_uri is None or chosen.artifact_sha256 is None:
        raise ConflictError(
            f"model {row.name!r} has no last-known-good or active version other than "
            f"{candidate.version!r} with an artifact; pass `reference_version`"
        )
    return chosen


def _golden_config(
    cfg: GuardsConfig, model: str, body: GuardRunRequest
) -> tuple[str, GoldenSetConfig]:
    """The named (default: the model's) configured golden set with the request's overrides."""
    name = body.golden or model
    base = cfg.golden_sets.get(name)
    if base is None:
        configured = ", ".join(sorted(cfg.golden_sets)) or "none"
        raise InputError(
            f"golden: no golden set named {name!r} in guards.golden_sets; configured: {configured}"
        )
    fields = ("preset", "label_column", "id_column", "slice_by", "features", "output")
    given = {f: getattr(body, f) for f in fields if getattr(body, f) is not None}
    return name, GoldenSetConfig.model_validate({**base.model_dump(), **given})


@router.post(
    "/models/{model}/rollback",
    dependencies=[Depends(requires("admin"))],
    response_model=RollbackResult,
    responses=errors(404, 409, 422),
)
def rollback_model(model: str, body: RollbackRequest, request: Request) -> RollbackResult:
    """Move `active` to `to` (default: last-known-good); repeating it changes nothing."""
    state = daemon(request)
    outcome = rollback(
        state.engine, model, body.to, reason=body.reason, listener=state.rollback_listener
    )
    notice = outcome.rollback
    return RollbackResult(
        model=outcome.model,
        active=outcome.active,
        changed=notice is not None,
        from_version=notice.from_version if notice is not None else None,
        event_id=notice.event_id if notice is not None else None,
    )
