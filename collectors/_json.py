"""JSON payload parsing shared by every input format (so the formats need not import the
adapter registry that registers them)."""

from __future__ import annotations

from typing import Any

import orjson

from collectors._base import DecodeError


def loads(payload: bytes) -> Any:
    """Parse JSON with orjson; DecodeError says whether the bytes or the JSON are broken."""
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        try:
            payload.decode("utf-8")
        except UnicodeDecodeError as uerr:
            raise DecodeError(
                "invalid_utf8", f"payload: {uerr.reason} at byte {uerr.start}"
            ) from None
        if "depth limit" in str(exc):
            raise DecodeError("too_deep", f"payload: {exc}") from None
        raise DecodeError("invalid_json", f"payload: {exc}") from None
