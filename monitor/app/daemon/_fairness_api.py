"""`GET /v1/models/{model}/fairness`: stored fairness results per protected attribute, filtered.

Without `window_start` or `since`, only the newest window (of the matching rows) is returned.
Rows with `slice` null compare an attribute's groups (demographic parity difference and ratio,
equal opportunity and equalized odds differences); rows with a slice (`{"gender":"f"}`) are one
group's selection rate, TPR, FPR and calibration error. `insufficient_data` rows say why in
`reason`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import daemon, errors
from monitor.app.daemon._results_api import NEXT, Filters, _check_name, _filters, _known, _query
from monitor.errors import InputError
from monitor.fairness import METRICS
from monitor.results.store import result_document
from monitor.storage import FairnessResultRow, transaction

router = APIRouter(tags=["results"])
FairnessStatus = Literal["ok", "violation", "insufficient_data"]


class FairnessRow(BaseModel):
    """One fairness metric of one attribute (or one of its groups) in one window."""

    version: str
    window_start: datetime
    window_end: datetime
    attribute: str
    slice: dict[str, str] | None = Field(
        description="null: the comparison of the attribute's groups; else the group's."
    )
    metric: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float | None = Field(description="The bound; null for per-group rates.")
    n: int
    status: FairnessStatus
    reason: str | None = Field(description="Why the status is `insufficient_data`.")
    computed_at: datetime


class FairnessList(BaseModel):
    model: str
    results: list[FairnessRow]
    next_cursor: str | None = Field(default=None, description=NEXT)


@router.get(
    "/models/{model}/fairness",
    dependencies=[Depends(requires("read"))],
    response_model=FairnessList,
    responses=errors(404, 422),
)
def model_fairness(
    model: str,
    request: Request,
    filters: Annotated[Filters, Depends(_filters)],
    attribute: Annotated[
        str | None, Query(max_length=200, description="Only this protected attribute.")
    ] = None,
    metric: Annotated[
        str | None, Query(max_length=50, description="Only this fairness metric.")
    ] = None,
    status: Annotated[
        FairnessStatus | None, Query(description="Only results with this status.")
    ] = None,
) -> FairnessList:
    """Fairness metrics of the newest labelled window (or the windows asked for), per
    protected attribute and group."""
    _check_name("metric", metric, "fairness metric", METRICS)
    if filters.granularity is not None:
        raise InputError("granularity: fairness is computed per window only")
    filters = filters.model_copy(update={"status": status})
    wanted = {"attribute": attribute, "metric": metric}
    with transaction(daemon(request).engine) as session:
        _known(session, request, model)
        page = _query(session, FairnessResultRow, model, filters, wanted)
        results = [FairnessRow.model_validate(result_document(r)) for r in page.items]
    return FairnessList(model=model, results=results, next_cursor=page.next_cursor)
