"""The pair a p-value is computed on: categorical buckets the choice of buckets did not bias.

Why: a categorical spec's buckets are chosen on the reference (its top K values), and two of
them are biased against the reference's own counts by construction. The top K are the values
the reference happened to see most, so the reference over-counts them relative to any new
sample (the winner's curse: 1,000 equally likely values, 200k rows each side, and the
chi-square of (top 50 + other) gave p ~ 1e-9 on clean data where the full table gives 0.3).
And ``unseen`` is empty in the reference by definition, while a new sample always holds a few
values the reference missed. Any test of the current window against those counts alarms on
clean data, more surely the larger the windows (bench/calibration.py and its fast version,
tests/monitor/detectors/test_calibration.py).

What the p-value sees instead (the reported value stays the effect size on every bucket):

* Reference: when the spec chose its top K on a selection share of the reference
  (``ColumnSpec.selection_counts``, see `categorical_spec_from_counts`), only the held-out
  rest, whose counts the choice never saw: the reference profile's counts times each bucket's
  held-out share ``1 - selection/reference``. For the whole reference that is exactly the
  held-out rows; a reference slice gets its expected share of them, under-dispersed if
  anything (a conservative test). A `settled` category (one every split would have chosen)
  is the exception: its whole count, times the held-out share of the other buckets' rows (so
  it keeps its whole reference's share of the tested rows, `held_out_shares`). Testing it on
  held-out rows cost `l_infinity` over 1,000 Zipf values, whose largest change is nearly
  always such a category, 0.04 of power against NannyML's test on the whole reference (0.787
  against 0.825 at 1,000 rows; level since, bench/calibration_peers.py). Specs stored before
  the split have no selection counts: their whole reference is used, as before.
* Both sides: ``unseen`` is merged into ``other`` when the spec has a tail (values the
  reference had beyond its top K), so "outside the top K" is one cell counted alike on both
  sides. Then cells the reference side cannot fill (expected count under ``MIN_EXPECTED``
  from the two sides' combined counts, as the homogeneity test pools sparse cells) are
  pooled into one: a bootstrap null drawn from the reference's proportions never puts mass
  where the reference has (next to) none, so without pooling a value too rare for the
  reference to have seen, or a sparse reference (10,000 values in 10,000 rows), is "drift".
  A value the reference never had arriving in bulk fills its cell and stays: drift for
  every method.

Numeric profiles are unchanged: the reference's quantile edges hold fixed shares of it, which
makes the binned tests conservative rather than anti-conservative (measured by the suite; one
p-value still runs high, docs/concepts/calibration.md "Not promised").
"""

from __future__ import annotations

import weakref

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._base import Detector, Pair
from monitor.detectors._evidence import MIN_EXPECTED
from monitor.profiles import CategoricalProfile, ColumnSpec, spec_of
from monitor.profiles.kinds import Profile
from monitor.profiles.spec import SELECTION_SHARE

# Sampling sds by which a category's selection count must lead the K-th's to be `settled`.
SETTLED_Z = 3.0
_HELD_OUT: weakref.WeakKeyDictionary[CategoricalProfile, CategoricalProfile] = (
    weakref.WeakKeyDictionary()
)


def tested(detector: Detector, pair: Pair) -> Pair:
    """The pair `detector`'s p-value is computed on (`pair` itself where nothing is biased)."""
    ref, cur = pair.reference, pair.current
    if not detector.evidence or not isinstance(ref, CategoricalProfile):
        return pair  # missing_rate counts nulls, which no bucket choice touches
    assert isinstance(cur, CategoricalProfile)
    held = _HELD_OUT.get(ref)
    if held is None:
        held = _HELD_OUT[ref] = _merged(ref, _held_out_counts(ref))
    ref_counts, cur_counts = _sparse_pooled(held.counts, _merged(cur, cur.counts).counts)
    if ref_counts is not held.counts:
        held = CategoricalProfile(held.spec, ref_counts, held.null_count)
    return Pair(held, CategoricalProfile(cur.spec, cur_counts, cur.null_count))


def _has_tail(profile: Profile) -> bool:
    return bool(profile.spec.tail) and profile.spec.tail_complete


def _held_out_counts(profile: CategoricalProfile) -> np.ndarray:
    spec = spec_of(profile)
    if not spec.selection_counts:
        return profile.counts
    return np.rint(profile.counts * held_out_shares(spec)).astype(np.int64)


def held_out_shares(spec: ColumnSpec) -> NDArray[np.float64]:
    """Per bucket of a split spec, the share of a reference count the p-value tests.

    A bucket's own held-out share ``1 - selection/reference``, but for a `settled` category
    the held-out share of the other buckets' rows (those of the values not settled, ``other``
    included): its whole count at their held-out scale, so every bucket stands for about the
    held-out rows and the null draws the reference at their number. That overstates a settled
    count's noise (it has all the rows): conservative, most where the window is as large as
    the reference. Scaling the other buckets up to the whole reference instead would
    understate theirs.

    Why the other buckets' share, not the whole reference's: the settled values then hold
    exactly their whole reference's share of the tested counts, and the rest exactly the
    rest's (each bucket within it in its held-out proportion). At the reference's overall
    held-out share, the settled values' counts replace their held-out ones but the total still
    held those, so every proportion moved with the settled values' split noise (0.4% of a
    10,000-row reference): `l_infinity` on 1,000 Zipf values, whose largest change is nearly
    always a settled value's, lost 0.007 [0.002, 0.013] of power per reference against
    NannyML's at 1,000 rows (2,000 windows), and gains it back this way.
    """
    chosen = np.asarray(spec.selection_counts, dtype=np.float64)
    whole = np.asarray(spec.reference_counts, dtype=np.float64)
    share = np.divide(whole - chosen, whole, out=np.ones_like(whole), where=whole > 0)
    fixed = np.zeros(whole.size, dtype=bool)
    fixed[: len(spec.categories)] = settled(chosen[: len(spec.categories)])
    rest, rest_chosen = whole[~fixed].sum(), chosen[~fixed].sum()
    total = whole.sum()
    if rest > 0:  # the held-out share of the rows the settled values do not hold
        share[fixed] = (rest - rest_chosen) / rest
    else:
        share[fixed] = (total - chosen.sum()) / total if total > 0 else 1.0
    return share


def settled(chosen: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Which of the top K categories (their selection counts, `chosen`) any split would have
    chosen: a selection count at least `SETTLED_Z` sampling sds above the K-th's.

    Why: the held-out share is only needed where the choice could have favoured a value for
    its count. Another split's count of a value is ``Binomial(whole, share)``, variance about
    ``(1 - share) x count``; the K-th's moves as much. A value that far above it is chosen by
    nearly every split, so being chosen says nothing about its count, and its whole count is
    as unbiased as its held-out count, with a third more rows. Equally likely values never
    lead by that much (their spread is the K-th's own). The rule reads only the selection
    counts, which the held-out counts do not depend on: a value it leaves out is tested on
    held-out rows as before, and one near its margin has its count biased by at most the
    selection count's own noise (a quarter of the rows).
    """
    if chosen.size == 0:
        return np.zeros(0, dtype=bool)
    kth = chosen.min()
    margin = SETTLED_Z * np.sqrt((1 - SELECTION_SHARE) * (chosen + kth))
    return np.asarray(chosen - kth >= np.maximum(margin, 1.0), dtype=bool)


def _sparse_pooled(ref: np.ndarray, cur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells the reference side cannot fill (expected count from both sides' totals under
    MIN_EXPECTED) joined into one, or into the smallest other cell when still under it.

    Pooled by the two sides' combined counts, which do not tell the sides apart under no
    drift, so the pooling biases neither; the reference's own small counts would (a cell
    chosen for being small in the reference is, by that choice, larger in a new sample).
    """
    both = ref + cur
    total, n_ref = int(both.sum()), int(ref.sum())
    if total == 0 or n_ref == 0:
        return ref, cur
    expected = both * (n_ref / total)
    sparse = (both > 0) & (expected < MIN_EXPECTED)
    if not sparse.any():
        return ref, cur
    cells = np.flatnonzero(sparse)
    kept = np.flatnonzero((both > 0) & ~sparse)
    into = int(cells[0])
    if kept.size and both[cells].sum() * n_ref / total < MIN_EXPECTED:
        into = int(kept[np.argmin(both[kept])])
    out = []
    for side in (ref, cur):
        side = side.copy()
        moved = side[cells].sum()
        side[cells] = 0
        side[into] += moved
        out.append(side)
    return out[0], out[1]


def _merged(profile: Profile, counts: np.ndarray) -> CategoricalProfile:
    if _has_tail(profile):
        counts = counts.copy()
        counts[-2] += counts[-1]
        counts[-1] = 0
    if counts is profile.counts:
        assert isinstance(profile, CategoricalProfile)
        return profile
    return CategoricalProfile(profile.spec, counts, profile.null_count)
