"""The pair a p-value is computed on: categorical buckets the choice of buckets did not bias.

Why: a categorical spec's buckets are chosen on the reference (its top K values), and two of
them are biased against the reference's own counts by construction. The top K are the values
the reference happened to see most, so the reference over-counts them relative to any new
sample (the winner's curse: 1,000 equally likely values, 200k rows each side, and the
chi-square of (top 50 + other) gave p ~ 1e-9 on clean data where the full table gives 0.3).
And ``unseen`` is empty in the reference by definition, while a new sample always holds a few
values the reference missed. Any test of the current window against those counts alarms on
clean data, more surely the larger the windows (tests/calibration, bench/calibration.py).

What the p-value sees instead (the reported value stays the effect size on every bucket):

* Reference: when the spec chose its top K on a selection share of the reference
  (``ColumnSpec.selection_counts``, see `categorical_spec_from_counts`), only the held-out
  rest, whose counts the choice never saw: the reference profile's counts times each bucket's
  held-out share ``1 - selection/reference``. For the whole reference that is exactly the
  held-out rows; a reference slice gets its expected share of them, under-dispersed if
  anything (a conservative test). Specs stored before the split have no selection counts:
  their whole reference is used, as before.
* Both sides: ``unseen`` is merged into ``other`` when the spec has a tail (values the
  reference had beyond its top K), so "outside the top K" is one cell counted alike on both
  sides. Without a tail, a sparse ``unseen`` cell (expected count under ``MIN_EXPECTED`` on
  the reference's side: a value too rare for the reference to have seen) joins the smallest
  occupied bucket, as the homogeneity test pools sparse cells; a full one stays, and a value
  the reference never had arriving in bulk is drift for every method.

Numeric profiles are unchanged: the reference's quantile edges hold fixed shares of it, which
makes the tests conservative rather than anti-conservative (measured by the suite).
"""

from __future__ import annotations

import weakref

import numpy as np

from monitor.detectors._base import Detector, Pair
from monitor.detectors._evidence import MIN_EXPECTED
from monitor.profiles import CategoricalProfile, spec_of
from monitor.profiles.kinds import Profile

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
    return Pair(held, _merged(cur, _rare_unseen_pooled(held.counts, cur.counts)))


def _held_out_counts(profile: CategoricalProfile) -> np.ndarray:
    spec = spec_of(profile)
    if not spec.selection_counts:
        return profile.counts
    chosen = np.asarray(spec.selection_counts, dtype=np.float64)
    whole = np.asarray(spec.reference_counts, dtype=np.float64)
    share = np.divide(whole - chosen, whole, out=np.ones_like(whole), where=whole > 0)
    return np.rint(profile.counts * share).astype(np.int64)


def _rare_unseen_pooled(ref: np.ndarray, cur: np.ndarray) -> np.ndarray:
    unseen = int(cur[-1])
    total = int(ref.sum()) + int(cur.sum())
    if unseen == 0 or ref[-1] > 0 or unseen * ref.sum() / max(total, 1) >= MIN_EXPECTED:
        return cur
    pooled = (ref + cur)[:-1].astype(np.float64)
    occupied = np.flatnonzero(pooled > 0)
    if occupied.size == 0:
        return cur
    out = cur.copy()
    out[occupied[np.argmin(pooled[occupied])]] += unseen
    out[-1] = 0
    return out


def _merged(profile: Profile, counts: np.ndarray) -> CategoricalProfile:
    if profile.spec.tail and profile.spec.tail_complete:
        counts = counts.copy()
        counts[-2] += counts[-1]
        counts[-1] = 0
    if counts is profile.counts:
        assert isinstance(profile, CategoricalProfile)
        return profile
    return CategoricalProfile(profile.spec, counts, profile.null_count)
