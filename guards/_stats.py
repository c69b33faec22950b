"""Small-sample statistics for slice criteria."""

from __future__ import annotations

from statistics import NormalDist

from monitor.outcomes import wilson


def z_for(confidence: float) -> float:
    """Two-sided normal quantile for a confidence level (0.95 -> 1.96)."""
    if not 0.5 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0.5, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion; (0, 1) when n is 0; exact for 0/n and n/n."""
    if n > 0 and not 0 <= successes <= n:
        raise ValueError(f"successes must be in 0..{n}, got {successes}")
    return wilson(successes, n, z_for(confidence))
