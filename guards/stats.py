"""Small-sample statistics for slice criteria."""

from __future__ import annotations

import math
from statistics import NormalDist


def z_for(confidence: float) -> float:
    """Two-sided normal quantile for a confidence level (0.95 -> 1.96)."""
    if not 0.5 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0.5, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion; (0, 1) when n is 0.

    The ends are exact for 0/n (lower bound 0) and n/n (upper bound 1): the closed form gives
    rounding residue there (3.5e-18 for 0/90), which a zero limit would read as a breach.
    """
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in 0..{n}, got {successes}")
    z = z_for(confidence)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high
