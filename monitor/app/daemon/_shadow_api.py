"""`GET /v1/models/{model}/shadow`: paired shadow statistics since a time.

`results` hold one row per (primary version, shadow version, slice), merged over every window
since `since` (a period's statistics are a merge of its windows' summaries); `windows` hold the
overall slice of each window, oldest first (the series a dashboard draws). Rows with one
version empty count sides that found no pair within `shadow.pair_horizon`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import daemon, errors
from monitor.app.daemon.canary_api import model_config
from monitor.canary import since_of
from monitor.errors import NotFoundError
from monitor.profiles import parse_slice_key
from monitor.shadow import ShadowResult, shadow_results, window_results

router = APIRouter(tags=["results"])


class ShadowRow(BaseModel):
    """Paired statistics of one (primary version, shadow version, slice) over [start, end)."""

    primary_version: str = Field(description="The primary (stable) version; empty: unpaired.")
    shadow_version: str = Field(description="The shadow (candidate) version; empty: unpaired.")
    slice: dict[str, str] | None = Field(description="The slice; null for all traffic.")
    start: datetime
    end: datetime
    pairs: int = Field(description="Requests with both sides.")
    decided: int = Field(description="Pairs with a predicted class on both sides.")
    unpaired_primary: int = Field(description="Primary sides without a shadow in the horizon.")
    unpaired_shadow: int = Field(description="Shadow sides without a primary in the horizon.")
    flip_rate: float | None = Field(description="Pairs whose predicted class differs.")
    flip_rate_low: float | None = Field(description="Wilson 95% lower bound of the flip rate.")
    flip_rate_high: float | None = Field(description="Wilson 95% upper bound of the flip rate.")
    abs_diff_mean: float | None = Field(description="Mean |shadow score - primary score|.")
    abs_diff_p99: float | None = Field(description="p99 of |score difference| (1% sketch).")
    latency_ratio_mean: float | None = Field(description="Mean shadow/primary latency.")
    latency_ratio_p99: float | None = Field(description="p99 of the per-request latency ratio.")
    labelled: int = Field(description="Pairs whose label joined.")
    primary_only: int = Field(description="McNemar's b: the primary right, the shadow wrong.")
    shadow_only: int = Field(description="McNemar's c: the shadow right, the primary wrong.")
    mcnemar_p: float | None = Field(description="McNemar's exact two-sided p-value.")
    metric: str | None = Field(description="accuracy_diff or abs_error_diff (shadow - primary).")
    metric_diff: float | None = Field(description="The paired metric difference.")
    metric_diff_low: float | None = Field(description="Its 95% lower bound.")
    metric_diff_high: float | None = Field(description="Its 95% upper bound.")
    status: str = Field(description="ok, diverged or insufficient_data.")
    failed: list[str] = Field(description="The criteria that failed: flip_rate, mcnemar.")


class ShadowList(BaseModel):
    model: str
    since: datetime
    results: list[ShadowRow]
    windows: list[ShadowRow]


def _row(result: ShadowResult) -> ShadowRow:
    doc: dict[str, Any] = result.to_dict()
    doc["slice"] = parse_slice_key(doc.pop("slice_key"))
    return ShadowRow.model_validate(doc)


@router.get(
    "/models/{model}/shadow",
    dependencies=[Depends(requires("read"))],
    response_model=ShadowList,
    responses=errors(404, 422),
)
def list_shadow(
    model: str,
    request: Request,
    since: str | None = Query(None, max_length=64, description="`1d` (default) or RFC 3339."),
) -> ShadowList:
    """The model's paired shadow statistics since `since`: merged per version pair and slice,
    and per window (overall)."""
    state = daemon(request)
    cfg = model_config(state.config, model)
    if cfg.shadow is None:
        raise NotFoundError(f"model {model!r} has no `shadow` in the config")
    now = datetime.now(UTC)
    start = since_of(since, now, default=timedelta(days=1))
    until = now + timedelta(seconds=1)
    return ShadowList(
        model=model,
        since=start,
        results=[_row(r) for r in shadow_results(cfg, state.engine, start, until)],
        windows=[_row(r) for r in window_results(cfg, state.engine, start, until)],
    )
