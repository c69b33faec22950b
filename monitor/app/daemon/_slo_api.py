"""`GET /v1/models/{model}/slo`: serving SLO results per window and slice.

Latency objectives carry a `detail` for people: the change of p95 since the previous window and
the stage that moved, and each stage's p95 (monitor/slo/breakdown.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import daemon, errors
from monitor.app.daemon.canary_api import model_config
from monitor.canary import since_of
from monitor.errors import NotFoundError
from monitor.results.store import result_document
from monitor.slo.breakdown import latency_explanations
from monitor.slo.evaluate import slo_results
from monitor.slo.result import SloResult

router = APIRouter(tags=["results"])


class SloRow(BaseModel):
    """One objective of one (version, window, slice)."""

    version: str
    window_start: datetime
    slice: dict[str, str] | None
    objective: str
    value: float | None
    threshold: float | None
    n: int
    status: str
    detail: str | None = Field(
        None,
        description=(
            "Latency objectives: which stage moved and each stage's p95; measure objectives "
            "without enough samples: why (`no event carried ttft_ms`)"
        ),
    )


class SloList(BaseModel):
    model: str
    results: list[SloRow]


@router.get(
    "/models/{model}/slo",
    dependencies=[Depends(requires("read"))],
    response_model=SloList,
    responses=errors(404, 422),
)
def list_slo(
    model: str,
    request: Request,
    since: str | None = Query(None, max_length=64, description="`1d` (default) or RFC 3339."),
    version: str | None = Query(None, max_length=100, description="Only this model version."),
) -> SloList:
    """The model's `slo` objectives per window and slice since `since`, newest first."""
    state = daemon(request)
    cfg = model_config(state.config, model)
    if cfg.slo is None:
        raise NotFoundError(f"model {model!r} has no `slo` in the config")
    now = datetime.now(UTC)
    start = since_of(since, now, default=timedelta(days=1))
    rows = slo_results(state.engine, model, cfg.slo, start, now, now, version)
    latency = cfg.slo.latency_p95_ms is not None or cfg.slo.latency_p99_ms is not None
    texts = latency_explanations(state.engine, model, start, now, version) if latency else {}
    return SloList(
        model=model,
        results=[
            SloRow.model_validate({**result_document(r), "detail": _detail(texts, r)}) for r in rows
        ],
    )


def _detail(texts: dict[tuple[str, datetime, str], str], r: SloResult) -> str | None:
    """The latency breakdown of a latency objective's window and slice."""
    if not r.objective.startswith("latency_"):
        return r.detail
    return texts.get((r.version, r.window_start, r.slice_key))
