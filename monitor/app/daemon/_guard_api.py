"""`GET /v1/models/{model}/guard`: a model's gate verdict history (scheduled replays and manual
gate runs), newest first, read-only.

Each entry says what was compared (artifact hashes, reference version), where it ran (ONNX
Runtime providers and version), the verdict with its failing criteria, whether it diverges from
an earlier pass on the same content, and the rollback it caused.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field
from sqlalchemy import and_, or_, select

from guards.schedule import divergence
from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import daemon, errors
from monitor.app.daemon._paging import Cursor, Limit, decode_cursor, page_of
from monitor.errors import InputError
from monitor.storage import GateRun, RollbackEvent, session_factory

router = APIRouter(tags=["release"])


class GuardRollback(BaseModel):
    """The move of `active` this run caused."""

    event_id: int
    from_version: str
    to_version: str


class GuardRun(BaseModel):
    """One stored gate verdict."""

    gate_run_id: int
    version: str
    created_at: datetime
    verdict: Literal["pass", "fail", "inconclusive"]
    trigger: str = Field(description="`schedule` for a scheduled replay, else `manual`.")
    preset: str
    reference_version: str | None
    providers: dict[str, Any] = Field(description="Execution providers that really ran.")
    onnxruntime: str | None = Field(description="ONNX Runtime version of a scheduled replay.")
    reference_sha256: str
    candidate_sha256: str
    golden_sha256: str
    failing: list[dict[str, Any]] = Field(description="The criteria that failed.")
    diverged_from: int | None = Field(
        description="An earlier passing run on the same content this one did not pass like."
    )
    rollback: GuardRollback | None


class GuardHistory(BaseModel):
    model: str
    runs: list[GuardRun]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null: last.")


@router.get(
    "/models/{model}/guard",
    dependencies=[Depends(requires("read"))],
    response_model=GuardHistory,
    responses=errors(422),
)
def guard_history(
    model: str,
    request: Request,
    since: Annotated[
        datetime | None, Query(description="Runs at or after this time (RFC 3339).")
    ] = None,
    version: Annotated[str | None, Query(max_length=100, description="Only this version.")] = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> GuardHistory:
    """The model's gate verdicts, newest first (an unknown model has none)."""
    if since is not None and since.tzinfo is None:
        raise InputError("since: give a timezone offset (e.g. 2026-01-01T00:00:00Z)")
    engine = daemon(request).engine
    after = decode_cursor("guard", cursor, (datetime, int))
    query = select(GateRun).where(GateRun.model == model)
    if since is not None:
        query = query.where(GateRun.created_at >= since)
    if version is not None:
        query = query.where(GateRun.version == version)
    if after is not None:
        at, run_id = after
        query = query.where(
            or_(GateRun.created_at < at, and_(GateRun.created_at == at, GateRun.id < run_id))
        )
    query = query.order_by(GateRun.created_at.desc(), GateRun.id.desc()).limit(limit + 1)
    with session_factory(engine)() as s:
        page = page_of("guard", s.scalars(query).all(), limit, lambda r: (r.created_at, r.id))
        ids = [r.id for r in page.items]
        moves = {
            e.gate_run_id: GuardRollback(
                event_id=e.id, from_version=e.from_version, to_version=e.to_version
            )
            for e in s.scalars(select(RollbackEvent).where(RollbackEvent.gate_run_id.in_(ids)))
        }
        runs = [_entry(engine, r, moves.get(r.id)) for r in page.items]
    return GuardHistory(model=model, runs=runs, next_cursor=page.next_cursor)


def _entry(engine: Any, r: GateRun, move: GuardRollback | None) -> GuardRun:
    run = dict(r.verdict_json.get("run") or {})
    diverged = divergence(engine, r.id)
    return GuardRun(
        gate_run_id=r.id,
        version=r.version,
        created_at=r.created_at,
        verdict=r.verdict,
        trigger=str(run.get("trigger") or "manual"),
        preset=r.preset,
        reference_version=run.get("reference_version"),
        providers=dict(r.providers),
        onnxruntime=run.get("onnxruntime"),
        reference_sha256=r.reference_sha256,
        candidate_sha256=r.candidate_sha256,
        golden_sha256=r.golden_sha256,
        failing=[c for c in r.criteria if isinstance(c, dict) and c.get("status") == "fail"],
        diverged_from=diverged.previous_run_id if diverged is not None else None,
        rollback=move,
    )
