"""`GET /v1/models/{model}/drift` and `/metrics`: stored window results, filtered.

Without `window_start` or `since`, only the newest window (of the matching rows) is returned.
`/metrics?kind=estimated` returns the estimated metrics (CBPE, each with its band, reference
threshold and the realized value once labels are joined) and the mean reconstruction error
(`metric=reconstruction_error`); `kind=all` both tables' rows, in one order; the default
`realized` the outcome metrics of joined labels. A slice is given as canonical JSON
(`{"region":"eu"}`) or `col=value`; `overall` (or an empty value) selects whole-window rows.
With `granularity` (e.g. `1d`, `7d`: a whole number of windows) results are computed on demand
for periods of that length by merging the periods' window summaries
(monitor/evaluation/periods.py); `window_start` then names a time in the period.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field
from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import daemon, errors
from monitor.app.daemon._mixed_pages import mixed_page
from monitor.app.daemon._paging import (
    Cursor,
    Limit,
    Page,
    decode_cursor,
    encode_cursor,
    page_of,
)
from monitor.detectors import detector_names
from monitor.errors import InputError, NotFoundError
from monitor.estimation import METRICS as ESTIMATED_METRICS
from monitor.estimation import MULTICLASS_METRICS, MULTIVARIATE_METRIC
from monitor.evaluation.periods import (
    SUMMARY_TABLES,
    Period,
    granularity_of,
    newest_window,
    period_drift,
    period_of,
    period_outcomes,
    periods_between,
    versions_in,
)
from monitor.outcomes import METRICS
from monitor.profiles import slice_key_from_text
from monitor.results.store import result_document, slice_key_of
from monitor.storage import (
    DriftResultRow,
    EstimatedResultRow,
    Model,
    OutcomeResultRow,
    newest,
    transaction,
    utcnow,
)

router = APIRouter(tags=["results"])
RowT = TypeVar("RowT", bound=BaseModel)


class WindowRow(BaseModel):
    """Columns shared by every result row."""

    version: str
    window_start: datetime
    window_end: datetime
    slice: dict[str, str] | None
    status: str
    value: float | None
    computed_at: datetime


class DriftRow(WindowRow):
    """One column's drift in one window and slice."""

    column: str
    method: str
    threshold: float
    # Which strategy set the threshold ("constant", "reference", "floor"); null on old rows.
    threshold_by: str | None
    p_value: float | None
    n_reference: int
    n_current: int


class MetricRow(WindowRow):
    """One outcome metric in one window and slice, with its interval and baseline."""

    metric: str
    ci_low: float | None
    ci_high: float | None
    baseline_value: float | None
    tolerance: float | None
    n: int
    level: float | None = Field(
        default=None,
        description="Realized rows: the one-sided level `degraded` tested the interval at "
        "(0.025 per result; stricter across the evaluation's results under "
        "`outcomes.correction: family`); null without a verdict.",
    )
    kind: Literal["realized", "estimated"] = Field(
        default="realized", description="realized: from joined labels; estimated: without them"
    )
    realized: float | None = Field(
        default=None, description="Estimated rows: the realized value once labels are joined."
    )
    threshold_low: float | None = Field(
        default=None, description="Estimated rows: the reference-chunk lower threshold."
    )
    threshold_high: float | None = Field(
        default=None,
        description="reconstruction_error and the regression losses (mae, mse, rmse): the "
        "reference-chunk upper bound.",
    )


NEXT = "Pass as `cursor` for the next page; null: this page is the last."
DriftStatus = Literal["ok", "drift", "insufficient_data", "missing", "new"]
MetricStatus = Literal["ok", "degraded", "drift", "insufficient_data"]
MetricKind = Literal["realized", "estimated", "all"]
KIND_HELP = "realized (outcome metrics of joined labels), estimated (without labels), or all"


class DriftList(BaseModel):
    model: str
    results: list[DriftRow]
    next_cursor: str | None = Field(default=None, description=NEXT)


class MetricList(BaseModel):
    model: str
    results: list[MetricRow]
    next_cursor: str | None = Field(default=None, description=NEXT)


class Filters(BaseModel):
    """Query filters shared by both endpoints."""

    version: str | None = None
    window_start: datetime | None = None
    since: datetime | None = None
    slice: str | None = None
    status: str | None = None
    limit: int = 500
    granularity: str | None = None
    cursor: str | None = None


SliceText = Annotated[
    str | None,
    Query(description='`{"region":"eu"}`, `region=eu`, or `overall`', max_length=500),
]


def _filters(
    version: Annotated[
        str | None, Query(max_length=100, description="Only this model version.")
    ] = None,
    window_start: Annotated[
        datetime | None, Query(description="Exactly this window (RFC 3339).")
    ] = None,
    since: Annotated[
        datetime | None, Query(description="Windows starting at or after this.")
    ] = None,
    slice: SliceText = None,
    limit: Limit = 500,
    cursor: Cursor = None,
    granularity: Annotated[
        str | None,
        Query(description="Merge windows into periods this long (1d, 7d).", max_length=20),
    ] = None,
) -> Filters:
    return Filters(
        version=version,
        window_start=window_start,
        since=since,
        slice=slice,
        limit=limit,
        granularity=granularity,
        cursor=cursor,
    )


def _check_time(name: str, value: datetime | None) -> None:
    if value is not None and value.tzinfo is None:
        raise InputError(f"{name}: give a timezone offset (e.g. 2026-01-01T00:00:00Z)")


def _known(session: Session, request: Request, model: str) -> None:
    if any(m.name == model for m in daemon(request).config.models):
        return
    found = session.scalar(
        select(
            exists().where(Model.name == model)
            | exists().where(DriftResultRow.model == model)
            | exists().where(OutcomeResultRow.model == model)
            | exists().where(EstimatedResultRow.model == model)
        )
    )
    if not found:
        raise NotFoundError(f"unknown model {model!r}: not configured, registered or measured")


def _query(
    session: Session, table: Any, model: str, f: Filters, extra: dict[str, str | None]
) -> Page[Any]:
    conds = _where(table, model, f, extra)
    if f.window_start is not None:
        conds.append(table.window_start == f.window_start)
    elif f.since is not None:
        conds.append(table.window_start >= f.since)
    else:
        conds.append(table.window_start == newest(session, table.window_start, conds))
    after = decode_cursor("results", f.cursor, (datetime, str, str, int))
    if after is not None:
        conds.append(_after(table, *after))
    order = (table.window_start.desc(), table.version, table.slice_key, table.id)
    query = select(table).where(*conds).order_by(*order).limit(f.limit + 1)
    return page_of("results", session.scalars(query).all(), f.limit, _row_key)


def _where(table: Any, model: str, f: Filters, extra: dict[str, str | None]) -> list[Any]:
    """The filters' conditions on `table`, but the window's."""
    _check_time("window_start", f.window_start)
    _check_time("since", f.since)
    conds = [table.model == model]
    if f.version is not None:
        conds.append(table.version == f.version)
    if f.slice is not None:
        conds.append(table.slice_key == slice_key_from_text(f.slice))
    if f.status is not None:
        conds.append(table.status == f.status)
    return conds + [getattr(table, k) == v for k, v in extra.items() if v is not None]


def _row_key(row: Any) -> tuple[Any, ...]:
    return (row.window_start, row.version, row.slice_key, row.id)


def _after(table: Any, start: datetime, version: str, slice_key: str, row_id: int) -> Any:
    """Rows after (start, version, slice_key, id) in the order newest window first."""
    same = (table.window_start == start) & (
        (table.version > version)
        | ((table.version == version) & (table.slice_key > slice_key))
        | ((table.version == version) & (table.slice_key == slice_key) & (table.id > row_id))
    )
    return (table.window_start < start) | same


@router.get(
    "/models/{model}/drift",
    dependencies=[Depends(requires("read"))],
    response_model=DriftList,
    responses=errors(404, 422),
)
def model_drift(
    model: str,
    request: Request,
    filters: Annotated[Filters, Depends(_filters)],
    column: Annotated[str | None, Query(max_length=200, description="Only this column.")] = None,
    method: Annotated[
        str | None, Query(max_length=50, description="Only this drift method (a registered one).")
    ] = None,
    status: Annotated[
        DriftStatus | None, Query(description="Only results with this status.")
    ] = None,
) -> DriftList:
    """Drift results of the newest window (or the windows asked for), per column and slice."""
    _check_name("method", method, "drift method", detector_names())
    filters = filters.model_copy(update={"status": status})
    with transaction(daemon(request).engine) as session:
        _known(session, request, model)
        if filters.granularity is not None:
            wanted = {"column": column, "method": method}
            got = _period_rows(request, model, filters, wanted, "drift", DriftRow)
            return DriftList(model=model, results=got.items, next_cursor=got.next_cursor)
        page = _query(session, DriftResultRow, model, filters, {"column": column, "method": method})
        results = [DriftRow.model_validate(result_document(r)) for r in page.items]
    return DriftList(model=model, results=results, next_cursor=page.next_cursor)


@router.get(
    "/models/{model}/metrics",
    dependencies=[Depends(requires("read"))],
    response_model=MetricList,
    responses=errors(404, 422),
)
def model_metrics(
    model: str,
    request: Request,
    filters: Annotated[Filters, Depends(_filters)],
    metric: Annotated[
        str | None, Query(max_length=50, description="Only this metric (one the kind has).")
    ] = None,
    status: Annotated[
        MetricStatus | None, Query(description="Only results with this status.")
    ] = None,
    kind: Annotated[MetricKind, Query(description=KIND_HELP)] = "realized",
) -> MetricList:
    """Outcome metrics (realized, estimated or both) of the newest window (or the windows
    asked for), per slice."""
    _check_name("metric", metric, "metric", _metric_names(kind))
    if status == "drift" and kind == "realized":
        raise InputError("status: 'drift' is the reconstruction error's (kind=estimated or all); "
                         "outcome metrics are ok, degraded or insufficient_data")  # fmt: skip
    if filters.granularity is not None and kind != "realized":
        raise InputError("granularity: periods are computed for kind=realized only")
    filters = filters.model_copy(update={"status": status})
    wanted = {"metric": metric}
    with transaction(daemon(request).engine) as session:
        _known(session, request, model)
        if filters.granularity is not None:
            got = _period_rows(request, model, filters, wanted, "outcomes", MetricRow)
            return MetricList(model=model, results=got.items, next_cursor=got.next_cursor)
        if kind == "all":
            conds = {t: _where(t, model, filters, wanted) for t in MIXED}
            f = filters
            page = mixed_page(session, conds, f.window_start, f.since, f.cursor, f.limit)
            rows = [metric_row(r) for r in page.items]
            return MetricList(model=model, results=rows, next_cursor=page.next_cursor)
        table = OutcomeResultRow if kind == "realized" else EstimatedResultRow
        found = _query(session, table, model, filters, wanted)
        results = [metric_row(r) for r in found.items]
    return MetricList(model=model, results=results, next_cursor=found.next_cursor)


def _metric_names(kind: str) -> set[str]:
    estimated = {*ESTIMATED_METRICS, *MULTICLASS_METRICS, MULTIVARIATE_METRIC}
    realized = set(METRICS)
    return realized if kind == "realized" else estimated if kind == "estimated" else (
        realized | estimated)  # fmt: skip


def metric_row(r: Any) -> MetricRow:
    """The API row of an outcome or an estimated result row."""
    doc = result_document(r)
    if isinstance(r, EstimatedResultRow):
        doc |= {"kind": "estimated", "baseline_value": None, "tolerance": None}
    return MetricRow.model_validate(doc)


# kind=all: realized rows before estimated ones of the same window, version and slice
MIXED: tuple[Any, ...] = (OutcomeResultRow, EstimatedResultRow)


def _check_name(field: str, value: str | None, what: str, known: Iterable[str]) -> None:
    """422 naming `field` when `value` is not a registered name (the registry's own list)."""
    names = sorted(known)
    if value is not None and value not in names:
        raise InputError(f"{field}: unknown {what} {value!r}; known: {', '.join(names)}")


def _periods(request: Request, model: str, f: Filters, kind: str) -> tuple[Any, list[Period]]:
    """The configured model and the periods the filters ask for (newest first)."""
    config = daemon(request).config
    cfg = next((m for m in config.models if m.name == model), None)
    if cfg is None:
        raise InputError(f"granularity: model {model!r} is not configured here")
    _check_time("window_start", f.window_start)
    _check_time("since", f.since)
    size = granularity_of(f.granularity or "", config.collect.window)
    if f.window_start is not None:
        return cfg, [period_of(f.window_start, size)]
    newest = newest_window(daemon(request).engine, SUMMARY_TABLES[kind], model)
    if newest is None:
        return cfg, []
    since = f.since if f.since is not None else newest
    return cfg, periods_between(since, max(since, newest), size)


def _keep(row: dict[str, Any], f: Filters, wanted: dict[str, str | None]) -> bool:
    if f.slice is not None and row["slice_key"] != slice_key_from_text(f.slice):
        return False
    if f.status is not None and row["status"] != f.status:
        return False
    return all(v is None or row[k] == v for k, v in wanted.items())


def _period_rows(
    request: Request,
    model: str,
    f: Filters,
    wanted: dict[str, str | None],
    kind: str,
    row_type: type[RowT],
) -> Page[RowT]:
    """`row_type` rows of each asked-for period and version, computed from merged summaries."""
    engine = daemon(request).engine
    cfg, periods = _periods(request, model, f, kind)
    compute = period_drift if kind == "drift" else period_outcomes
    fields, now = set(row_type.model_fields), utcnow()
    out: list[RowT] = []
    for period in periods:
        versions = versions_in(engine, SUMMARY_TABLES[kind], model, period)
        for version in versions if f.version is None else [f.version]:
            for r in compute(engine, cfg, version, period):
                row = {"version": version, "window_start": period.start, **result_document(r)}
                row |= {"window_end": period.end, "computed_at": now}
                if _keep(row | {"slice_key": slice_key_of(r.slice)}, f, wanted):
                    out.append(row_type(**{k: v for k, v in row.items() if k in fields}))
    offset = (decode_cursor("periods", f.cursor, (int,)) or [0])[0]
    rest = out[offset : offset + f.limit + 1]
    more = len(rest) > f.limit
    next_cursor = encode_cursor("periods", [offset + f.limit]) if more else None
    return Page(rest[: f.limit], next_cursor)
