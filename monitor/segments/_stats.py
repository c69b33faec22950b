"""Each evaluated slice against its complement, and the false-discovery rate over all of them.

Rates (0/1 losses: error rate, accuracy) use the one-sided exact test on the 2×2 table (slice or
not × error or not): conditional on the total number of errors, the slice's errors are
hypergeometric under the null (Fisher's exact test). Means (absolute error, log loss) use the
one-sided Welch t-test from each side's sum and sum of squares. Both are vectorised over every
slice at once.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Arr = NDArray[np.float64]
Z95 = 1.959963984540054


def rate_tests(count: Arr, errors: Arr, n: int, total_errors: float) -> tuple[Arr, Arr, Arr]:
    """p-value (error rate above the complement's), effect (rate difference), 95% half-width."""
    rest = n - count
    rest_errors = total_errors - errors
    with np.errstate(divide="ignore", invalid="ignore"):
        p1 = errors / count
        p2 = np.where(rest > 0, rest_errors / rest, np.nan)
        half = Z95 * np.sqrt(p1 * (1 - p1) / count + p2 * (1 - p2) / rest)
    # A slice no worse than its complement has at most the expected number of errors, so its
    # one-sided p-value is at least one half (the hypergeometric median is the floor or ceiling
    # of its mean): it is taken as 1 without the (slow) exact tail, which can only make the BH
    # correction more conservative and changes no decision at alpha < 0.5.
    worse = (rest > 0) & (p1 > p2)
    p = np.ones(count.shape)
    if worse.any():
        from scipy.stats import hypergeom  # heavy (~0.8 s): only where a slice is worse

        p[worse] = hypergeom.sf(errors[worse] - 1, n, total_errors, count[worse])
    return np.clip(np.nan_to_num(p, nan=1.0), 0.0, 1.0), p1 - p2, half


def mean_tests(
    count: Arr, errsum: Arr, sqsum: Arr, n: int, total: float, total_sq: float
) -> tuple[Arr, Arr, Arr]:
    """p-value (slice's mean loss > complement's), effect (mean difference), 95% half-width."""
    from scipy.special import stdtr, stdtrit  # heavy: `serve` loads it when it looks for segments

    n2 = n - count
    with np.errstate(divide="ignore", invalid="ignore"):
        m1 = errsum / count
        m2 = (total - errsum) / n2
        v1 = np.maximum(sqsum - count * m1 * m1, 0.0) / (count - 1)
        v2 = np.maximum((total_sq - sqsum) - n2 * m2 * m2, 0.0) / (n2 - 1)
        a, b = v1 / count, v2 / n2
        se = np.sqrt(a + b)
        t = (m1 - m2) / se
        df = (a + b) ** 2 / (a * a / (count - 1) + b * b / (n2 - 1))
        dof = np.where(np.isfinite(df) & (df > 0), df, 1.0)
        p = stdtr(dof, -t)  # Student's t upper tail
        half = stdtrit(dof, 0.975) * se
    # no spread on either side: the difference is certain (p 0 when worse, 1 otherwise)
    p = np.where(se == 0, np.where(m1 > m2, 0.0, 1.0), p)
    p = np.where((n2 >= 2) & (count >= 2), p, 1.0)
    return np.clip(np.nan_to_num(p, nan=1.0), 0.0, 1.0), m1 - m2, half


def bh_qvalues(p: Arr) -> Arr:
    """Benjamini–Hochberg adjusted p-values (q-values) of a family of p-values."""
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return out
