"""Cursor pagination shared by every list endpoint.

A list answers at most `limit` items in a stable order and `next_cursor`: pass it back as
`?cursor=` for the next page; `null` means this page is the last. A cursor is opaque (URL-safe
base64 of the last item's sort key, tagged with the endpoint) and valid only with the same
filters; a cursor from another endpoint or a mangled one is a 422 naming `cursor`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

import orjson
from fastapi import Query

from monitor.errors import InputError

T = TypeVar("T")

MAX_LIMIT = 5000
DEFAULT_LIMIT = 500

Cursor = Annotated[
    str | None,
    Query(max_length=2000, description="`next_cursor` of the previous page; omit for the first."),
]
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Items per page (at most 5000).")]


def encode_cursor(kind: str, key: Sequence[Any]) -> str:
    """An opaque cursor after the item whose sort key is `key`."""
    values = [v.isoformat() if isinstance(v, datetime) else v for v in key]
    raw = orjson.dumps([kind, *values])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(kind: str, text: str | None, types: Sequence[type]) -> list[Any] | None:
    """The sort key a cursor points after (None for no cursor); 422 when it is not ours."""
    if text is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        tag, *values = orjson.loads(raw)
        if tag != kind or len(values) != len(types):
            raise ValueError(tag)
        return [_typed(v, t) for v, t in zip(values, types, strict=True)]
    except (ValueError, TypeError, binascii.Error, orjson.JSONDecodeError):
        raise InputError(
            "cursor: not a cursor of this list; pass `next_cursor` from the previous page"
        ) from None


def _typed(value: Any, kind: type) -> Any:
    if kind is datetime:
        return datetime.fromisoformat(str(value))
    if value is None or isinstance(value, kind):
        return value
    raise TypeError(kind)


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of items and the cursor of the next (None at the end)."""

    items: list[T]
    next_cursor: str | None


def page_of(kind: str, rows: Sequence[T], limit: int, key: Any) -> Page[T]:
    """Cut `rows` (fetched with `limit + 1`) to a page; `key(row)` is a row's sort key."""
    if len(rows) <= limit:
        return Page(list(rows), None)
    kept = list(rows[:limit])
    return Page(kept, encode_cursor(kind, key(kept[-1])))
