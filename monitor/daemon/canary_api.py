"""`GET /v1/canary/{model}/{canary}`: live canary analysis against the stable version.

200 for `pass`, 409 for `fail` or `inconclusive` (the body is the report either way), like
the gate endpoint, so Argo Rollouts' web metric and Flagger's webhooks read it the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from guards.registry import rollback_canary
from monitor.canary import CanaryReport, analyze_canary, since_of
from monitor.config import Config, ModelConfig
from monitor.daemon._auth import requires
from monitor.daemon._common import daemon, errors
from monitor.errors import NotFoundError

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
    """Compare the canary version's live windows with the stable's since `since`."""
    state = daemon(request)
    cfg = model_config(state.config, model)
    now = datetime.now(UTC)
    window_s = state.config.collect.window.total_seconds()
    start = since_of(since, now)
    report = analyze_canary(state.engine, cfg, canary, baseline, start, now, window_s)
    apply_action(state.engine, cfg, report, state.rollback_listener)
    doc = report.to_dict()
    status = 200 if report.verdict == "pass" or not strict else 409
    return JSONResponse(doc, status_code=status)


def model_config(config: Config, model: str) -> ModelConfig:
    """The configured model; NotFoundError listing the configured ones."""
    for cfg in config.models:
        if cfg.name == model:
            return cfg
    known = ", ".join(m.name for m in config.models) or "none"
    raise NotFoundError(f"no model {model!r} in the config (configured: {known})")


def apply_action(engine: Any, cfg: ModelConfig, report: CanaryReport, listener: Any) -> None:
    """`canary.action: rollback`: a failed canary that is active goes back to the stable."""
    if report.verdict != "fail" or cfg.canary.action != "rollback":
        return

    try:
        rollback_canary(engine, cfg.name, report.canary, report.baseline, listener=listener)
    except NotFoundError:
        pass  # a model not in the registry has no alias to move
