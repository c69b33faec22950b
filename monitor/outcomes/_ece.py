"""Expected calibration error (ECE): the bias-corrected value and its 95% interval.

The estimand is the population's binned ECE, ``θ = Σ_b |E[labels - scores in bin b]| / n`` over
the 10 equal-width score bins (`ECE_BINS`): 0 for a calibrated model. The plug-in of n rows,
``θ̂ = Σ_b |D_b| / n`` (``D_b`` the bin's label sum minus its score sum), is biased up by the
sampling noise of its bins, about 1/sqrt(n) (a calibrated model reads 0.09 at 100 rows, 0.03 at
1,000), so it is not what `ece` reports:

* **value**: the plug-in minus its estimated bias, clipped at 0. Each bin's ``D_b`` is taken as
  normal with the variance it would have were the model calibrated, ``V_b = n_b c_b (1 - c_b)``
  (``c_b`` the bin's mean score); its ``|D_b|`` overstates ``|δ_b|`` (``δ_b = E[D_b]``) by
  ``E|N(δ_b, V_b)| - |δ_b|``, evaluated at ``|δ_b| ≈ sqrt(max(D_b² - V_b, 0))`` (``D_b² - V_b``
  is unbiased for ``δ_b²``). A calibrated model then reads a quarter to a third of its plug-in,
  a badly calibrated one about its true ECE (each bin's bias at most ~0.3 of its noise sd).
* **interval**: ``[θ̂ - q, θ̂ + q]`` (lower end clipped at 0), ``q`` an upper 97.5% bound of the
  noise ``Σ_b |D_b - δ_b| / n``: the larger of its null draws' (each bin's label sum redrawn
  ``Binomial(n_b, c_b)``: the noise were the model calibrated) and its bootstrap draws'
  (``Σ_b |D*_b - D_b| / n``: the noise of the rows as they are, which is larger where the model
  is overconfident), each the ``ceil(0.975 (m + 1))``-th smallest of its m draws, so that a
  value exchangeable with the draws exceeds it with probability at most 2.5% (the usual
  interpolated percentile of 200 draws would be exceeded 3% of the time). By the triangle
  inequality ``|θ̂ - θ|`` is at most that noise, so each end holds with at least 97.5% whatever
  the model's calibration, and at a calibrated model the plug-in *is* the noise: its lower end
  is above 0 in at most 2.5% of a calibrated model's windows, so `degraded` against a baseline
  of 0 keeps its promised rate. The value lies inside (its correction is at most the noise's
  mean); the interval is centred on the plug-in, not on the value.

The helpers here are shared by the row path (`ece_with_interval`) and the summaries path
(`from_summary`), which have the same per-bin sums, so both report the same value and draw the
same null noise (their bootstraps differ as for every metric).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.outcomes._intervals import BOOTSTRAP_DRAWS, bootstrap_draws, percentile_ends
from monitor.outcomes._score_bins import ECE_BINS

Array = NDArray[np.float64]
_ROUNDING = 1e-12  # per row: variances below this are float residue (scores all 0 or 1), not noise


def ece_bins(y: Array, score: Array) -> tuple[Array, Array, Array]:
    """Per calibration bin: (rows, score sum, label sum - score sum)."""
    idx = np.minimum((score * ECE_BINS).astype(np.intp), ECE_BINS - 1)
    count = np.bincount(idx, minlength=ECE_BINS).astype(np.float64)
    conf = np.bincount(idx, weights=score, minlength=ECE_BINS).astype(np.float64)
    labels = np.bincount(idx, weights=y, minlength=ECE_BINS).astype(np.float64)
    return count, conf, labels - conf


def bin_bias(count: Array, conf: Array, gap: Array) -> Array:
    """Estimated bias of each bin's ``|gap|`` as an estimate of ``|E[gap]|`` (elementwise)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        var = np.where(count > 0, conf * (count - conf) / count, 0.0)
    var = np.maximum(var - _ROUNDING * count, 0.0)
    mean = np.sqrt(np.maximum(gap * gap - var - _ROUNDING * count, 0.0))
    return _folded_mean(mean, var) - mean


def _folded_mean(mean: Array, var: Array) -> Array:
    """``E|N(mean, var)|`` for ``mean >= 0`` (``mean`` where ``var`` is 0)."""
    from scipy.special import erfc  # heavy: not loaded by importing monitor.outcomes

    sd = np.sqrt(var)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, mean / np.where(sd > 0, sd, 1.0), np.inf)
    near = np.sqrt(2 / np.pi) * sd * np.exp(-0.5 * np.minimum(z * z, 1400.0))
    return np.where(sd > 0, near + mean * (1.0 - erfc(z / np.sqrt(2.0))), mean)


def ece_estimate(plugin: Array, bias: Array, noise_q: Array) -> tuple[Array, Array, Array]:
    """(value, ci_low, ci_high) from the plug-in ECE, its summed estimated bias (both already
    divided by n) and the 97.5th percentile of the bootstrap noise; elementwise."""
    low = np.maximum(plugin - noise_q, 0.0)
    high = np.minimum(plugin + noise_q, 1.0)
    return np.clip(plugin - bias, low, high), low, high


def ece(y: Array, score: Array) -> float:
    """The bias-corrected ECE of (labels, scores) over 10 equal-width bins."""
    count, conf, gap = ece_bins(y, score)
    n = max(y.size, 1)
    plugin = np.abs(gap).sum() / n
    return float(max(plugin - bin_bias(count, conf, gap).sum() / n, 0.0))


def plugin_ece(y: Array, score: Array) -> float:
    """The plug-in ECE (biased up by ~1/sqrt(n); see the module docstring)."""
    return float(np.abs(ece_bins(y, score)[2]).sum() / max(y.size, 1))


def noise_bound(draws: Array) -> Array:
    """The ``ceil(0.975 (m + 1))``-th smallest of the m draws along the first axis (the
    largest where m < 79): the upper end of their percentile interval (`tail_rank`)."""
    return np.asarray(percentile_ends(draws)[1])


def null_noise(count: Array, conf: Array, gap: Array) -> Array:
    """Draws of the plug-in ECE were the model calibrated: each bin's label sum redrawn
    ``Binomial(rows, mean score)`` (`BOOTSTRAP_DRAWS` draws; all `ECE_BINS` bins, in order).

    Seeded by the bins' row and label counts, integers both paths have exactly: windows of one
    size but other data draw other noise. Seeded by n alone, every window of n rows would share
    one estimate of the bound, and the rate of those windows would be that estimate's (with 200
    draws anywhere from ~1% to ~4%), not the promised 2.5%."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(count > 0, np.clip(conf / count, 0.0, 1.0), 0.0)
    labels = np.rint(conf + gap)
    rng = np.random.default_rng(
        [*count.astype(np.int64).tolist(), *labels.astype(np.int64).tolist()]
    )
    draws = np.zeros((BOOTSTRAP_DRAWS, count.size))
    for b in np.flatnonzero(count):  # one bin at a time: scalar draws are ~10x cheaper
        draws[:, b] = rng.binomial(int(count[b]), mean[b], size=BOOTSTRAP_DRAWS)
    return np.asarray(np.abs(draws - conf).sum(axis=1) / max(count.sum(), 1.0))


def ece_with_interval(y: Array, score: Array, seed: int) -> tuple[float, float, float]:
    """(value, ci_low, ci_high) of the rows' ECE: the module docstring's estimate and interval,
    the bootstrap seeded by `seed` (the null draws by the bins' counts: `null_noise`)."""
    count, conf, gap = ece_bins(y, score)
    n = y.size

    def noise(yb: Array, sb: Array) -> float:
        return float(np.abs(ece_bins(yb, sb)[2] - gap).sum() / n)

    boot = bootstrap_draws(noise, y, score, seed)
    q = max(float(noise_bound(boot)), float(noise_bound(null_noise(count, conf, gap))))
    plugin = np.abs(gap).sum() / n
    bias = bin_bias(count, conf, gap).sum() / n
    value, low, high = ece_estimate(np.asarray(plugin), np.asarray(bias), np.asarray(q))
    return float(value), float(low), float(high)
