"""Overwhelming evidence on exact-count columns: the chi-square homogeneity test of the buckets.

Why: an effect-size bound (JS 0.1) is the right default for "did the distribution move enough
to matter", but on a column with exact per-value buckets (categorical, boolean, discrete
numeric) a mass shift between two values that a chi-square test on the raw counts finds at
p < 1e-6 is a real change of the data-generating process — at 100k rows a positive rate going
from 0.50 to 0.52 is such a change, with JS 0.014. So on those columns a result is also drift
when the homogeneity test gives p below a documented, configurable evidence alpha
(``DEFAULT_EVIDENCE_ALPHA`` = 1e-6, config ``drift.evidence_alpha``). 1e-6 keeps the rule
silent under no drift: across 10,000 exact-count tests per evaluation the chance of any false
alarm stays below 1%, whatever the window size.

The test: Pearson's chi² over the 2 x k table of (reference, current) bucket counts. Buckets
empty on both sides are dropped; buckets whose expected count is below ``MIN_EXPECTED`` (5,
Cochran's rule) on either side are pooled into one, because the chi² approximation is
anti-conservative for sparse cells (a value seen once in 1,000 current rows and never in
100,000 reference rows would alone give chi² ≈ 100). A pooled bucket still under the rule is
merged into the smallest other bucket. Fewer than two buckets left: no p-value (None).
On numeric columns (ordered buckets: discrete values, or quantile bins) sparse buckets are
instead joined to their neighbours (`ordered`): pooling the rare values at both ends into one
cell would cancel a shift's signal (a mean shift empties one tail as it fills the other; on a
binomial column at 100 rows that cost the test a quarter of its power).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._special import chi2_sf
from monitor.profiles.kinds import Profile

DEFAULT_EVIDENCE_ALPHA = 1e-6
MIN_EXPECTED = 5.0


def exact_counts(profile: Profile) -> bool:
    """True for profiles whose buckets are values, not ranges (categorical or discrete)."""
    return profile.kind == "categorical" or bool(getattr(profile.spec, "discrete", False))


def profile_homogeneity_p(reference: Profile, current: Profile) -> float | None:
    """`homogeneity_p` of two profiles' buckets, ordered on numeric columns."""
    ref, cur = reference.counts.astype(np.float64), current.counts.astype(np.float64)
    return homogeneity_p(ref, cur, ordered=reference.kind == "numeric")


def homogeneity_p(
    reference: NDArray[np.float64], current: NDArray[np.float64], ordered: bool = False
) -> float | None:
    """Chi-square homogeneity p-value of two bucket-count vectors, sparse buckets pooled
    (with their neighbours when `ordered`)."""
    both = np.stack([reference, current]).astype(np.float64)
    table = _adjacent(both) if ordered else _pooled(both)
    if table is None:
        return None
    expected = _expected(table)
    stat = float(((table - expected) ** 2 / expected).sum())
    p = chi2_sf(table.shape[1] - 1, stat)
    return p if math.isfinite(p) else None


def _expected(table: NDArray[np.float64]) -> NDArray[np.float64]:
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    out: NDArray[np.float64] = np.outer(rows, cols) / table.sum()
    return out


def _pooled(table: NDArray[np.float64]) -> NDArray[np.float64] | None:
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2 or (table.sum(axis=1) == 0).any():
        return None
    sparse = _expected(table).min(axis=0) < MIN_EXPECTED
    if not sparse.any():
        return table
    kept, pool = table[:, ~sparse], table[:, sparse].sum(axis=1, keepdims=True)
    if kept.shape[1] == 0:
        return None
    merged = np.concatenate([kept, pool], axis=1)
    if _expected(merged)[:, -1].min() < MIN_EXPECTED:
        smallest = int(np.argmin(kept.sum(axis=0)))
        kept = kept.copy()
        kept[:, smallest] += pool[:, 0]
        merged = kept
    return merged if merged.shape[1] >= 2 else None


def _adjacent(table: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """Runs of adjacent buckets joined until each expects at least MIN_EXPECTED rows on both
    sides; a short last run joins the one before it."""
    table = table[:, table.sum(axis=0) > 0]
    rows = table.sum(axis=1)
    if table.shape[1] < 2 or (rows == 0).any():
        return None
    need = MIN_EXPECTED * rows.sum() / rows.min()  # column total giving that expectation
    groups: list[NDArray[np.float64]] = []
    run = np.zeros(2)
    for column in table.T:
        run = run + column
        if run.sum() >= need:
            groups.append(run)
            run = np.zeros(2)
    if run.sum() > 0:
        if not groups:
            return None
        groups[-1] = groups[-1] + run
    return np.stack(groups, axis=1) if len(groups) >= 2 else None
