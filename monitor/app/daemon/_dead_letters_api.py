"""What the drain made of an HTTP ingest request: `GET /v1/dead-letters` and `?wait=`.

`POST /v1/events` answers 202 before its events are validated; each rejected event becomes a
dead letter tagged with its request. A client reads them by Idempotency-Key
(`dead_letters_url` in the 202), or posts with `?wait=SECONDS` to have the answer wait for the
drain (bounded: a request past the wait is answered the usual 202, nothing is lost).
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool

from collectors import (
    Accepted,
    RequestDeadLetter,
    check_idempotency_key,
    count_dead_letters,
    keyed_request_state,
    request_dead_letters,
    request_state,
    stored_key,
)
from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import daemon, errors
from monitor.app.daemon._paging import Cursor, Limit, decode_cursor, page_of
from monitor.errors import NotFoundError

router = APIRouter(tags=["ingest"])

MAX_WAIT_S = 10.0
# Dead letters answered inline with `?wait=` (the rest: `dead_letters_url`).
FIRST_DEAD_LETTERS = 10
# Polling the intake log for the drain (it may run in another process): doubling, capped.
_POLL_FIRST_S = 0.02
_POLL_MAX_S = 0.2
_NAMESPACES = {"events": "idem", "labels": "labels"}

Wait = Annotated[
    float | None,
    Query(
        ge=0,
        le=MAX_WAIT_S,
        description="Wait up to this many seconds (at most 10) for the drain to consume the "
        "request; then answer 200 with `result`, else the usual 202.",
    ),
]


class DeadLetterOut(BaseModel):
    """One rejected event: its index in the request (0-based), reason code, field and detail."""

    index: int | None
    reason: str = Field(examples=["invalid_timestamp"])
    field: str | None = Field(description="The field the detail names", examples=["timestamp"])
    detail: str


class IngestResult(BaseModel):
    """What the drain made of one request: `valid` events counted, `dead_letters` rejected
    (the first few listed; all of them at `dead_letters_url`)."""

    events: int
    valid: int
    dead_letters: int
    first_dead_letters: list[DeadLetterOut]


class RequestDeadLetterOut(DeadLetterOut):
    source: str
    created_at: datetime


class DeadLetterList(BaseModel):
    """A request's dead letters by event index. `state`: `pending` until the drain consumed
    the request (none are known yet), then `consumed`; `events` is null once the request's
    intake row is purged (after `collect.http_dedup_window`)."""

    idempotency_key: str
    state: Literal["pending", "consumed"]
    events: int | None
    dead_letters: list[RequestDeadLetterOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null: last.")


def dead_letters_url(key: str | None, namespace: str) -> str | None:
    """Where a keyed request's dead letters are listed (None without a key)."""
    if key is None:
        return None
    query = {"idempotency_key": key}
    if namespace == "labels":
        query["endpoint"] = "labels"
    return "/v1/dead-letters?" + urllib.parse.urlencode(query)


def _out(dead: RequestDeadLetter) -> DeadLetterOut:
    return DeadLetterOut(index=dead.index, reason=dead.reason, field=dead.field, detail=dead.detail)


async def drained_result(engine: Engine, accepted: Accepted, wait: float) -> IngestResult | None:
    """Wait up to `wait` seconds for the drain to consume the request; its result, or None."""
    deadline = time.monotonic() + min(wait, MAX_WAIT_S)
    delay = _POLL_FIRST_S
    while not (await run_in_threadpool(request_state, engine, accepted.intake_id)).consumed:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        await asyncio.sleep(min(delay, left))
        delay = min(delay * 2, _POLL_MAX_S)
    return await run_in_threadpool(_result, engine, accepted)


def _result(engine: Engine, accepted: Accepted) -> IngestResult:
    events = accepted.queued or accepted.duplicates
    dead = count_dead_letters(engine, accepted.intake_id)
    first = request_dead_letters(engine, intake_id=accepted.intake_id, limit=FIRST_DEAD_LETTERS)
    return IngestResult(
        events=events,
        valid=max(0, events - dead),
        dead_letters=dead,
        first_dead_letters=[_out(d) for d in first],
    )


@router.get(
    "/dead-letters", dependencies=[Depends(requires("read"))], response_model=DeadLetterList,
    responses=errors(404, 422),
)  # fmt: skip
def list_request_dead_letters(
    request: Request,
    idempotency_key: Annotated[
        str, Query(min_length=1, max_length=200, description="The key the request was posted with.")
    ],
    endpoint: Annotated[
        Literal["events", "labels"], Query(description="Which endpoint the request was posted to.")
    ] = "events",
    cursor: Cursor = None,
    limit: Limit = 500,
) -> DeadLetterList:
    """The rejected events of the request posted with this Idempotency-Key, by event index."""
    key = check_idempotency_key(idempotency_key)
    unique = stored_key(_NAMESPACES[endpoint], key)
    assert unique is not None
    after = decode_cursor("dead-letters", cursor, (int, int))
    engine = daemon(request).engine
    state = keyed_request_state(engine, unique)
    rows = request_dead_letters(
        engine, key=unique, after=None if after is None else (after[0], after[1]), limit=limit + 1
    )
    if state is None and not rows and after is None:
        raise NotFoundError(
            f"no {endpoint} request with Idempotency-Key {idempotency_key!r} "
            "(never posted, or older than collect.http_dedup_window)"
        )
    page = page_of("dead-letters", rows, limit, lambda d: (d.index or 0, d.id))
    return DeadLetterList(
        idempotency_key=idempotency_key,
        state="pending" if state is not None and not state.consumed else "consumed",
        events=None if state is None else state.events,
        dead_letters=[
            RequestDeadLetterOut(**_out(d).model_dump(), source=d.source, created_at=d.created_at)
            for d in page.items
        ],
        next_cursor=page.next_cursor,
    )
