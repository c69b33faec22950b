"""Null distributions at (n_reference, n_current): analytic, or a cached multinomial bootstrap.

Under "no drift" both samples come from the reference distribution. The bootstrap draws
``n_ref`` and ``n_cur`` values from the reference profile's bucket proportions ``B`` times
and scores each pair with the detector's own statistic, so the null reflects the window's
size, the reference's size and the column's cardinality (1000 sparse categories in a
300-row window have a large JS distance by chance alone). The draws are seeded from the
inputs (results are reproducible) and cached per (detector, reference counts, drawn size).

Which size the draws are made at (`draw_plan`): a detector with a `NullScaling` has a null
that scales like ``s**power``, ``s = sqrt(1/n_ref + 1/n_cur)``, once every occupied bucket
expects enough rows on both sides. There the draws are made once per reference, at
``n_cur = n_ref``, and rescaled to the window's size, so windows, days and weeks of any size
reuse one set of draws. Below that, from `GRID_MIN` rows, the size is rounded to a geometric
grid (`GRID_RATIO`, at most 2.5% off) and the draws rescaled the same way, so windows whose
sizes differ by a few rows share draws; smaller windows are drawn at their own size. Either
way the rescaled quantiles agree with draws at the exact size within the Monte Carlo error
of `BOOTSTRAP_DRAWS` draws (tests/monitor/detectors/test_null_scaling.py).

The p-value is the empirical tail share ``(1 + #{T* >= T}) / (B + 1)``, plus the observed
value's position between its two neighbouring draws (`_between`: continuous in the value,
never below the tail share); when the observed
value lies beyond nearly all draws, the tail is extrapolated from gamma distributions
moment-matched to ``T*^power`` for a few powers, keeping the most conservative, so that
strong drifts get p-values small enough to survive Benjamini–Hochberg.
"""

from __future__ import annotations

import hashlib
import math
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from monitor.detectors._base import Detector, Pair
from monitor.detectors._special import gammaincc
from monitor.profiles.kinds import Profile

BOOTSTRAP_DRAWS = 300
_TAIL_DRAWS = 5
# T^power is fitted by a gamma for each power and the largest (most conservative) tail kept:
# distances squared are chi²-like for smooth nulls, heavy-tailed columns need lower powers.
_POWERS = (0.5, 1.0, 2.0)  # fewer exceedances than this: extrapolate with the gamma fit
_CACHE_SIZE = 8192
GRID_MIN = 30
GRID_RATIO = 1.05
_MULTINOMIAL_MAX_BUCKETS = 100
_cache: OrderedDict[bytes, NDArray[np.float64]] = OrderedDict()


def p_value(detector: Detector, pair: Pair) -> float:
    """The p-value of the pair's statistic under the detector's null at its sample sizes.

    The test statistic is the detector's batched (bucket-count) statistic, the one the null
    draws use, so observed and null are computed alike even where the reported value is
    finer (Wasserstein's per-side bin means).
    """
    ref = _reference(detector, pair.reference).counts[None, :]
    cur = detector.buckets(pair.current)[None, :]
    value = float(detector.statistic(ref, cur, pair)[0])
    if detector.p_value is not None:
        analytic = detector.p_value(value, pair)
        if analytic is not None:
            return analytic
    draws = null_draws(detector, pair)
    exceed = int((draws >= value - 1e-12).sum())
    empirical = (1 + exceed + _between(draws, value)) / (draws.size + 1)
    if exceed >= _TAIL_DRAWS:
        return min(empirical, 1.0)
    return min(empirical, max(_gamma_tail(draws, value, power) for power in _POWERS))


def _between(draws: NDArray[np.float64], value: float) -> float:
    """Where `value` lies between the draw below it (1) and the draw at or above it (0).

    Why: the tail share alone is a step function of the value, so every window of one
    reference whose value falls between two neighbouring draws gets the same p-value, and at
    a matched false-alarm rate ties lose power against the plain distance (Hellinger on 10
    values at 1,000 rows: 0.408 against Evidently's 0.420 per reference, 4,000 windows;
    bench/calibration_peers.py). Adding this fraction makes the p-value fall continuously
    with the value, from one step's p-value to the next, so it never lies below the tail
    share: the test stays valid (at most one draw's 1/(B + 1) more conservative). A value at
    a draw, or beyond every draw, keeps its tail share.
    """
    above, below = draws[draws >= value - 1e-12], draws[draws < value - 1e-12]
    if above.size == 0 or below.size == 0:
        return 0.0
    hi, lo = float(above.min()), float(below.max())
    return (hi - value) / (hi - lo) if hi > value else 0.0


def null_draws(detector: Detector, pair: Pair, draws: int = BOOTSTRAP_DRAWS) -> NDArray[np.float64]:
    """Statistic values of `draws` resampled no-drift pairs at the pair's sizes."""
    ref = _reference(detector, pair.reference)
    n_cur = int(detector.buckets(pair.current).sum())
    n_draw, factor = _plan(detector, ref.n, ref.sparsest, n_cur)
    drawn = _drawn(detector, pair, ref, n_draw, draws)
    return drawn if factor == 1.0 else drawn * factor


def draw_plan(detector: Detector, ref: NDArray[np.float64], n_cur: int) -> tuple[int, float]:
    """The current size the null is drawn at, and the factor its draws are rescaled by."""
    n_ref = int(ref.sum())
    return _plan(detector, n_ref, float(ref[ref > 0].min()) / n_ref if n_ref else 0.0, n_cur)


def _plan(detector: Detector, n_ref: int, sparsest: float, n_cur: int) -> tuple[int, float]:
    """`draw_plan` from the reference's size and its sparsest occupied bucket's share."""
    scaling = detector.null_scaling
    if scaling is None or min(n_ref, n_cur) < GRID_MIN:
        return n_cur, 1.0
    if min(n_ref, n_cur) * sparsest >= scaling.min_expected:
        n_draw = n_ref
    else:
        step = np.log(GRID_RATIO)
        n_draw = round(float(np.exp(round(np.log(n_cur) / step) * step)))
    if n_draw == n_cur:
        return n_cur, 1.0
    return n_draw, (_spread(n_ref, n_cur) / _spread(n_ref, n_draw)) ** scaling.power


def _spread(n_ref: int, n_cur: int) -> float:
    return math.sqrt(1.0 / n_ref + 1.0 / n_cur)  # (np.sqrt rounds alike: IEEE sqrt)


@dataclass
class _Reference:
    """A reference profile's bucket counts as one detector sees them, with what every null of
    it needs: its size, sparsest occupied share and the cache keys of its draws so far (kept
    while the profile lives: a tick compares every window against the same profiles)."""

    counts: NDArray[np.float64]
    n: int
    sparsest: float
    keys: dict[tuple[int, int], bytes] = field(default_factory=dict)


_REFERENCES: weakref.WeakKeyDictionary[Profile, dict[str, _Reference]] = weakref.WeakKeyDictionary()


def _reference(detector: Detector, profile: Profile) -> _Reference:
    mine = _REFERENCES.setdefault(profile, {})
    found = mine.get(detector.name)
    if found is None:
        counts = detector.buckets(profile)
        n = int(counts.sum())
        sparsest = float(counts[counts > 0].min()) / n if n else 0.0
        found = mine[detector.name] = _Reference(counts, n, sparsest)
    return found


def _drawn(
    detector: Detector, pair: Pair, ref: _Reference, n_cur: int, draws: int
) -> NDArray[np.float64]:
    key = ref.keys.get((n_cur, draws))
    if key is None:
        key = ref.keys[(n_cur, draws)] = _key(detector.name, ref.counts, n_cur, draws)
    cached = _cache.get(key)
    if cached is not None:
        _cache.move_to_end(key)
        return cached
    rng = np.random.default_rng(int.from_bytes(key[:8], "little"))
    p = ref.counts / ref.counts.sum()
    r, c = _resample(rng, p, ref.n, draws), _resample(rng, p, n_cur, draws)
    result = np.asarray(detector.statistic(r, c, pair), dtype=np.float64)
    _cache[key] = result
    if len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return result


def _resample(
    rng: np.random.Generator, p: NDArray[np.float64], n: int, draws: int
) -> NDArray[np.float64]:
    # Multinomial draws cost one binomial per bucket; past ~100 buckets the Poisson
    # approximation (independent counts with mean n*p) is as good and vectorises, and for
    # large means the normal approximation of the Poisson is as good again and cheaper.
    if p.size <= _MULTINOMIAL_MAX_BUCKETS:
        return rng.multinomial(n, p, size=draws).astype(np.float64)
    lam = n * p
    big = lam >= 50
    out = np.empty((draws, p.size))
    out[:, ~big] = rng.poisson(lam[~big], size=(draws, int((~big).sum())))
    out[:, big] = lam[big] + np.sqrt(lam[big]) * rng.standard_normal((draws, int(big.sum())))
    return np.maximum(out, 0.0, out=out)


def _key(name: str, ref: NDArray[np.float64], n_cur: int, draws: int) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    h.update(name.encode())
    h.update(np.ascontiguousarray(ref, dtype=np.float64).tobytes())
    h.update(f"{n_cur}:{draws}".encode())
    return h.digest()


def _gamma_tail(draws: NDArray[np.float64], value: float, power: float) -> float:
    s = np.power(np.maximum(draws, 0.0), power)
    mean, var = float(s.mean()), float(s.var())
    if mean <= 0 or var <= 0:
        # Identical draws say nothing about a tail: no extrapolation, the empirical share
        # stands (at least 1/(B+1): a p-value of 0 would be overwhelming evidence from nothing).
        return 1.0
    shape, scale = mean * mean / var, var / mean
    tail = gammaincc(shape, max(value, 0.0) ** power / scale)
    return tail if math.isfinite(tail) else 1.0  # no fit: the empirical p-value stands
