"""The exact band of a small window's binary metrics: the realized metric's own distribution.

Given its calibrated probabilities, a window's labels are independent Bernoulli(q) per row, so
its true positives (among the predicted positives) and false negatives (among the predicted
negatives) are independent Poisson-binomial counts, and accuracy, precision, recall, F1 and
specificity are functions of the two. Their distributions are computed exactly (the
probability-generating function evaluated on roots of unity, inverted by one FFT), and the
band is the central interval that leaves at most `TAIL` on each side — what ±3 standard errors
promise of a normal metric. Under `EXACT_ROWS` rows the normal approximation can be poor (a
precision over 30 predicted positives of probability 0.9 is discrete and skewed: ±3 SE miss it
0.78% of the time, nominal 0.27%); from there on the normal band holds (1,000-row chunks:
misses ≤ 0.25%) and is kept, being cheaper (docs, Calibration). `gamma_interval` is DLE's
small-window counterpart for a mean of squared losses."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from monitor.estimation._calibration import Array

EXACT_ROWS = 1_000  # windows of fewer rows get the exact band
TAIL = 0.0013498980316301  # the normal one-sided tail beyond 3 SE: P(Z > 3)
EXACT_METRICS = ("accuracy", "precision", "recall", "f1", "specificity")
_NEGLIGIBLE = 1e-13  # probability mass dropped from each count's far tails (the grid's size)


def poisson_binomial(rows: Array, q: Array) -> tuple[int, Array]:
    """The distribution of the number of positives among `rows[i]` rows of probability `q[i]`
    each: the first count and the probabilities of it and the counts after it (beyond them:
    less than 1e-13 in all)."""
    n = int(round(float(rows.sum())))
    if n == 0:
        return 0, np.ones(1)
    # rows of one probability are one binomial; the counts within ±(4√n + 32) of the mean hold
    # all but 2·exp(−32) of the mass (Hoeffding), so a DFT of that size, aliased, is exact
    values, where = np.unique(q[rows > 0], return_inverse=True)
    weights = np.bincount(where, weights=rows[rows > 0])
    size = min(n + 1, int(8 * math.sqrt(n)) + 64)
    omega = np.exp(2j * np.pi * np.arange(size) / size)
    z = 1.0 - values[:, None] + values[:, None] * omega[None, :]
    with np.errstate(divide="ignore"):  # z^k as exp(k·(log|z| + i·arg z)): integer k
        pgf = np.exp(weights @ np.log(np.abs(z)) + 1j * (weights @ np.angle(z)))
    aliased = np.maximum(np.fft.fft(pgf).real / size, 0.0)  # P(count ≡ m mod size)
    first = min(max(int(round(float(weights @ values))) - size // 2, 0), n + 1 - size)
    pmf = aliased[(first + np.arange(size)) % size]
    return _trimmed(first, pmf / pmf.sum())


def _trimmed(first: int, pmf: Array) -> tuple[int, Array]:
    """The counts from `first` with probabilities `pmf`, less the far tails (less than
    _NEGLIGIBLE on each side)."""
    cdf = np.cumsum(pmf)
    low = int(np.searchsorted(cdf, _NEGLIGIBLE, side="right"))
    high = int(np.searchsorted(cdf, 1.0 - _NEGLIGIBLE, side="left"))
    return first + low, pmf[low : min(max(high, low), pmf.size - 1) + 1]


def _ratio(num: Array, den: Array) -> Array:
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den > 0)


def exact_intervals(
    counts: Array, probability: Array, metrics: tuple[str, ...]
) -> dict[str, tuple[float, float]]:
    """Per metric of EXACT_METRICS in `metrics`: the central interval of the realized metric
    of the window whose rows per (bin, predicted class) are `counts` (shape (bins, 2)), labels
    Bernoulli(probability[bin]): its lower end has P(below) ≤ TAIL, its upper P(above) ≤ TAIL."""
    if not set(metrics) & set(EXACT_METRICS):
        return {}
    negatives, positives = counts[:, 0].sum(), counts[:, 1].sum()
    tp0, p_tp = poisson_binomial(counts[:, 1], probability)
    fn0, p_fn = poisson_binomial(counts[:, 0], probability)
    tp = (tp0 + np.arange(p_tp.size, dtype=np.float64))[:, None]
    fn = (fn0 + np.arange(p_fn.size, dtype=np.float64))[None, :]
    weight = (p_tp[:, None] * p_fn[None, :]).ravel()
    tn, fp = negatives - fn, positives - tp
    values: dict[str, Callable[[], Array]] = {
        "accuracy": lambda: (tp + tn) / max(positives + negatives, 1.0),
        "precision": lambda: _ratio(tp, np.asarray(positives)),
        "recall": lambda: _ratio(tp, tp + fn),
        "f1": lambda: _ratio(2 * tp, tp + fn + positives),
        "specificity": lambda: _ratio(tn, tn + fp),
    }
    shape = (tp.size, fn.size)
    return {name: _central(np.broadcast_to(values[name](), shape).ravel(), weight)
            for name in metrics if name in values}  # fmt: skip


def widened(value: float, interval: tuple[float, float], wider: float) -> tuple[float, float]:
    """`interval` (stretched to hold `value`) with each side's distance from `value` times
    `wider` (`widening`: the calibration's or loss models' own error), the low end at least 0."""
    low, high = min(interval[0], value), max(interval[1], value)
    return max(0.0, value - (value - low) * wider), value + (high - value) * wider


def gamma_interval(mean: float, se: float) -> tuple[float, float]:
    """The central interval leaving `TAIL` on each side of the gamma distribution with this
    mean and standard deviation: a mean of n positive, right-skewed losses (a mean squared
    error over normal errors is exactly gamma: χ²), where ±3 SE misses above too often."""
    from scipy.special import gammainccinv, gammaincinv

    shape, scale = (mean / se) ** 2, se * se / mean
    return float(gammaincinv(shape, TAIL)) * scale, float(gammainccinv(shape, TAIL)) * scale


def _central(values: Array, weight: Array) -> tuple[float, float]:
    order = np.argsort(values, kind="stable")
    v, cdf = values[order], np.cumsum(weight[order])
    total = cdf[-1]
    low = int(np.searchsorted(cdf, TAIL * total, side="right"))  # first with P(≤) > TAIL
    high = int(np.searchsorted(cdf, total * (1.0 - TAIL), side="left"))  # P(above) ≤ TAIL
    return float(v[min(low, v.size - 1)]), float(v[min(high, v.size - 1)])
