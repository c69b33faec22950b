"""Signature verification: valid, tampered, replayed, wrong secret or key, malformed."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest

from alerts._signing import sign, verify_signature

BODY = b'{"version":"4","status":"firing"}'
NOW = 1_780_000_000
KEY = "grp-7.0"
GOOD = sign(BODY, "k", NOW, idempotency_key=KEY)


def test_valid_signature_verifies() -> None:
    assert verify_signature(BODY, GOOD, "k", now=NOW + 10, idempotency_key=KEY)


def test_signed_string_is_documented() -> None:
    # A receiver without modelwatch installed can verify with the documented string.
    message = f"{NOW}\n{KEY}\n".encode() + BODY
    digest = hmac.new(b"k", message, hashlib.sha256).hexdigest()
    assert GOOD == f"t={NOW},v2={digest}"


@pytest.mark.parametrize(
    ("body", "header", "secret", "now", "key"),
    [
        (BODY + b" ", GOOD, "k", NOW, KEY),  # tampered body
        (BODY, GOOD, "other", NOW, KEY),  # wrong secret
        (BODY, GOOD, "k", NOW, "grp-8.0"),  # replayed under a fresh idempotency key
        (b"0\n" + BODY, GOOD, "k", NOW, "grp-7"),  # bytes shifted from the key to the body
        (BODY, GOOD, "k", NOW + 301, KEY),  # replayed after the window
        (BODY, GOOD, "k", NOW - 301, KEY),  # from the future
        (BODY, GOOD.replace(f"t={NOW}", f"t={NOW + 5}"), "k", NOW, KEY),  # new stamp
        (BODY, GOOD.replace("v2=", "v1="), "k", NOW, KEY),  # the old scheme's label
        (BODY, "", "k", NOW, KEY),
        (BODY, "v2=abc", "k", NOW, KEY),
        (BODY, f"t={NOW}", "k", NOW, KEY),
        (BODY, "t=x,v2=00", "k", NOW, KEY),
    ],
)
def test_bad_requests_fail(body: bytes, header: str, secret: str, now: int, key: str) -> None:
    assert not verify_signature(body, header, secret, now=now, idempotency_key=key)


@pytest.mark.parametrize(
    ("body", "header", "secret", "now", "key"),
    [
        (BODY, GOOD.replace(f"t={NOW}", "t=²"), "k", NOW, KEY),  # a digit str.isdigit accepts
        (BODY, GOOD.replace(f"t={NOW}", "t=" + "9" * 5000), "k", NOW, KEY),  # past int limits
        (BODY, f"t={NOW},v2=é" + "0" * 63, "k", NOW, KEY),  # non-ASCII signature
        (BODY, "t=1,v2=" + "é" * 64, "k", NOW, KEY),
        (BODY, None, "k", NOW, KEY),  # header missing
        (BODY, GOOD.encode(), "k", NOW, KEY),  # bytes instead of str
        (BODY.decode(), GOOD, "k", NOW, KEY),  # body as str
        (BODY, GOOD, None, NOW, KEY),  # secret unset
        (BODY, GOOD, "k", NOW, None),  # idempotency key header missing
        (BODY, GOOD, "k", float("nan"), KEY),
        (BODY, "=,=,,t,v2", "k", NOW, KEY),
    ],
)
def test_malformed_input_is_false_never_an_exception(
    body: Any, header: Any, secret: Any, now: Any, key: Any
) -> None:
    assert verify_signature(body, header, secret, now=now, idempotency_key=key) is False


def test_tolerance_is_configurable() -> None:
    assert verify_signature(BODY, GOOD, "k", tolerance_s=3600, now=NOW + 1000, idempotency_key=KEY)
    assert not verify_signature(BODY, GOOD, "k", tolerance_s=60, now=NOW + 61, idempotency_key=KEY)
