"""Silences: matchers, author, comment and a time range, stored in `alert_silences`."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.config.alerts import Matcher, matches_all
from monitor.errors import ConflictError, InputError, NotFoundError
from monitor.storage import AlertSilence

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Silence:
    """A silence as read from the table."""

    id: int
    matchers: tuple[Matcher, ...]
    author: str
    comment: str
    starts_at: datetime
    ends_at: datetime

    def active(self, now: datetime) -> bool:
        """Whether it mutes alerts at `now` (its range is [starts_at, ends_at))."""
        return self.starts_at <= now < self.ends_at

    def matches(self, labels: dict[str, str]) -> bool:
        return matches_all(list(self.matchers), labels)


def parse_matchers(texts: list[str]) -> tuple[Matcher, ...]:
    """Parse matcher strings; InputError naming the bad one."""
    if not texts:
        raise InputError("a silence needs at least one matcher, e.g. model=fraud")
    out = []
    for text in texts:
        try:
            out.append(Matcher.parse(text))
        except ValidationError as exc:
            raise InputError(f"matcher {text!r}: {_first_error(exc)}") from None
    return tuple(out)


def _first_error(exc: ValidationError) -> str:
    return str(exc.errors()[0]["msg"]).removeprefix("Value error, ")


def _to_silence(row: AlertSilence) -> Silence:
    return Silence(
        id=row.id,
        matchers=tuple(Matcher.parse(m) for m in row.matchers),
        author=row.author,
        comment=row.comment,
        starts_at=row.starts_at,
        ends_at=row.ends_at,
    )


def add_silence(
    session: Session,
    matchers: list[str],
    *,
    author: str,
    comment: str,
    duration: timedelta,
    now: datetime,
) -> Silence:
    """Store a silence starting at `now`."""
    parsed = parse_matchers(matchers)
    if not author.strip() or not comment.strip():
        raise InputError("a silence needs an author and a comment")
    if duration <= timedelta(0):
        raise InputError(f"silence duration must be positive, got {duration}")
    row = AlertSilence(
        matchers=[str(m) for m in parsed],
        author=author.strip(),
        comment=comment.strip(),
        starts_at=now,
        ends_at=now + duration,
        created_at=now,
    )
    session.add(row)
    session.flush()
    return _to_silence(row)


def list_silences(session: Session, now: datetime, include_expired: bool = False) -> list[Silence]:
    """Silences by id; by default only those not yet expired.

    A stored silence whose matchers no longer parse (written before regexes were RE2) is
    skipped with a warning: it must not stop alert evaluation, and it mutes nothing."""
    query = select(AlertSilence).order_by(AlertSilence.id)
    if not include_expired:
        query = query.where(AlertSilence.ends_at > now)
    out = []
    for row in session.scalars(query):
        try:
            out.append(_to_silence(row))
        except ValidationError as exc:
            log.warning("silence %s is ignored: %s", row.id, _first_error(exc))
    return out


def expire_silence(session: Session, silence_id: int, now: datetime) -> Silence:
    """End a silence now; NotFoundError for an unknown id, ConflictError if already over."""
    row = session.get(AlertSilence, silence_id)
    if row is None:
        raise NotFoundError(f"no silence with id {silence_id}")
    if row.ends_at <= now:
        raise ConflictError(f"silence {silence_id} already expired at {row.ends_at.isoformat()}")
    row.ends_at = max(now, row.starts_at)
    return _to_silence(row)
