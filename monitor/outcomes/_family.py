"""Family-wise control of `degraded` across the results of one evaluation (Holm).

Each result's own rule (`status_of`: the whole 95% interval beyond baseline ∓ tolerance) fails
a clean result at most 2.5% of the time, but one evaluation (a model version's window: every
metric of every slice) holds many results: 7 metrics over 5 groups made some result `degraded`
in 40% of clean evaluations. Under ``family`` (the default) the results with a verdict (a
baseline and enough support) are one family and Holm's step-down procedure keeps the chance
that any of them is falsely `degraded` at most `FAMILY_ALPHA` (0.025, one-sided):

* each result's interval is tested at a stricter one-sided level, the m results in order of
  their evidence (most beyond the tolerated level first) at ``0.025 / m``, ``0.025 / (m - 1)``,
  …, ``0.025``; a result is `degraded` while its interval at its level lies beyond, and the
  first that does not stops the procedure (it and every result after it are `ok`);
* the interval at another level is the reported one recomputed at that normal quantile: Wilson's
  at ``z`` for proportions (exact), the others each end moved from its centre by ``z / Z95``
  (exact for the normal intervals of the summaries' regression metrics, the usual
  approximation for a percentile bootstrap; ECE's about its plug-in, the interval's midpoint).

The reported interval stays the 95% one; ``level`` records the one-sided level the decision
tested it at (0.025 per result; results after the stop: the level of the result that stopped
it, at which none of them is beyond either). One result with a verdict, or ``per_result``,
decides exactly as `status_of`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Literal

from monitor.outcomes._base import Metric, OutcomeResult, OutcomeStatus, get_metric
from monitor.outcomes._intervals import Z95, rescale, wilson

Correction = Literal["family", "per_result"]
CORRECTIONS: tuple[Correction, ...] = ("family", "per_result")
FAMILY_ALPHA = 0.025  # one-sided: the tail of one two-sided 95% interval


def decide(results: Sequence[OutcomeResult], correction: Correction) -> list[OutcomeResult]:
    """The results with their `degraded` decided under `correction` (see the module)."""
    family = [i for i, r in enumerate(results) if r.level is not None]
    out = list(results)
    if correction == "per_result" or len(family) < 2:
        return out
    m = len(family)
    metrics = {i: get_metric(out[i].metric) for i in family}
    order = sorted(family, key=lambda i: -evidence(metrics[i], out[i]))
    stop: float | None = None
    for k, i in enumerate(order):
        level = FAMILY_ALPHA / (m - k)
        if stop is None and not beyond(metrics[i], out[i], level):
            stop = level
        r = out[i]
        # Built, not `dataclasses.replace`d: a fifth of the cost (a burst decides ~60,000).
        out[i] = OutcomeResult(r.metric, r.slice, r.value, r.ci_low, r.ci_high, r.baseline_value,
                               r.tolerance, r.n, "degraded" if stop is None else "ok",
                               level if stop is None else stop)  # fmt: skip
    return out


def status_of(
    metric: Metric, value: float, lo: float, hi: float, base: float | None, tol: float
) -> OutcomeStatus:
    """`degraded` when the whole interval is worse than the tolerated level, else `ok`."""
    if base is None:
        return "ok"
    # Degraded only when the whole interval lies beyond the tolerated level, so a small noisy
    # slice is not called degraded from sampling noise (`decide`: across the evaluation).
    if metric.higher_is_better:
        worse = hi < base - tol
    else:
        worse = lo > base + tol
    return "degraded" if worse else "ok"


def z_of(level: float) -> float:
    """The normal quantile of a one-sided `level` (exactly `Z95` at 0.025)."""
    return Z95 if level == FAMILY_ALPHA else NormalDist().inv_cdf(1.0 - level)


def beyond(metric: Metric, r: OutcomeResult, level: float) -> bool:
    """Whether the result's interval at one-sided `level` lies beyond its tolerated level."""
    assert r.value is not None and r.ci_low is not None and r.ci_high is not None
    base, tol = r.baseline_value, r.tolerance or 0.0
    if level == FAMILY_ALPHA:
        lo, hi = r.ci_low, r.ci_high
    elif metric.proportion:
        lo, hi = wilson(r.value * r.n, r.n, z_of(level))
    else:
        centre = _centre(metric, r)
        lo, hi = rescale(centre, r.ci_low, r.ci_high, z_of(level))
    return status_of(metric, r.value, lo, hi, base, tol) == "degraded"


def evidence(metric: Metric, r: OutcomeResult) -> float:
    """The normal quantile z at which the result's interval just reaches its tolerated level
    (larger: more evidence of `degraded`; the order Holm tests the results in)."""
    assert r.value is not None and r.ci_low is not None and r.ci_high is not None
    assert r.baseline_value is not None
    tol = r.tolerance or 0.0
    sign = 1.0 if metric.higher_is_better else -1.0
    edge = r.baseline_value - sign * tol  # the tolerated level
    if metric.proportion:
        return _score_z(r.value, r.n, edge, sign)
    centre = _centre(metric, r)
    shortfall = sign * (edge - centre)  # > 0: the centre is worse than the tolerated level
    half = sign * ((r.ci_high if sign > 0 else r.ci_low) - centre)
    return Z95 * shortfall / half if half > 0 else math.copysign(math.inf, shortfall)


def _score_z(p: float, n: int, edge: float, sign: float) -> float:
    """Wilson's z at which the proportion p of n reaches `edge` (the score statistic)."""
    var = edge * (1.0 - edge) / max(n, 1)
    if var > 0:
        return sign * (edge - p) / math.sqrt(var)
    # edge at or past 0 or 1: Wilson's ends reach it at no z, or (p short of it) at every z
    return math.inf if sign * (edge - p) > 0 else -math.inf


def _centre(metric: Metric, r: OutcomeResult) -> float:
    """The point the metric's interval is built about (ECE's: the plug-in, its midpoint)."""
    assert r.value is not None and r.ci_low is not None and r.ci_high is not None
    return (r.ci_low + r.ci_high) / 2 if metric.interval_centre == "midpoint" else r.value
