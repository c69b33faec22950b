"""Signature verification: valid, tampered, replayed, wrong secret, malformed."""

from __future__ import annotations

import pytest

from alerts.signing import sign, verify_signature

BODY = b'{"version":"4","status":"firing"}'
NOW = 1_780_000_000


def test_valid_signature_verifies() -> None:
    assert verify_signature(BODY, sign(BODY, "k", NOW), "k", now=NOW + 10)


@pytest.mark.parametrize(
    ("body", "header", "secret", "now"),
    [
        (BODY + b" ", sign(BODY, "k", NOW), "k", NOW),  # tampered body
        (BODY, sign(BODY, "k", NOW), "other", NOW),  # wrong secret
        (BODY, sign(BODY, "k", NOW), "k", NOW + 301),  # replayed after the window
        (BODY, sign(BODY, "k", NOW), "k", NOW - 301),  # from the future
        (BODY, sign(BODY, "k", NOW).replace(f"t={NOW}", f"t={NOW + 5}"), "k", NOW),  # new stamp
        (BODY, "", "k", NOW),
        (BODY, "v1=abc", "k", NOW),
        (BODY, f"t={NOW}", "k", NOW),
        (BODY, "t=x,v1=00", "k", NOW),
    ],
)
def test_bad_requests_fail(body: bytes, header: str, secret: str, now: int) -> None:
    assert not verify_signature(body, header, secret, now=now)


def test_tolerance_is_configurable() -> None:
    header = sign(BODY, "k", NOW)
    assert verify_signature(BODY, header, "k", tolerance_s=3600, now=NOW + 1000)
    assert not verify_signature(BODY, header, "k", tolerance_s=60, now=NOW + 61)
