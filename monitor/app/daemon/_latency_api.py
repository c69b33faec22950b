"""`GET /v1/models/{model}/latency`: latency per stage, per window, version and slice.

Each window's end-to-end p50/p95/p99 and the same percentiles of each stage its events reported
(`queue`, `preprocess`, `model`, `postprocess`, `network`), each stage's `p95_share` and
`mean_share` (defined in monitor/slo/breakdown.py: percentiles do not add), and the change of
p95 since the same version's and slice's previous window in the range, naming the stage that
moved ("p95 +18 ms, of which model +16 ms"). Beside them, each measure the window's events
carried (`measures`: GPU utilisation and memory, CPU, queue depth, time to first token...) with
its p50/p95/p99 and largest value, so a latency rise and a saturated GPU show side by side.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import daemon, errors
from monitor.app.daemon._results_api import SliceText
from monitor.app.daemon.canary_api import model_config
from monitor.canary import since_of
from monitor.profiles import slice_key_from_text
from monitor.profiles.slicekeys import parse_slice_key
from monitor.slo.breakdown import WindowBreakdown, window_breakdowns

router = APIRouter(tags=["results"])

_MS = "milliseconds, from the 1 %-accurate sketch (null: no event carried it)"


class StageOut(BaseModel):
    """One stage's percentiles and shares of the total."""

    stage: str = Field(description="queue, preprocess, model, postprocess or network")
    n: int = Field(description="Events that carried this stage's timing")
    p50: float | None = Field(description=_MS)
    p95: float | None = Field(description=_MS)
    p99: float | None = Field(description=_MS)
    p95_share: float | None = Field(description="This stage's p95 / the total p95")
    mean_share: float | None = Field(description="This stage's mean / the total mean")


class MeasureOut(BaseModel):
    """One measure's percentiles over the window's events that carried it."""

    measure: str = Field(description="The measure's canonical name (`gpu_utilization_percent`)")
    unit: str = Field(description="ms, percent, mb, or empty (counts, tokens per second)")
    n: int = Field(description="Events that carried it")
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None = Field(description="The largest value (within the sketch's 1 %)")


class ChangeOut(BaseModel):
    """How p95 moved since the previous window of the same version and slice."""

    baseline: float | None = Field(description="p95 of the previous window, ms")
    current: float | None = Field(description="p95 of this window, ms")
    delta: float | None = Field(description="current - baseline, ms")
    stage: str | None = Field(description="The stage whose p95 moved most the same way")
    stage_delta: float | None = Field(description="That stage's p95 change, ms")
    text: str = Field(description='e.g. "p95 +18 ms, of which model +16 ms"')


class WindowLatency(BaseModel):
    """One (version, window, slice)."""

    version: str
    window_start: datetime
    window_end: datetime
    slice: dict[str, str] | None = Field(description="null: the whole window")
    n: int = Field(description="Events that carried `latency_ms`")
    p50: float | None = Field(description=_MS)
    p95: float | None = Field(description=_MS)
    p99: float | None = Field(description=_MS)
    stages: list[StageOut]
    measures: list[MeasureOut] = Field(description="Measures the window's events carried")
    change: ChangeOut | None = Field(description="null for the first window in the range")


class LatencyList(BaseModel):
    model: str
    windows: list[WindowLatency]


def _window(w: WindowBreakdown) -> WindowLatency:
    b, s = w.breakdown, w.shift
    change = None
    if s is not None:
        moved = s.stage
        change = ChangeOut(
            baseline=s.baseline,
            current=s.current,
            delta=s.delta,
            stage=moved.stage if moved else None,
            stage_delta=moved.delta if moved else None,
            text=s.text(),
        )
    return WindowLatency(
        version=w.version,
        window_start=w.window_start,
        window_end=w.window_end,
        slice=parse_slice_key(w.slice_key),
        n=b.n,
        p50=b.p50,
        p95=b.p95,
        p99=b.p99,
        stages=[StageOut.model_validate(st, from_attributes=True) for st in b.stages],
        measures=[MeasureOut.model_validate(m, from_attributes=True) for m in b.measures],
        change=change,
    )


@router.get(
    "/models/{model}/latency",
    dependencies=[Depends(requires("read"))],
    response_model=LatencyList,
    responses=errors(404, 422),
)
def list_latency(
    model: str,
    request: Request,
    since: str | None = Query(None, max_length=64, description="`1d` (default) or RFC 3339."),
    version: str | None = Query(None, max_length=100, description="Only this model version."),
    slice: SliceText = None,
) -> LatencyList:
    """Latency per stage of the model's serving windows starting since `since`, newest first
    (every slice, or only `slice`)."""
    state = daemon(request)
    model_config(state.config, model)  # 404 for a model not configured
    now = datetime.now(UTC)
    start = since_of(since, now, default=timedelta(days=1))
    key = None if slice is None else slice_key_from_text(slice)
    rows = window_breakdowns(state.engine, model, start, now, version, key)
    return LatencyList(model=model, windows=[_window(w) for w in rows])
