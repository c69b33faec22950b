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

import math
from typing import Annotated, Any, Literal, get_args

import orjson
from fastapi import APIRouter, Depends, Header, HTTPException, Request, Response
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
from monitor.app.daemon._auth import SCOPE_KEY, authenticate, requires
from monitor.app.daemon._common import ApiModel, ErrorBody, errors
from monitor.app.daemon._dead_letters_api import (
    MAX_WAIT_S,
    IngestResult,
    Wait,
    dead_letters_url,
    drained_result,
)
from monitor.errors import InputError

router = APIRouter(tags=["ingest"])
IDEMPOTENCY_HEADER = "Idempotency-Key"
_KEY_DOC = "Makes a retried request count once (1-200 visible ASCII characters)"
WAIT_DOC: str = get_args(Wait)[1].description
_BUSY = "the database is unavailable, or the intake backlog is at collect.http_max_backlog"

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
    # Stage timings (any subset; `model_ms` is `model_latency_ms` under its stage name).
    queue_ms: float | None = Field(default=None, ge=0, description="Waiting before any work")
    preprocess_ms: float | None = Field(default=None, ge=0, description="Preprocessing stage")
    model_ms: float | None = Field(default=None, ge=0, description="Inference stage")
    postprocess_ms: float | None = Field(default=None, ge=0, description="Postprocessing stage")
    network_ms: float | None = Field(default=None, ge=0, description="On the network")
    error: str | None = Field(default=None, description="Set on an errored request")
    attributions: dict[str, float] | None = Field(default=None, description="e.g. SHAP values")
    # Measures (monitor.common.measures), any subset; each also under its registered aliases
    # (`gen_ai.server.time_to_first_token` in seconds, `prompt_tokens`, `DCGM_FI_DEV_FB_USED`).
    ttft_ms: float | None = Field(default=None, ge=0, description="Time to first token")
    tpot_ms: float | None = Field(default=None, ge=0, description="Time per output token")
    tokens_per_s: float | None = Field(default=None, ge=0, description="Output tokens/s")
    input_tokens: float | None = Field(default=None, ge=0, description="Prompt tokens")
    output_tokens: float | None = Field(default=None, ge=0, description="Generated tokens")
    cpu_percent: float | None = Field(default=None, ge=0, description="CPU (100 = one core)")
    rss_mb: float | None = Field(default=None, ge=0, description="Resident memory, MiB")
    gpu_utilization_percent: float | None = Field(default=None, ge=0, description="GPU use")
    gpu_memory_mb: float | None = Field(default=None, ge=0, description="GPU memory, MiB")
    batch_size: float | None = Field(default=None, ge=0, description="Batch of this request")
    queue_depth: float | None = Field(default=None, ge=0, description="Requests waiting")


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
    ones become dead letters); `duplicates`: events of the earlier request with this
    Idempotency-Key, which are not counted again. `dead_letters_url` lists this request's
    rejected events once drained (with an Idempotency-Key). `result`: with `?wait=`, what the
    drain made of the request (answered 200); null when not waited for or not drained in time.
    """

    status: Literal["accepted", "duplicate"]
    queued: int
    duplicates: int
    idempotency_key: str | None
    dead_letters_url: str | None = None
    result: IngestResult | None = None


class LabelIn(ApiModel):
    """Ground truth for the prediction with the same `request_id`."""

    request_id: str = Field(min_length=1, max_length=500)
    model: str = Field(min_length=1, max_length=200)
    label: float | int | str | bool
    timestamp: str | float = Field(description="RFC 3339 with an offset, or epoch seconds")


class LabelBatch(ApiModel):
    labels: list[LabelIn]
    batch_id: str | None = None


_DRAINED = "with `?wait=`: the drain consumed the request in time; `result` says what it did"
_RESPONSES = {
    **errors(409, 413, 422),
    200: {"model": IngestAccepted, "description": _DRAINED},
    503: {"model": ErrorBody, "description": _BUSY},
}


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
    Header(alias=IDEMPOTENCY_HEADER, description=_KEY_DOC),
]


def _wait_parameter() -> dict[str, Any]:
    """`wait` as the docs show it (the handlers read it themselves with `_wait_of`)."""
    wait = {"anyOf": [{"type": "number", "minimum": 0, "maximum": MAX_WAIT_S}, {"type": "null"}]}
    return {"name": "wait", "in": "query", "required": False, "description": WAIT_DOC,
            "schema": {**wait, "title": "Wait", "description": WAIT_DOC}}  # fmt: skip


def _events_parameters() -> list[dict[str, Any]]:
    """`wait` and `Idempotency-Key` as the docs show them (`post_events` reads them itself)."""
    key = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    return [
        _wait_parameter(),
        {"name": IDEMPOTENCY_HEADER, "in": "header", "required": False, "description": _KEY_DOC,
         "schema": {**key, "title": IDEMPOTENCY_HEADER, "description": _KEY_DOC}},
    ]  # fmt: skip


def _intake(request: Request) -> HttpIntake:
    intake: HttpIntake = request.app.state.intake
    return intake


def _submit(intake: HttpIntake, body: RequestBody, key: str | None, ns: str) -> Accepted:
    try:
        return intake.submit(body, key, ns)
    except IntakeFull as exc:
        raise HTTPException(503, str(exc), {"Retry-After": str(exc.retry_after)}) from None


async def _answer(intake: HttpIntake, accepted: Accepted, ns: str, wait: float | None) -> Response:
    """The 202 (IngestAccepted); with `wait`, the drain's result and 200 once it consumed the
    request. Encoded here: no response model to validate per request on the hot path."""
    result = await drained_result(intake.engine, accepted, wait) if wait else None
    doc = {
        "status": "duplicate" if accepted.duplicates else "accepted",
        "queued": accepted.queued,
        "duplicates": accepted.duplicates,
        "idempotency_key": accepted.idempotency_key,
        "dead_letters_url": dead_letters_url(accepted.idempotency_key, ns),
        "result": None if result is None else result.model_dump(mode="json"),
    }
    status = 202 if result is None else 200
    return Response(orjson.dumps(doc), status, media_type="application/json")


def _wait_of(request: Request) -> float | None:
    """The `wait` query parameter: seconds from 0 to MAX_WAIT_S, or None when absent."""
    text = request.query_params.get("wait")
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_WAIT_S:  # NaN too
        raise InputError(f"query.wait: must be a number of seconds from 0 to {MAX_WAIT_S:g}")
    return value


@router.post(
    "/events",
    status_code=202,
    response_model=IngestAccepted,
    responses=_RESPONSES,
    openapi_extra={
        "requestBody": _events_body_doc(),
        "parameters": _events_parameters(),
        "security": [{"bearer": []}],
        SCOPE_KEY: "ingest",
    },
)
async def post_events(request: Request) -> Response:
    """Append a batch of events to the intake log; the drain aggregates it moments later.

    With `?wait=SECONDS` (at most 10) the answer waits until the drain has consumed the request
    and is then 200 with `result` (events, valid, dead letters and the first of them); past the
    wait it is the usual 202."""
    # The ack path: the token, `wait` and the key are read here, not as FastAPI dependencies
    # and parameters (solving them cost more than the append's own work; issue 17).
    authenticate(request.app.state.tokens, request, "ingest")
    wait = _wait_of(request)
    body = check_request(await request.body(), request.headers)
    key = check_idempotency_key(request.headers.get(IDEMPOTENCY_HEADER) or body.batch_id)
    intake = _intake(request)
    accepted = await run_in_threadpool(_submit, intake, body, key, "idem")
    return await _answer(intake, accepted, "idem", wait)


@router.post(
    "/labels",
    status_code=202,
    dependencies=[Depends(requires("ingest"))],
    response_model=IngestAccepted,
    responses=_RESPONSES,
    openapi_extra={"parameters": [_wait_parameter()]},
)
async def post_labels(
    body: list[LabelIn] | LabelBatch,
    request: Request,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Append ground-truth labels; they are joined to predictions with the same request id
    (`?wait=` as for events)."""
    wait = _wait_of(request)  # one validator and one message for both endpoints
    labels, batch_id = (body, None) if isinstance(body, list) else (body.labels, body.batch_id)
    key = check_idempotency_key(idempotency_key or batch_id)
    raw = orjson.dumps([label.model_dump() for label in labels])
    intake = _intake(request)
    stored = RequestBody("events", raw, len(labels))
    accepted = await run_in_threadpool(_submit, intake, stored, key, "labels")
    return await _answer(intake, accepted, "labels", wait)
