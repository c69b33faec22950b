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


def exact_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson interval of a proportion; (0, 1) when n is 0; exact for 0/n and n/n.

    The small-slice breach rules use it, not Wilson's: at a few events Wilson's lower end is
    too high (1 flip in 30 rows: 0.0059 against an exact 0.0008), so a candidate whose true
    flip rate is the limit failed up to 15% of 30-row slices instead of at most 2.5%
    (bench/calibration_decisions.py, docs/concepts/calibration.md). The exact bounds keep each
    end's miss rate at most (1 - confidence) / 2 at every n.
    """
    from scipy.special import betaincinv  # the beta quantile, without scipy.stats' import

    if n > 0 and not 0 <= successes <= n:
        raise ValueError(f"successes must be in 0..{n}, got {successes}")
    if n <= 0:
        return 0.0, 1.0
    z_for(confidence)  # checks the level
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if successes == 0 else float(betaincinv(successes, n - successes + 1, tail))
    high = 1.0 if successes == n else float(betaincinv(successes + 1, n - successes, 1 - tail))
    return low, high
