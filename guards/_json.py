"""Numbers in the verdict document: strict JSON has no NaN or infinity."""

from __future__ import annotations

import math


def finite_or_none(value: float) -> float | None:
    """A float for JSON: non-finite values become None (null)."""
    return float(value) if math.isfinite(value) else None
