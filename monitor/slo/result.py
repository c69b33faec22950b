"""The typed result of one serving objective, below both the SLO job and the result store.

`monitor.slo.evaluate` computes these and `monitor.results.store` stores them; neither imports the
other back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

SloStatus = Literal["ok", "breach", "insufficient_data"]


@dataclass(frozen=True)
class SloResult:
    """One objective of one (model, version, window, slice)."""

    model: str
    version: str
    window_start: datetime
    slice_key: str
    objective: str
    value: float | None
    threshold: float | None
    n: int
    status: SloStatus
    # For people (not stored): why a measure objective lacks evidence.
    detail: str | None = None
