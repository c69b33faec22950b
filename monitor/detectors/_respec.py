"""Moving a profile onto another spec, so a window built on old edges still meets its baseline.

After `baseline create --replace` with other edges or categories, stored windows were profiled
on the old spec. Numeric: the window's CDF is piecewise linear between its own edges (and its
min/max), so it is read at the new edges and differenced — exact at shared edges, linear in
between. Categorical: counts move by category name; categories the new spec lacks go to its
`other` bucket when in its tail, else to `unseen`. A kind change cannot be moved (None).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.profiles.categorical import CategoricalProfile
from monitor.profiles.kinds import Profile
from monitor.profiles.numeric import NumericProfile
from monitor.profiles.spec import ColumnSpec


def rebin(profile: Profile, spec: ColumnSpec) -> Profile | None:
    """`profile` on `spec`; itself when the spec is the same, None across kinds."""
    if profile.spec.fingerprint == spec.fingerprint:
        return profile
    if profile.kind != spec.kind:
        return None
    if isinstance(profile, NumericProfile):
        return _numeric(profile, spec)
    assert isinstance(profile, CategoricalProfile)
    return _categorical(profile, spec)


def _numeric(p: NumericProfile, spec: ColumnSpec) -> NumericProfile:
    new = spec.edges_array
    if p.n == 0:
        counts = np.zeros(spec.n_buckets, dtype=np.int64)
        sums = np.zeros(spec.n_buckets)
    else:
        old = p.spec.edges_array
        knots = np.concatenate(([min(p.minimum, old[0])], old, [max(p.maximum, old[-1])]))
        cum = np.concatenate(([0.0], np.cumsum(p.counts, dtype=np.float64)))
        at = np.interp(new, knots, cum)
        share = np.diff(np.concatenate(([0.0], at, [float(p.n)])))
        counts = _integers(np.clip(share, 0.0, None), p.n)
        sums = counts * _midpoints(new, p.minimum, p.maximum)
    return NumericProfile(
        spec=spec,
        counts=counts,
        sums=sums,
        null_count=p.null_count,
        minimum=p.minimum,
        maximum=p.maximum,
        mean=p.mean,
        m2=p.m2,
    )


def _midpoints(edges: NDArray[np.float64], lo: float, hi: float) -> NDArray[np.float64]:
    inner = (edges[:-1] + edges[1:]) / 2.0
    return np.concatenate(([min(lo, edges[0])], inner, [max(hi, edges[-1])]))


def _integers(share: NDArray[np.float64], total: int) -> NDArray[np.int64]:
    """Round to integers that still sum to `total` (largest remainders get the rest)."""
    scaled = share * (total / share.sum()) if share.sum() > 0 else share
    base = np.floor(scaled).astype(np.int64)
    rest = total - int(base.sum())
    if rest > 0:
        order = np.argsort(-(scaled - base), kind="stable")[:rest]
        base[order] += 1
    return base


def _categorical(p: CategoricalProfile, spec: ColumnSpec) -> CategoricalProfile:
    index = {c: i for i, c in enumerate(spec.categories)}
    counts = np.zeros(spec.n_buckets, dtype=np.int64)
    other, unseen = spec.n_buckets - 2, spec.n_buckets - 1
    for category, n in p.category_counts().items():
        where = index.get(category, other if category in spec.tail else unseen)
        counts[where] += n
    counts[other] += p.other_count
    counts[unseen] += p.unseen_count
    return CategoricalProfile(spec=spec, counts=counts, null_count=p.null_count)
