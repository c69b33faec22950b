"""`POST /v1/events` and `POST /v1/labels`: HTTP input, a source like Kafka and log files.

Bodies: modelwatch events (a JSON array, `{"events": [...], "batch_id": ...}` or one event
object), or KServe / Seldon inference-logger CloudEvents — binary mode (`ce-*` headers, the body
is the data), structured (`application/cloudevents+json`) or batched
(`application/cloudevents-batch+json`).
A body that is not JSON or not one of these shapes is a 422 at once; otherwise it is appended to
the intake log and acknowledged with 202, and the drain aggregates it within a second or two:
each event is validated there, a bad one becomes a dead letter (source `http`), the others count.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, Header, HTTPException, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from collectors import (
    CE_BATCH,
    CE_STRUCTURED,
    Accepted,
    HttpIntake,
    IntakeFull,
    RequestBody,
    check_idempotency_key,
    check_request,
)
from monitor.daemon.auth import requires
from monitor.daemon.common import ApiModel, ErrorBody, errors

router = APIRouter(tags=["ingest"])
_BUSY = "the database is unavailable, or the intake backlog is at collect.http_max_backlog"
_RESPONSES = {**errors(409, 413, 422), 503: {"model": ErrorBody, "description": _BUSY}}

Scalar = float | int | str | bool | None


class Event(BaseModel):
    """A prediction (with `features`) or a label (with `label`, no `features`)."""

    request_id: str
    model: str
    model_version: str | None = None
    timestamp: str | float = Field(description="RFC 3339 with an offset, or epoch seconds")
    features: dict[str, Scalar] | None = None
    prediction: Any = None
    metadata: dict[str, Scalar] | None = None
    label: Any = None
    # Operational fields (all optional): latency, errors (still counted), attributions.
    latency_ms: float | None = Field(default=None, ge=0, description="End-to-end latency")
    model_latency_ms: float | None = Field(default=None, ge=0, description="Inference only")
    error: str | None = Field(default=None, description="Set on an errored request")
    attributions: dict[str, float] | None = Field(default=None, description="e.g. SHAP values")


class CloudEvent(BaseModel):
    """An inference-logger CloudEvent (type `*.inference.request` or `*.inference.response`)."""

    specversion: str = "1.0"
    id: str
    type: str
    source: str
    time: str
    inferenceservicename: str | None = None
    modelversion: str | None = None
    data: dict[str, Any]


class IngestAccepted(BaseModel):
    """A request appended to the intake log (`accepted`), or a retry of one (`duplicate`).

    `queued`: events appended now, aggregated by the drain within a second or two (malformed
    ones become dead letters, see `modelwatch status`); `duplicates`: events of the earlier
    request with this Idempotency-Key, which are not counted again.
    """

    status: Literal["accepted", "duplicate"]
    queued: int
    duplicates: int
    idempotency_key: str | None


class LabelIn(ApiModel):
    """Ground truth for the prediction with the same `request_id`."""

    request_id: str = Field(min_length=1, max_length=500)
    model: str = Field(min_length=1, max_length=200)
    label: float | int | str | bool
    timestamp: str | float = Field(description="RFC 3339 with an offset, or epoch seconds")


class LabelBatch(ApiModel):
    labels: list[LabelIn]
    batch_id: str | None = None


def _events_body_doc() -> dict[str, Any]:
    event = Event.model_json_schema()
    batch = {
        "type": "object",
        "properties": {
            "events": {"type": "array", "items": event},
            "batch_id": {"type": "string", "description": "Used as the Idempotency-Key"},
        },
        "required": ["events"],
    }
    ce = CloudEvent.model_json_schema()
    return {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"oneOf": [{"type": "array", "items": event}, batch, event]}
            },
            CE_STRUCTURED: {"schema": ce},
            CE_BATCH: {"schema": {"type": "array", "items": ce}},
        },
    }


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        description="Makes a retried request count once (1-200 visible ASCII characters)",
    ),
]


def _intake(request: Request) -> HttpIntake:
    intake: HttpIntake = request.app.state.intake
    return intake


def _submit(intake: HttpIntake, body: RequestBody, key: str | None, ns: str) -> IngestAccepted:
    try:
        accepted: Accepted = intake.submit(body, key, ns)
    except IntakeFull as exc:
        raise HTTPException(503, str(exc), {"Retry-After": str(exc.retry_after)}) from None
    status: Literal["accepted", "duplicate"] = "duplicate" if accepted.duplicates else "accepted"
    return IngestAccepted(
        status=status,
        queued=accepted.queued,
        duplicates=accepted.duplicates,
        idempotency_key=accepted.idempotency_key,
    )


@router.post(
    "/events",
    status_code=202,
    dependencies=[Depends(requires("ingest"))],
    response_model=IngestAccepted,
    responses=_RESPONSES,
    openapi_extra={"requestBody": _events_body_doc()},
)
async def post_events(request: Request, idempotency_key: IdempotencyKey = None) -> IngestAccepted:
    """Append a batch of events to the intake log; the drain aggregates it moments later."""
    body = check_request(await request.body(), request.headers)
    key = check_idempotency_key(idempotency_key or body.batch_id)
    return await run_in_threadpool(_submit, _intake(request), body, key, "idem")


@router.post(
    "/labels",
    status_code=202,
    dependencies=[Depends(requires("ingest"))],
    response_model=IngestAccepted,
    responses=_RESPONSES,
)
def post_labels(
    body: list[LabelIn] | LabelBatch, request: Request, idempotency_key: IdempotencyKey = None
) -> IngestAccepted:
    """Append ground-truth labels; they are joined to predictions with the same request id."""
    labels, batch_id = (body, None) if isinstance(body, list) else (body.labels, body.batch_id)
    key = check_idempotency_key(idempotency_key or batch_id)
    raw = orjson.dumps([label.model_dump() for label in labels])
    return _submit(_intake(request), RequestBody("events", raw, len(labels)), key, "labels")
