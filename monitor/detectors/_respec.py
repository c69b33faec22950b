"""Moving a profile onto another spec, so a window built on old edges still meets its baseline.

After `baseline create --replace` with other edges or categories, stored windows were profiled
on the old spec. Numeric: each old bucket is taken as two even pieces split at its mean and
weighted so that the mean is kept (the CDF is piecewise linear through the edges, min/max and
bucket means); each new bucket gets the count and sum of what overlaps it — exact where edges
are shared. Categorical: counts move by category name; categories the new spec lacks go to its
`other` bucket when in its tail, else to `unseen`. A kind change cannot be moved (None).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.profiles import Binning
from monitor.profiles.categorical import CategoricalProfile
from monitor.profiles.kinds import Profile
from monitor.profiles.numeric import NumericProfile


def rebin(profile: Profile, spec: Binning) -> Profile | None:
    """`profile` on `spec`; itself when the spec is the same, None across kinds."""
    if profile.spec.fingerprint == spec.fingerprint:
        return profile
    if profile.kind != spec.kind:
        return None
    if isinstance(profile, NumericProfile):
        return _numeric(profile, spec)
    assert isinstance(profile, CategoricalProfile)
    return _categorical(profile, spec)


def _numeric(p: NumericProfile, spec: Binning) -> NumericProfile:
    old = _intervals(p.spec.edges_array, p.minimum, p.maximum)
    new = np.array(_intervals(spec.edges_array, -np.inf, np.inf))
    pieces = np.array(
        [piece
         for (a, b), n, total in zip(old, p.counts.tolist(), p.sums.tolist(), strict=True)
         for piece in _pieces(a, b, n, total)],
        dtype=np.float64,
    ).reshape(-1, 3)  # fmt: skip
    counts, sums = _moved(pieces, new[:, 0], new[:, 1])
    whole = _integers(counts, p.n)
    scale = np.divide(whole, counts, out=np.zeros_like(counts), where=counts > 0)
    return NumericProfile(
        spec=spec,
        counts=whole,
        sums=sums * scale,
        null_count=p.null_count,
        minimum=p.minimum,
        maximum=p.maximum,
        mean=p.mean,
        m2=p.m2,
    )


def _pieces(a: float, b: float, n: int, total: float) -> list[tuple[float, float, float]]:
    """A bucket's mass as two even pieces split at its mean, weighted to keep that mean
    (a tail bucket's values crowd towards its inner edge, not spread over its whole range)."""
    if n == 0:
        return []
    m = total / n
    if not a < m < b:
        return [(a, b, float(n))]
    below = (b - m) / (b - a)
    return [(a, m, below * n), (m, b, (1.0 - below) * n)]


def _intervals(edges: NDArray[np.float64], lo: float, hi: float) -> list[tuple[float, float]]:
    """Each bucket's value range: underflow [lo, e0), bins, overflow (eB, hi]."""
    inner = list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))
    first, last = float(edges[0]), float(edges[-1])
    return [(min(lo, first), first), *inner, (last, max(hi, last))]


def _moved(
    pieces: NDArray[np.float64], c: NDArray[np.float64], d: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Count and sum each new bucket [c, d] gets of the pieces (rows: start a, end b, mass).

    A piece spreads its mass evenly over [a, b]; a piece of one point (a discrete value, or an
    empty underflow range) moves whole to the first new bucket holding that point. The pieces
    are added in order (a cumulative sum), so the result is the same, to the last bit, as adding
    them one by one.
    """
    if not len(pieces):
        return np.zeros(len(c)), np.zeros(len(c))
    a, b, mass = (pieces[:, i : i + 1] for i in range(3))
    lo, hi = np.maximum(a, c), np.minimum(b, d)
    wide = b > a
    point = ((c <= a) & (a < d)) | ((a == d) & (d == c))
    with np.errstate(invalid="ignore"):
        spread = np.maximum(hi - lo, 0.0) / np.where(wide, b - a, 1.0)
    share = np.where(wide, spread, point.astype(np.float64))
    moved = np.where(share > 0, share * mass, 0.0)
    middle = np.where(wide, lo + hi, 2 * a)
    summed = np.where(share > 0, moved * middle / 2, 0.0)
    return np.cumsum(moved, axis=0)[-1], np.cumsum(summed, axis=0)[-1]


def _integers(share: NDArray[np.float64], total: int) -> NDArray[np.int64]:
    """Round to integers that still sum to `total` (largest remainders get the rest)."""
    scaled = share * (total / share.sum()) if share.sum() > 0 else share
    base = np.floor(scaled).astype(np.int64)
    rest = total - int(base.sum())
    if rest > 0:
        order = np.argsort(-(scaled - base), kind="stable")[:rest]
        base[order] += 1
    return base


def _categorical(p: CategoricalProfile, spec: Binning) -> CategoricalProfile:
    index = {c: i for i, c in enumerate(spec.categories)}
    counts = np.zeros(spec.n_buckets, dtype=np.int64)
    other, unseen = spec.n_buckets - 2, spec.n_buckets - 1
    for category, n in p.category_counts().items():
        where = index.get(category, other if category in spec.tail else unseen)
        counts[where] += n
    counts[other] += p.other_count
    counts[unseen] += p.unseen_count
    return CategoricalProfile(spec=spec, counts=counts, null_count=p.null_count)
