"""The one parser of durations written in config, the CLI and the HTTP API.

`30s`, `5m`, `4h`, `1d`, `250ms`, or a bare number of seconds. Durations are bounded: an
unbounded one (400 digits, `.inf`) would overflow `timedelta` or a date it is added to, so it
is a ValueError naming the value, never an OverflowError.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Annotated

from pydantic import BeforeValidator

MAX_DURATION = timedelta(days=36_500)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_HINT = "e.g. 30s, 10m, 1h or 1d"


def parse_duration(value: object) -> timedelta:
    """`90`, `"90s"`, `"10m"`, `"1h"`, `"1d"` (bare numbers are seconds) as a timedelta.

    ValueError for anything else, for negative or non-finite values and for durations longer
    than MAX_DURATION (100 years)."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected a duration ({_HINT})")
    elif isinstance(value, str):
        match = _DURATION.match(value)
        if match is None:
            raise ValueError(f"cannot parse duration {_shown(value)} ({_HINT})")
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2) or "s"]
    else:
        seconds = _to_float(value)
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"duration {_shown(value)} must not be negative")
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(f"duration {_shown(value)} is too long (at most {MAX_DURATION.days}d)")
    return timedelta(seconds=seconds)


def _to_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an int past float's range
        return math.inf


def _shown(value: object) -> str:
    """The value as quoted in an error, shortened: a 400-digit number is not worth echoing."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
