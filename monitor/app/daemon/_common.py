"""What every router shares: the injected state, the error body and documented error answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import Request
from prometheus_client import CollectorRegistry
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.engine import Engine

from collectors import HttpIntake
from monitor.config import Config

if TYPE_CHECKING:
    from guards.events import RollbackListener


@dataclass
class DaemonState:
    """What the API needs from the running service."""

    engine: Engine
    config: Config
    registry: CollectorRegistry
    # name -> callable saying what is wrong with that component (None: healthy)
    components: dict[str, Callable[[], str | None]] = field(default_factory=dict)
    # Told about rollbacks made through the API (gate runs, POST .../rollback), e.g. to notify.
    rollback_listener: RollbackListener | None = None
    # HTTP ingest; None: one on this engine and config (ingestors made on first use).
    intake: HttpIntake | None = None


class FieldError(BaseModel):
    """One invalid field of a request."""

    field: str
    message: str


# The one vocabulary of `error` names, by HTTP status (docs/concepts/http-api.md).
ERROR_NAMES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation",
    500: "internal",
    503: "unavailable",
}


def error_name(status: int) -> str:
    """The vocabulary's name for an HTTP status (`error` in every error body)."""
    return ERROR_NAMES.get(status, "bad_request" if status < 500 else "internal")


class ErrorBody(BaseModel):
    """Every error answer: a name from one vocabulary and a one-line detail (never a stack trace).

    `error` is one of: bad_request, unauthorized, forbidden, not_found, method_not_allowed,
    conflict, payload_too_large, unsupported_media_type, validation, internal, unavailable.
    Validation errors (422) also list each invalid field in `errors`.
    """

    error: str = Field(examples=["not_found"])
    detail: str
    errors: list[FieldError] | None = None


class ApiModel(BaseModel):
    """Request bodies reject unknown keys, like the config does."""

    model_config = ConfigDict(extra="forbid")


def daemon(request: Request) -> DaemonState:
    """The `DaemonState` the app was built around."""
    state: DaemonState = request.app.state.daemon
    return state


ERROR_TEXT = {
    401: "missing or invalid bearer token",
    403: "the token lacks the scope",
    404: "not found",
    409: "conflicts with the current state",
    413: "request body too large (api.max_body_bytes)",
    422: "invalid request; `detail` names the field",
    503: "database unreachable or behind; retry after `Retry-After` seconds",
}


def errors(*codes: int, auth: bool = True) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for the given codes plus what every route can answer.

    Every route can answer 413 (the body limit applies to any request) and 503 (the database
    is down); routes behind a token also 401 and 403.
    """
    always = (401, 403, 413, 503) if auth else (413, 503)
    wanted = sorted({*always, *codes})
    return {code: {"model": ErrorBody, "description": ERROR_TEXT[code]} for code in wanted}
