"""Wasserstein-1 distance normalised by the reference standard deviation (numeric columns).

What it measures: the area between the two CDFs, in units of the reference sd — how far,
on average, mass has to move. 0.1 means a tenth of a standard deviation.
Default threshold: 0.1 (Evidently's default for its normed Wasserstein test).
How: each bucket is an atom at its own mean (per-bin sum / count), so a shift inside a bin
and skewed columns are measured where the values really are, not at bin midpoints.
Edge cases: empty buckets weigh nothing; a constant reference (sd 0: no unit to measure a
distance in, and every null draw is 0) gives ``insufficient_data`` with that reason — such a
column is compared per value by default (it is discrete); otherwise the sd is floored at
0.001. Null distribution by multinomial bootstrap from the reference with atoms at the
reference's bin means.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._base import Counts, Detector, NullScaling, Pair, proportions, register
from monitor.profiles import NumericProfile

SD_FLOOR = 0.001
# A sum of CDF gaps over all buckets: near-normal well before each bucket is (see NullScaling).
WASSERSTEIN_MIN_EXPECTED = 5.0


def _positions(profile: NumericProfile, fallback: NDArray[np.float64]) -> NDArray[np.float64]:
    counts = profile.counts
    return np.divide(profile.sums, counts, out=fallback.copy(), where=counts > 0, dtype=np.float64)


def _fallback(profile: NumericProfile) -> NDArray[np.float64]:
    """Where an empty bucket would sit: edge midpoints, the outer edges for under/overflow."""
    e = profile.spec.edges_array
    return np.concatenate([[e[0]], (e[:-1] + e[1:]) / 2, [e[-1]]])


def _norm(profile: NumericProfile) -> float:
    sd = float(np.sqrt(profile.m2 / profile.n)) if profile.n else 0.0
    return max(sd, SD_FLOOR)


@dataclass(frozen=True)
class _Atoms:
    """What a reference profile contributes to every comparison against it: where an empty
    bucket sits, its bucket atoms, their gaps and its sd (computed once per reference profile,
    not once per window, slice and null draw)."""

    fallback: NDArray[np.float64]
    positions: NDArray[np.float64]
    gaps: NDArray[np.float64]
    norm: float


_ATOMS: weakref.WeakKeyDictionary[NumericProfile, _Atoms] = weakref.WeakKeyDictionary()


def _atoms(reference: NumericProfile) -> _Atoms:
    found = _ATOMS.get(reference)
    if found is None:
        fallback = _fallback(reference)
        pos = _positions(reference, fallback)
        # Reference bin means are ordered like the buckets, so the CDFs step at sorted positions.
        found = _Atoms(fallback, pos, np.maximum(np.diff(pos), 0.0), _norm(reference))
        _ATOMS[reference] = found
    return found


def _batched(ref: Counts, cur: Counts, pair: Pair) -> NDArray[np.float64]:
    reference = pair.reference
    assert isinstance(reference, NumericProfile)
    atoms = _atoms(reference)
    cdf_gap = np.cumsum(proportions(ref) - proportions(cur), axis=1)[:, :-1]
    return np.abs(cdf_gap) @ atoms.gaps / atoms.norm


def _observed(pair: Pair) -> float:
    ref, cur = pair.reference, pair.current
    assert isinstance(ref, NumericProfile) and isinstance(cur, NumericProfile)
    atoms = _atoms(ref)
    pos = np.concatenate([atoms.positions, _positions(cur, atoms.fallback)])
    weights = np.concatenate([ref.counts / max(ref.n, 1), -cur.counts / max(cur.n, 1)]).astype(
        np.float64
    )
    order = np.argsort(pos, kind="stable")
    cdf_gap = np.cumsum(weights[order])[:-1]
    return float(np.abs(cdf_gap) @ np.diff(pos[order]) / atoms.norm)


def _degenerate(pair: Pair) -> str | None:
    reference = pair.reference
    assert isinstance(reference, NumericProfile)
    if reference.m2 <= 0.0:
        return "the reference is constant: no spread to measure a distance in"
    return None


DETECTOR = register(
    Detector(
        name="wasserstein",
        kinds=frozenset({"numeric"}),
        default_threshold=0.1,
        statistic=_batched,
        observed=_observed,
        description="Wasserstein-1 distance / reference sd",
        null_scaling=NullScaling(power=1, min_expected=WASSERSTEIN_MIN_EXPECTED),
        degenerate=_degenerate,
    )
)
