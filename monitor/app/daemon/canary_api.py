"""Live canary analysis against the stable version: read it, or act on it.

`GET /v1/canary/{model}/{canary}` (read scope) answers the report and changes nothing: 200 for
`pass`, 409 for `fail` or `inconclusive` (the body is the report either way), like the gate
endpoint, so Argo Rollouts' web metric and Flagger's webhooks read it the same way. For a pair
declared in `canaries` (and no `since`) it serves the newest stored scheduled verdict, whose
per-slice judgement is in `slices`; `GET .../history` lists the stored ones.

`POST /v1/canary/{model}/{canary}/apply` (admin scope) analyses the same way and carries out
`canary.action`: with `rollback`, a failed canary that is the active version goes back to the
stable one, which must be a rollback target (registered, artifact hash verified, passing gate
verdict: `guards.registry.rollback_target`). A read never changes production state.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from guards.registry import list_models, rollback_canary
from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import ApiModel, daemon, errors
from monitor.canary import CanaryReport, analyze_canary, canary_history, since_of
from monitor.config import Config, ModelConfig
from monitor.errors import NotFoundError
from monitor.storage import CanaryRun

router = APIRouter(tags=["release"])


class CriterionOut(BaseModel):
    """One criterion of a canary analysis."""

    name: str
    status: Literal["ok", "fail", "insufficient_data"]
    canary: float | None
    baseline: float | None
    threshold: float | None
    n_canary: int
    n_baseline: int


class CanaryOut(BaseModel):
    """A canary analysis report."""

    model: str
    canary: str
    baseline: str
    since: str
    verdict: Literal["pass", "fail", "inconclusive"]
    criteria: list[CriterionOut]


@router.get(
    "/canary/{model}/{canary}",
    dependencies=[Depends(requires("read"))],
    response_model=CanaryOut,
    responses={
        **errors(404, 422),
        409: {"model": CanaryOut, "description": "the canary failed or is inconclusive"},
    },
)
def canary_verdict(
    model: str,
    canary: str,
    request: Request,
    baseline: str = Query(..., max_length=100, description="The stable version."),
    since: str | None = Query(None, max_length=64, description="`1h` (default) or RFC 3339."),
    strict: bool = Query(True, description="false: 200 for any verdict"),
) -> JSONResponse:
    """Compare the canary version's live windows with the stable's since `since` (read only:
    `canary.action` is carried out by `POST .../apply`)."""
    stored = _stored(request, model, canary, baseline) if since is None else None
    doc = (
        stored
        if stored is not None
        else _analyze(request, model, canary, baseline, since).to_dict()
    )
    status = 200 if doc["verdict"] == "pass" or not strict else 409
    return JSONResponse(doc, status_code=status)


def _stored(request: Request, model: str, canary: str, baseline: str) -> dict[str, Any] | None:
    """The newest scheduled verdict of a declared pair; None for an undeclared or new one."""
    state = daemon(request)
    declared = any(
        (p.model, p.canary, p.stable) == (model, canary, baseline) for p in state.config.canaries
    )
    if not declared:
        return None
    runs = canary_history(state.engine, model, canary, baseline, limit=1)
    return _document(runs[0]) if runs else None


def _document(run: CanaryRun) -> dict[str, Any]:
    return {**run.report, "evaluated_at": run.evaluated_at.isoformat()}


class CanaryHistoryOut(BaseModel):
    """Stored scheduled verdicts of a canary version, newest first."""

    runs: list[dict[str, Any]] = Field(
        description=(
            "Each stored evaluation: the report keys, `slices` (each slice's verdict and "
            "criteria with raw and adjusted p-values), `correction`, `level`, `failed`, "
            "`evaluated_at` and, for a pair with `rollback`, `action`."
        )
    )


@router.get(
    "/canary/{model}/{canary}/history",
    dependencies=[Depends(requires("read"))],
    response_model=CanaryHistoryOut,
    responses=errors(404, 422),
)
def canary_history_route(
    model: str,
    canary: str,
    request: Request,
    baseline: str | None = Query(None, max_length=100, description="Only against this stable."),
    limit: int = Query(20, ge=1, le=500, description="At most this many runs."),
) -> CanaryHistoryOut:
    """The stored scheduled verdicts of a canary version (declared in `canaries`), newest
    first; read only."""
    state = daemon(request)
    model_config(state.config, model)
    runs = canary_history(state.engine, model, canary, baseline, limit=limit)
    return CanaryHistoryOut(runs=[_document(r) for r in runs])


class ApplyRequest(ApiModel):
    """Which stable version the canary is compared with, and since when."""

    baseline: str = Field(min_length=1, max_length=100, description="The stable version.")
    since: str | None = Field(
        default=None, max_length=64, description="`1h` (default) or RFC 3339."
    )


class ApplyOut(CanaryOut):
    """The analysis and what `canary.action` did about it."""

    action: str = Field(description="One line: what was done, or why nothing was.")
    changed: bool = Field(description="true: `active` moved (a rollback event was recorded).")
    active: str | None = Field(description="The active version now (null: none registered).")


@router.post(
    "/canary/{model}/{canary}/apply",
    dependencies=[Depends(requires("admin"))],
    response_model=ApplyOut,
    responses=errors(404, 409, 422),
)
def canary_apply(model: str, canary: str, body: ApplyRequest, request: Request) -> ApplyOut:
    """Analyse like the GET, then carry out `canary.action` (`rollback`: a failed canary that
    is active goes back to the baseline, if that is a rollback target; 409 says why not)."""
    state = daemon(request)
    report = _analyze(request, model, canary, body.baseline, body.since)
    cfg = model_config(state.config, model)
    done = apply_action(state.engine, cfg, report, state.rollback_listener)
    return ApplyOut(**report.to_dict(), **asdict(done))


def _analyze(
    request: Request, model: str, canary: str, baseline: str, since: str | None
) -> CanaryReport:
    state = daemon(request)
    cfg = model_config(state.config, model)
    now = datetime.now(UTC)
    window_s = state.config.collect.window.total_seconds()
    start = since_of(since, now)
    return analyze_canary(state.engine, cfg, canary, baseline, start, now, window_s)


def model_config(config: Config, model: str) -> ModelConfig:
    """The configured model; NotFoundError listing the configured ones."""
    for cfg in config.models:
        if cfg.name == model:
            return cfg
    known = ", ".join(m.name for m in config.models) or "none"
    raise NotFoundError(f"no model {model!r} in the config (configured: {known})")


@dataclass(frozen=True)
class CanaryAction:
    """What carrying out `canary.action` did."""

    action: str
    changed: bool
    active: str | None


def apply_action(
    engine: Any, cfg: ModelConfig, report: CanaryReport, listener: Any
) -> CanaryAction:
    """`canary.action: rollback`: a failed canary that is active goes back to the stable, if
    that is a rollback target (ConflictError or NotFoundError say why not)."""
    active = _active(engine, cfg.name)
    if cfg.canary.action != "rollback":
        return CanaryAction(f"none: canary.action is {cfg.canary.action}", False, active)
    if report.verdict != "fail":
        return CanaryAction(f"none: the canary's verdict is {report.verdict}", False, active)
    outcome = rollback_canary(engine, cfg.name, report.canary, report.baseline, listener=listener)
    if outcome is None:
        return CanaryAction(f"none: version {report.canary} is not the active one", False, active)
    if outcome.rollback is None:
        return CanaryAction(f"none: {outcome.active} is already active", False, outcome.active)
    text = f"rolled back {cfg.name} from {report.canary} to {outcome.active}"
    return CanaryAction(text, True, outcome.active)


def _active(engine: Any, model: str) -> str | None:
    found = [m.active for m in list_models(engine) if m.name == model]
    return found[0] if found else None
