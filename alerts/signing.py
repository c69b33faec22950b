"""HMAC-SHA256 request signing, and the verification function receivers use.

The header is ``X-Modelwatch-Signature: t=<unix seconds>,v1=<hex>`` where ``<hex>`` is
HMAC-SHA256 over ``"<t>.<raw body>"`` with the receiver's secret. Receivers verify with::

    from alerts.signing import verify_signature

    if not verify_signature(request_body_bytes, request.headers["X-Modelwatch-Signature"],
                            secret=os.environ["MODELWATCH_WEBHOOK_SECRET"]):
        return 401

A request older (or newer) than ``tolerance_s`` fails, which bounds replays to that window;
within it, drop duplicates by the ``Idempotency-Key`` header.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from datetime import datetime

SIGNATURE_HEADER = "X-Modelwatch-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"


def _digest(secret: str, timestamp: int, body: bytes) -> str:
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def sign(body: bytes, secret: str, timestamp: int) -> str:
    """The signature header value for `body` sent at `timestamp` (unix seconds)."""
    return f"t={timestamp},v1={_digest(secret, timestamp, body)}"


def _parse(header: str) -> tuple[int, list[str]] | None:
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isdigit():
            timestamp = int(value)
        elif key == "v1" and value:
            signatures.append(value)
    if timestamp is None or not signatures:
        return None
    return timestamp, signatures


def verify_signature(
    body: bytes,
    header: str,
    secret: str,
    tolerance_s: float = 300,
    now: datetime | float | None = None,
) -> bool:
    """True when `header` signs `body` with `secret` and its timestamp is within
    `tolerance_s` of `now` (a datetime, unix seconds, or the current time)."""
    parsed = _parse(header or "")
    if parsed is None:
        return False
    timestamp, signatures = parsed
    current = time.time() if now is None else now.timestamp() if isinstance(now, datetime) else now
    if abs(current - timestamp) > tolerance_s:
        return False
    expected = _digest(secret, timestamp, body)
    return any(hmac.compare_digest(expected, sig) for sig in signatures)
