"""Alert states (`GET /v1/alerts`) and silences (`/v1/silences`: create, list, expire)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, Field, ValidationError, field_validator
from sqlalchemy import select

from alerts.silences import Silence, add_silence, expire_silence, list_silences
from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import ApiModel, daemon, errors
from monitor.app.daemon._paging import Cursor, Limit, decode_cursor, page_of
from monitor.config import parse_duration
from monitor.config.alerts import Matcher
from monitor.errors import NotFoundError
from monitor.storage import AlertState, transaction, utcnow

router = APIRouter(tags=["alerts"])

MAX_SILENCE = timedelta(days=366)


class Alert(BaseModel):
    """One alert (a rule applied to one label set) and its state."""

    fingerprint: str
    rule: str
    state: Literal["pending", "firing", "resolved"]
    labels: dict[str, str]
    annotations: dict[str, str]
    value: float | None
    active_since: datetime
    fired_at: datetime | None
    resolved_at: datetime | None
    muted_by: str | None


class AlertList(BaseModel):
    alerts: list[Alert]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null: last.")


class SilenceRequest(ApiModel):
    """Mute alerts whose labels match every matcher, from now for `duration`."""

    matchers: list[str] = Field(min_length=1, max_length=50, examples=[["model=fraud"]])
    author: str = Field(min_length=1, max_length=200)
    comment: str = Field(min_length=1, max_length=2000)
    duration: str = Field(default="2h", description="e.g. 30m, 2h, 1d", examples=["2h"])

    @field_validator("matchers")
    @classmethod
    def _matchers(cls, value: list[str]) -> list[str]:
        for i, text in enumerate(value):
            try:
                Matcher.parse(text)
            except ValidationError as exc:
                msg = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
                raise ValueError(f"matchers[{i}] {text!r}: {msg}") from None
        return value

    @field_validator("duration")
    @classmethod
    def _duration(cls, value: str) -> str:
        length = parse_duration(value)
        if not timedelta(0) < length <= MAX_SILENCE:
            raise ValueError(f"duration must be positive and at most {MAX_SILENCE.days} days")
        return value


class SilenceOut(BaseModel):
    """A stored silence; it mutes alerts in [starts_at, ends_at)."""

    id: int
    matchers: list[str]
    author: str
    comment: str
    starts_at: datetime
    ends_at: datetime


class SilenceList(BaseModel):
    silences: list[SilenceOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null: last.")


def _out(silence: object) -> SilenceOut:
    assert isinstance(silence, Silence)
    return SilenceOut(
        id=silence.id,
        matchers=[str(m) for m in silence.matchers],
        author=silence.author,
        comment=silence.comment,
        starts_at=silence.starts_at,
        ends_at=silence.ends_at,
    )


AlertStateName = Literal["pending", "firing", "resolved"]


@router.get(
    "/alerts", dependencies=[Depends(requires("read"))], response_model=AlertList,
    responses=errors(422),
)  # fmt: skip
def list_alerts(
    request: Request,
    state: Annotated[AlertStateName | None, Query(description="Only alerts in this state.")] = None,
    rule: Annotated[
        str | None, Query(max_length=200, description="Only this rule's alerts.")
    ] = None,
    cursor: Cursor = None,
    limit: Limit = 500,
) -> AlertList:
    """Current alert states, newest change first; filter by `state` and `rule`."""
    query = select(AlertState).order_by(AlertState.updated_at.desc(), AlertState.fingerprint)
    if state is not None:
        query = query.where(AlertState.state == state)
    if rule is not None:
        query = query.where(AlertState.rule == rule)
    after = decode_cursor("alerts", cursor, (datetime, str))
    if after is not None:
        at, fingerprint = after
        later = (AlertState.updated_at == at) & (AlertState.fingerprint > fingerprint)
        query = query.where((AlertState.updated_at < at) | later)
    with transaction(daemon(request).engine) as session:
        rows = session.scalars(query.limit(limit + 1)).all()
        page = page_of("alerts", rows, limit, lambda r: (r.updated_at, r.fingerprint))
        alerts = [Alert.model_validate(r, from_attributes=True) for r in page.items]
    return AlertList(alerts=alerts, next_cursor=page.next_cursor)


@router.get(
    "/alerts/{fingerprint}", dependencies=[Depends(requires("read"))], response_model=Alert,
    responses=errors(404, 422),
)  # fmt: skip
def get_alert(
    request: Request, fingerprint: Annotated[str, Path(min_length=1, max_length=32)]
) -> Alert:
    """One alert by fingerprint: where an alert's `generatorURL` points."""
    with transaction(daemon(request).engine) as session:
        row = session.get(AlertState, fingerprint)
        if row is None:
            raise NotFoundError(f"no alert with fingerprint {fingerprint!r}")
        return Alert.model_validate(row, from_attributes=True)


@router.post(
    "/silences", status_code=201, dependencies=[Depends(requires("admin"))],
    response_model=SilenceOut, responses=errors(422),
)  # fmt: skip
def create_silence(body: SilenceRequest, request: Request) -> SilenceOut:
    """Silence alerts matching every matcher (name=value, name!=value, name=~re, name!~re)."""
    with transaction(daemon(request).engine) as session:
        silence = add_silence(
            session,
            body.matchers,
            author=body.author,
            comment=body.comment,
            duration=parse_duration(body.duration),
            now=utcnow(),
        )
    return _out(silence)


@router.get(
    "/silences", dependencies=[Depends(requires("read"))], response_model=SilenceList,
    responses=errors(422),
)  # fmt: skip
def get_silences(
    request: Request,
    include_expired: bool = Query(False, alias="all", description="Also expired silences."),
    cursor: Cursor = None,
    limit: Limit = 500,
) -> SilenceList:
    """Silences not yet expired (all with `?all=true`), by id."""
    after = decode_cursor("silences", cursor, (int,))
    with transaction(daemon(request).engine) as session:
        found = list_silences(session, utcnow(), include_expired=include_expired)
    rest = [s for s in found if after is None or s.id > after[0]]
    page = page_of("silences", rest[: limit + 1], limit, lambda s: (s.id,))
    return SilenceList(silences=[_out(s) for s in page.items], next_cursor=page.next_cursor)


# Silence ids are a 32-bit INTEGER column on PostgreSQL: a larger id is refused (422) before it
# reaches the database, which would fail on it (found by fuzzing on PostgreSQL).
MAX_SILENCE_ID = 2**31 - 1


@router.delete(
    "/silences/{silence_id}", dependencies=[Depends(requires("admin"))],
    response_model=SilenceOut, responses=errors(404, 409, 422),
)  # fmt: skip
def delete_silence(request: Request, silence_id: int = Path(ge=1, le=MAX_SILENCE_ID)) -> SilenceOut:
    """Expire a silence now (409 if it already expired)."""
    with transaction(daemon(request).engine) as session:
        silence = expire_silence(session, silence_id, utcnow())
    return _out(silence)
