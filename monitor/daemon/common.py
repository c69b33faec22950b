"""What every router shares: the injected state, the error body and documented error answers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import Request
from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from monitor.daemon.app import DaemonState


class FieldError(BaseModel):
    """One invalid field of a request."""

    field: str
    message: str


class ErrorBody(BaseModel):
    """Every error answer: a snake_case name and a one-line detail (never a stack trace).

    Validation errors (422) also list each invalid field in `errors`.
    """

    error: str
    detail: str
    errors: list[FieldError] | None = None


class ApiModel(BaseModel):
    """Request bodies reject unknown keys, like the config does."""

    model_config = ConfigDict(extra="forbid")


def daemon(request: Request) -> DaemonState:
    """The `DaemonState` the app was built around."""
    state: DaemonState = request.app.state.daemon
    return state


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for auth failures, validation and the given error codes."""
    text = {
        401: "missing or invalid bearer token",
        403: "the token lacks the scope",
        404: "not found",
        409: "conflicts with the current state",
        413: "request body too large",
        422: "invalid request; `detail` names the field",
    }
    return {code: {"model": ErrorBody, "description": text[code]} for code in (401, 403, *codes)}
