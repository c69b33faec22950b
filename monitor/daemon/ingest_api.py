"""`POST /v1/events` and `POST /v1/labels`: HTTP input through the same ingest pipeline as Kafka.

Bodies: modelwatch events (a JSON array, or `{"events": [...], "batch_id": ...}`), or KServe /
Seldon inference-logger CloudEvents — binary mode (`ce-*` headers, the body is the data),
structured (`application/cloudevents+json`) or batched (`application/cloudevents-batch+json`).
Each event is one record: a bad event is a dead letter, the others count.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Header, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from monitor.daemon.auth import requires
from monitor.daemon.common import ApiModel, errors
from monitor.daemon.intake import HttpIntake, IntakeResult, check_idempotency_key
from monitor.errors import InputError

router = APIRouter(tags=["ingest"])

CE_STRUCTURED = "application/cloudevents+json"
CE_BATCH = "application/cloudevents-batch+json"
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


class IngestResult(BaseModel):
    """Counts of one request: aggregated events, labels, dead letters, late, duplicates.

    `duplicates` counts events skipped because this Idempotency-Key was already applied.
    """

    accepted: int
    labels: int
    dead_letters: int
    late: int
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
            "application/json": {"schema": {"oneOf": [{"type": "array", "items": event}, batch]}},
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


def _parse(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"body: invalid JSON: {exc}") from None


# orjson writes at most 254 levels; a payload past orjson's 1024-level read limit is one the
# collector dead-letters as `too_deep`, like any event nested past collectors' MAX_DEPTH.
_TOO_DEEP = b"[" * 1100 + b"]" * 1100


def _dump(item: Any) -> bytes:
    """One event as its own payload; a deeply nested one still becomes a (dead-letter) record."""
    try:
        return orjson.dumps(item)
    except orjson.JSONEncodeError:
        try:
            return json.dumps(item, separators=(",", ":")).encode()
        except (RecursionError, ValueError):
            return _TOO_DEEP


def _dump_all(items: list[Any]) -> list[bytes]:
    return [_dump(item) for item in items]


def _native(body: bytes) -> tuple[list[bytes], str | None]:
    doc = _parse(body)
    if isinstance(doc, list):
        return _dump_all(doc), None
    if isinstance(doc, dict) and isinstance(doc.get("events"), list):
        batch_id = doc.get("batch_id")
        if batch_id is not None and not isinstance(batch_id, str):
            raise InputError("body.batch_id: must be a string")
        return _dump_all(doc["events"]), batch_id
    raise InputError('body: expected a JSON array of events or {"events": [...]}')


def _binary_cloudevent(request: Request, body: bytes) -> bytes:
    """Binary mode: ce-* headers carry the attributes, the body is the data."""
    event: dict[str, Any] = {
        name[3:]: value for name, value in request.headers.items() if name.startswith("ce-")
    }
    ctype = request.headers.get("content-type")
    if ctype:
        event["datacontenttype"] = ctype
    try:
        event["data"] = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        event["data"] = body.decode("utf-8", "replace")
    return _dump(event)


def _payloads(request: Request, body: bytes) -> tuple[str, list[bytes], str | None]:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if "ce-id" in request.headers or "ce-specversion" in request.headers:
        return "cloudevents", [_binary_cloudevent(request, body)], None
    if ctype == CE_STRUCTURED:
        _parse(body)
        return "cloudevents", [body], None
    if ctype == CE_BATCH:
        doc = _parse(body)
        if not isinstance(doc, list):
            raise InputError("body: a CloudEvents batch is a JSON array")
        return "cloudevents", _dump_all(doc), None
    payloads, batch_id = _native(body)
    return "modelwatch", payloads, batch_id


def _result(r: IntakeResult) -> IngestResult:
    return IngestResult.model_validate(asdict(r))


@router.post(
    "/events",
    dependencies=[Depends(requires("ingest"))],
    response_model=IngestResult,
    responses=errors(409, 413, 422),
    openapi_extra={"requestBody": _events_body_doc()},
)
async def post_events(request: Request, idempotency_key: IdempotencyKey = None) -> IngestResult:
    """Ingest a batch of events; malformed events become dead letters, the rest count."""
    body = await request.body()
    adapter, payloads, batch_id = _payloads(request, body)
    key = check_idempotency_key(idempotency_key or batch_id)
    result = await run_in_threadpool(_intake(request).submit, adapter, payloads, key)
    return _result(result)


@router.post(
    "/labels",
    dependencies=[Depends(requires("ingest"))],
    response_model=IngestResult,
    responses=errors(409, 413, 422),
)
def post_labels(
    body: list[LabelIn] | LabelBatch, request: Request, idempotency_key: IdempotencyKey = None
) -> IngestResult:
    """Ingest ground-truth labels; they are joined to predictions with the same request id."""
    labels, batch_id = (body, None) if isinstance(body, list) else (body.labels, body.batch_id)
    key = check_idempotency_key(idempotency_key or batch_id)
    payloads = [orjson.dumps(label.model_dump()) for label in labels]
    return _result(_intake(request).submit("modelwatch", payloads, key, namespace="labels"))
