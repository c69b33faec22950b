"""The one polling helper: wait for a condition until a deadline, then say what never came."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T],
    what: str,
    timeout: float = 60,
    interval: float = 0.1,
    retry_on: tuple[type[Exception], ...] = (),
) -> T:
    """Call `condition` until it returns something truthy, and return that.

    An exception in `retry_on` (a server still starting: `httpx.TransportError`) counts as "not
    yet". After `timeout` seconds: AssertionError naming `what` and the last value or error seen.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = condition()
        except retry_on as exc:
            last = exc
        else:
            if value:
                return value
            last = value
        if time.monotonic() >= deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what}; last: {last!r}")
        time.sleep(interval)
