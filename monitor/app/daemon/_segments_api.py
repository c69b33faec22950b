"""`GET /v1/models/{model}/segments`: the stored runs of the model's scheduled segment checks.

Without `check`: the newest run of every segment check of the model (`segments` in the config).
With `check`: that check's newest `limit` runs, newest first. Each run carries the whole report
(mode, status, the reason when nothing was searched, each segment with its predicates, effect,
interval, p- and q-value and `persistence`: `new`, or `persisting` when the run before reported
it too). Label-free runs are flagged `estimated`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import daemon, errors
from monitor.app.daemon.canary_api import model_config
from monitor.errors import NotFoundError
from monitor.segments import segment_history
from monitor.storage import SegmentRun

router = APIRouter(tags=["results"])


class SegmentRunOut(BaseModel):
    """One stored run of a segment check."""

    check: str
    mode: str = Field(description="labels, estimated or drift.")
    status: str = Field(description="segments, ok or insufficient_data.")
    evaluated_at: datetime
    n_rows: int
    n_segments: int = Field(description="Segments reported.")
    n_new: int = Field(description="Reported segments the run before did not report.")
    report: dict[str, Any] = Field(description="The whole report, as `modelwatch segments`.")


class SegmentRuns(BaseModel):
    model: str
    runs: list[SegmentRunOut]


def _out(run: SegmentRun) -> SegmentRunOut:
    return SegmentRunOut(check=run.check_name, mode=run.mode, status=run.status,
                         evaluated_at=run.evaluated_at, n_rows=run.n_rows,
                         n_segments=run.n_segments, n_new=run.n_new,
                         report=run.report)  # fmt: skip


@router.get(
    "/models/{model}/segments",
    dependencies=[Depends(requires("read"))],
    response_model=SegmentRuns,
    responses=errors(404, 422),
)
def list_segments(
    model: str,
    request: Request,
    check: str | None = Query(None, max_length=100, description="One check's history."),
    limit: int = Query(1, ge=1, le=100, description="Runs of `check`, newest first."),
) -> SegmentRuns:
    """The newest run of each segment check of the model, or one check's newest runs."""
    state = daemon(request)
    model_config(state.config, model)
    checks = [c.name for c in state.config.segments if c.model == model]
    if check is not None and check not in checks:
        known = ", ".join(checks) or "none"
        raise NotFoundError(f"no segment check {check!r} for model {model!r} (checks: {known})")
    if check is not None:
        runs = segment_history(state.engine, check, model, limit)
    else:
        runs = [r for name in checks for r in segment_history(state.engine, name, model, 1)]
    return SegmentRuns(model=model, runs=[_out(r) for r in runs])
