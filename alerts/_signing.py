"""HMAC-SHA256 request signing, and the verification function receivers use.

The header is ``X-Modelwatch-Signature: t=<unix seconds>,v2=<hex>`` where ``<hex>`` is
HMAC-SHA256, with the receiver's secret, over the signed string::

    <t> "\\n" <Idempotency-Key header value> "\\n" <raw body>

(UTF-8; header values cannot contain a newline, so the parts cannot be shifted into each
other). Covering the key means a captured request cannot be replayed under a fresh key to get
past a receiver's duplicate check. Receivers verify with::

    from alerts import verify_signature

    if not verify_signature(request_body_bytes, request.headers["X-Modelwatch-Signature"],
                            secret=os.environ["MODELWATCH_WEBHOOK_SECRET"],
                            idempotency_key=request.headers["Idempotency-Key"]):
        return 401

A request older (or newer) than ``tolerance_s`` fails, which bounds replays to that window;
within it, drop duplicates by the ``Idempotency-Key`` header. ``verify_signature`` never
raises: a malformed or missing header, body or key is simply not a valid signature.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from datetime import datetime

SIGNATURE_HEADER = "X-Modelwatch-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"
SCHEME = "v2"  # v1 signed "<t>.<body>" without the key; its signatures no longer verify

_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_HEX = re.compile(r"[0-9a-f]{64}")


def _digest(secret: str, timestamp: int, idempotency_key: str, body: bytes) -> str:
    message = f"{timestamp}\n{idempotency_key}\n".encode() + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def sign(body: bytes, secret: str, timestamp: int, *, idempotency_key: str) -> str:
    """The signature header value for `body` sent at `timestamp` (unix seconds) under
    `idempotency_key`."""
    return f"t={timestamp},{SCHEME}={_digest(secret, timestamp, idempotency_key, body)}"


def _parse(header: str) -> tuple[int, list[str]] | None:
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and _TIMESTAMP.fullmatch(value):
            timestamp = int(value)
        elif key == SCHEME and _HEX.fullmatch(value):
            signatures.append(value)
    if timestamp is None or not signatures:
        return None
    return timestamp, signatures


def verify_signature(
    body: bytes,
    header: str | None,
    secret: str,
    tolerance_s: float = 300,
    now: datetime | float | None = None,
    *,
    idempotency_key: str | None,
) -> bool:
    """True when `header` signs `body` and `idempotency_key` with `secret` and its timestamp
    is within `tolerance_s` of `now` (a datetime, unix seconds, or the current time).

    False, never an exception, for anything malformed: header, body, key or secret."""
    try:
        return _verify(body, header, secret, tolerance_s, now, idempotency_key)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return False


def _verify(
    body: bytes,
    header: str | None,
    secret: str,
    tolerance_s: float,
    now: datetime | float | None,
    idempotency_key: str | None,
) -> bool:
    if not isinstance(header, str) or not isinstance(idempotency_key, str):
        return False
    if not isinstance(body, bytes | bytearray) or not isinstance(secret, str) or not secret:
        return False
    parsed = _parse(header)
    if parsed is None:
        return False
    timestamp, signatures = parsed
    current = time.time() if now is None else now.timestamp() if isinstance(now, datetime) else now
    if not abs(current - timestamp) <= tolerance_s:  # NaN fails too
        return False
    expected = _digest(secret, timestamp, idempotency_key, bytes(body)).encode()
    return any(hmac.compare_digest(expected, sig.encode()) for sig in signatures)
