"""HTTP request bodies: checked and counted when a request arrives, split into events when drained.

A request is checked once, at once (a body that is not JSON, or not an accepted shape, is a 4xx
before anything is stored), and stored as it came with its *kind*, which says how the drain
splits it into one payload per event:

- ``events``: modelwatch events — a JSON array, ``{"events": [...], "batch_id": ...}``, or a
  single event object;
- ``cloudevents``: one structured-mode CloudEvent (a binary-mode one is stored in this form);
- ``cloudevents-batch``: a JSON array of CloudEvents.

Each event is validated by the drain's `Ingestor`, so a malformed event becomes a dead letter and
the others count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from monitor.errors import InputError

CE_STRUCTURED = "application/cloudevents+json"
CE_BATCH = "application/cloudevents-batch+json"
# Body kind -> the adapter that decodes its events.
ADAPTERS = {
    "events": "modelwatch",
    "cloudevents": "cloudevents",
    "cloudevents-batch": "cloudevents",
}
# Adapter -> (source name, source type) of the ingestor that serves it (counters, dead letters).
SOURCES = {"modelwatch": ("http", "http"), "cloudevents": ("http-cloudevents", "http")}


@dataclass(frozen=True)
class RequestBody:
    """A checked request: its kind, the bytes to store, its event count and batch_id."""

    kind: str
    body: bytes
    events: int
    batch_id: str | None = None


def parse_json(body: bytes) -> Any:
    """The body's JSON document; InputError naming the body otherwise."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"body: invalid JSON: {exc}") from None


def check_request(body: bytes, headers: Mapping[str, str]) -> RequestBody:
    """Check a `POST /v1/events` body (headers lower-cased) and say how to store it."""
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if "ce-id" in headers or "ce-specversion" in headers:
        return RequestBody("cloudevents", _binary_cloudevent(headers, body), 1)
    if ctype == CE_STRUCTURED:
        parse_json(body)
        return RequestBody("cloudevents", body, 1)
    doc = parse_json(body)
    if ctype == CE_BATCH:
        if not isinstance(doc, list):
            raise InputError("body: a CloudEvents batch is a JSON array")
        return RequestBody("cloudevents-batch", body, len(doc))
    if isinstance(doc, list):
        return RequestBody("events", body, len(doc))
    if isinstance(doc, dict) and "events" in doc:
        if not isinstance(doc["events"], list):
            raise InputError("body.events: must be a JSON array of events")
        batch_id = doc.get("batch_id")
        if batch_id is not None and not isinstance(batch_id, str):
            raise InputError("body.batch_id: must be a string")
        return RequestBody("events", body, len(doc["events"]), batch_id)
    if isinstance(doc, dict):
        return RequestBody("events", body, 1)
    raise InputError('body: expected a JSON array of events, {"events": [...]} or one event')


def split(kind: str, body: bytes) -> tuple[list[bytes], list[Any]]:
    """One payload and its decoded object per event of a stored body, the body parsed once (an
    unreadable body: itself and None, a dead letter; a CloudEvent: left to its adapter)."""
    if kind == "cloudevents":
        return [body], [None]
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return [body], [None]
    if isinstance(doc, dict) and isinstance(doc.get("events"), list):
        doc = doc["events"]
    items = doc if isinstance(doc, list) else [doc]
    try:
        payloads = list(map(orjson.dumps, items))  # one C-level pass in the common case
    except orjson.JSONEncodeError:
        payloads = list(map(_dump, items))
    return payloads, items


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


def _binary_cloudevent(headers: Mapping[str, str], body: bytes) -> bytes:
    """Binary mode: ce-* headers carry the attributes, the body is the data."""
    event: dict[str, Any] = {
        name[3:]: value for name, value in headers.items() if name.startswith("ce-")
    }
    ctype = headers.get("content-type")
    if ctype:
        event["datacontenttype"] = ctype
    try:
        event["data"] = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        event["data"] = body.decode("utf-8", "replace")
    return _dump(event)
