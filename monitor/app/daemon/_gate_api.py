"""The canary gate verdict for deployment tools: `GET /v1/gate/{model}/{version}` and Flagger.

The verdict body names what it is about (model, version, gate run id, created_at, artifact
hashes), so a deployment tool can tell a stale verdict. `max_age` (e.g. `1h`) treats an older
verdict as stale. Answers, by case:

| case | strict=true (default; Flagger, CI) | strict=false (Argo Rollouts web provider) |
| --- | --- | --- |
| latest verdict pass, fresh | 200, verdict pass | 200, verdict pass |
| fail or inconclusive | 409, the verdict | 200, the verdict |
| older than max_age | 409, the verdict, `stale: true` | 200, `inconclusive`, `stale: true` |
| never gated | 404 error body | 200, verdict `inconclusive`, `gate_run_id: null` |

`POST /v1/flagger/gate` takes Flagger's own webhook payload (name, namespace, phase, metadata);
`metadata.model` (default: the canary's name) and `metadata.version` say which verdict decides:
200 promotes, 409/404 halt.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from monitor.app.daemon._auth import SCOPE_KEY, authenticate_token, bearer, requires
from monitor.app.daemon._common import daemon, errors
from monitor.config import parse_duration
from monitor.errors import InputError, NotFoundError
from monitor.storage import GateRun, transaction, utcnow

router = APIRouter(tags=["release"])


class Artifacts(BaseModel):
    """Content hashes of what the gate run compared."""

    reference_sha256: str
    candidate_sha256: str
    golden_sha256: str


class GateVerdict(BaseModel):
    """The latest gate verdict of a model version (plus the verdict document's own keys)."""

    model_config = ConfigDict(extra="allow")

    model: str
    version: str
    verdict: Literal["pass", "fail", "inconclusive"]
    gate_run_id: int | None = Field(description="null: the version was never gated")
    created_at: datetime | None
    stale: bool = Field(description="true: older than `max_age`")
    artifacts: Artifacts | None
    preset: str | None
    criteria: list[dict[str, Any]]


def _latest(request: Request, model: str, version: str) -> GateRun | None:
    with transaction(daemon(request).engine) as session:
        row = session.scalars(
            select(GateRun)
            .where(GateRun.model == model, GateRun.version == version)
            .order_by(GateRun.created_at.desc(), GateRun.id.desc())
            .limit(1)
        ).first()
        if row is not None:
            session.expunge(row)
        return row


def _max_age(text: str | None) -> timedelta | None:
    if text is None:
        return None
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise InputError(f"max_age: {exc}") from None


def _body(run: GateRun, model: str, version: str, stale: bool) -> dict[str, Any]:
    artifacts = Artifacts(
        reference_sha256=run.reference_sha256,
        candidate_sha256=run.candidate_sha256,
        golden_sha256=run.golden_sha256,
    )
    return {
        **run.verdict_json,
        "model": model,
        "version": version,
        "verdict": run.verdict,
        "gate_run_id": run.id,
        "created_at": run.created_at.isoformat(),
        "stale": stale,
        "artifacts": artifacts.model_dump(),
    }


def _inconclusive(model: str, version: str) -> dict[str, Any]:
    return GateVerdict(
        model=model,
        version=version,
        verdict="inconclusive",
        gate_run_id=None,
        created_at=None,
        stale=False,
        artifacts=None,
        preset=None,
        criteria=[],
    ).model_dump(mode="json")


def verdict_answer(
    request: Request, model: str, version: str, strict: bool, max_age: str | None
) -> JSONResponse:
    """The status and body the table in the module docstring gives."""
    age = _max_age(max_age)
    run = _latest(request, model, version)
    if run is None:
        if strict:
            raise NotFoundError(f"no gate run recorded for model {model!r} version {version!r}")
        return JSONResponse(_inconclusive(model, version))
    stale = age is not None and utcnow() - run.created_at > age
    body = _body(run, model, version, stale)
    if stale and not strict:
        body["verdict"] = "inconclusive"
    ok = body["verdict"] == "pass" and not stale
    return JSONResponse(body, status_code=200 if ok or not strict else 409)


MaxAge = Annotated[
    str | None,
    Query(max_length=20, description="A verdict older than this (e.g. 1h) is stale."),
]
_VERDICT_DOC: dict[int | str, dict[str, Any]] = {
    409: {"model": GateVerdict, "description": "failed, inconclusive or stale (strict only)"},
}


@router.get(
    "/gate/{model}/{version}",
    dependencies=[Depends(requires("read"))],
    response_model=GateVerdict,
    responses={**errors(404, 422), **_VERDICT_DOC},
)
def gate_verdict(
    model: str,
    version: str,
    request: Request,
    strict: bool = Query(
        True, description="false: 200 for every case, `verdict` says (Argo Rollouts)"
    ),
    max_age: MaxAge = None,
) -> JSONResponse:
    """The latest gate verdict of a model version: 200 pass, 409 fail/inconclusive/stale, 404
    never gated; with strict=false always 200 and `verdict` says."""
    return verdict_answer(request, model, version, strict, max_age)


class FlaggerWebhook(BaseModel):
    """Flagger's webhook POST. `metadata` maps it to a gate verdict:
    `model` (default: `name`), `version` (required), `max_age` and `token` (optional; Flagger
    cannot send headers, so the read token may come here instead of `Authorization`)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(max_length=200, examples=["fraud-scorer"])
    namespace: str = Field(max_length=200, examples=["ml"])
    phase: str = Field(max_length=50, examples=["Progressing"])
    metadata: dict[str, str] = Field(
        default_factory=dict, examples=[{"model": "fraud", "version": "2", "max_age": "1h"}]
    )


@router.post(
    "/flagger/gate",
    response_model=GateVerdict,
    responses={**errors(404, 422), **_VERDICT_DOC},
    openapi_extra={"security": [{"bearer": []}], SCOPE_KEY: "read"},
)
def flagger_gate(body: FlaggerWebhook, request: Request) -> JSONResponse:
    """Flagger webhook: 200 promotes (a fresh pass), 409 or 404 halts the canary."""
    token = bearer(request) or body.metadata.get("token")
    authenticate_token(request.app.state.tokens, token, "read")
    version = body.metadata.get("version")
    if not version:
        raise InputError("metadata.version: say which model version this canary runs")
    model = body.metadata.get("model") or body.name
    return verdict_answer(request, model, version, True, body.metadata.get("max_age"))
