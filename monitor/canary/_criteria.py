"""The criteria of a canary analysis, each a pure function of the two versions' evidence.

Every criterion needs minimum evidence from both versions (`canary.min_events` events or
latency samples, `canary.min_labels` labels), else it is `insufficient_data`. Latency and error
rate criteria exist only where the stable version reports those fields; outcome criteria only
where its predictions have labels; a measure criterion (`ttft_p95`, `tpot_p95`,
`tokens_per_s_p5`: the registered measures judged by canaries) only where the stable version's
events carry the measure.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from monitor.canary._evidence import Evidence
from monitor.common.measures import OBJECTIVE_STATS, Measure
from monitor.config import ModelConfig
from monitor.detectors import compare, get_detector, rebin
from monitor.outcomes import Metric, OutcomeResult, difference, get_metric, rescale, wilson
from monitor.profiles import Profile
from monitor.profiles.serving import LatencySketch
from monitor.slo.breakdown import latency_shift

CriterionStatus = Literal["ok", "fail", "insufficient_data"]


@dataclass(frozen=True)
class CanaryCriterion:
    """One criterion: canary and stable values, the bound that decides, both sample sizes.

    For distribution criteria (`prediction`, `feature:<name>`) `canary` is the distance of the
    canary's distribution from the stable's and `baseline` is None; for `error_rate` `threshold`
    is the SLO (None without one: the two-proportion test decides alone).
    """

    name: str
    status: CriterionStatus
    canary: float | None
    baseline: float | None
    threshold: float | None
    n_canary: int
    n_baseline: int
    detail: str = ""
    # The criterion's own test (distributions, error rate); None for bounds without a test.
    p_value: float | None = None

    def to_dict(self) -> dict[str, object]:
        """The criterion as Argo's jsonPath and Flagger read it (`detail` is for people)."""
        return {
            "name": self.name,
            "status": self.status,
            "canary": self.canary,
            "baseline": self.baseline,
            "threshold": self.threshold,
            "n_canary": self.n_canary,
            "n_baseline": self.n_baseline,
        }


def distribution(
    name: str, stable: Profile, canary: Profile | None, cfg: ModelConfig
) -> CanaryCriterion:
    """The canary's distribution of one column on the stable's spec, by the canary method."""
    detector = get_detector(cfg.canary.method)
    moved = rebin(canary, stable.spec) if canary is not None else None
    n_canary = canary.n if canary is not None else 0
    if moved is None or min(stable.n, n_canary) < cfg.canary.min_events:
        why = "no comparable values" if moved is None and canary is not None else "too few events"
        return CanaryCriterion(
            name, "insufficient_data", None, None, cfg.canary.threshold, n_canary, stable.n, why
        )
    result = compare(
        detector, stable, moved, cfg.canary.threshold, min_n=cfg.canary.min_events,
        alpha=cfg.drift.alpha,
    )  # fmt: skip
    status: CriterionStatus = "fail" if result.status == "drift" else "ok"
    detail = f"{detector.name} {result.value:.4g} (p {result.p_value:.3g})" if result.value else ""
    return CanaryCriterion(
        name, status, result.value, None, cfg.canary.threshold, n_canary, stable.n, detail,
        result.p_value,
    )  # fmt: skip


def latency(q: float, slo: float | None, stable: Evidence, canary: Evidence, cfg: ModelConfig
            ) -> CanaryCriterion:  # fmt: skip
    """Canary latency at quantile `q` against `latency_ratio` × the stable's and the SLO."""
    name = f"latency_p{round(q * 100)}"
    out = _ratio(name, q, canary.serving.latency, stable.serving.latency, slo, cfg, False,
                 "latency")  # fmt: skip
    if out.status == "insufficient_data":
        return out
    # which stage moved: "p95 +18 ms, of which model +16 ms" (monitor.slo.breakdown)
    detail = "; ".join(
        filter(None, (out.detail, latency_shift(stable.serving, canary.serving, q).text()))
    )
    return dataclasses.replace(out, detail=detail)


def measure(m: Measure, stable: Evidence, canary: Evidence, cfg: ModelConfig) -> CanaryCriterion:
    """A measure's tail (`ttft_p95`; `tokens_per_s_p5` from below) against `latency_ratio` ×
    the stable's and the measure's SLO objective of that statistic, if configured."""
    stat = m.canary_stat
    slo = cfg.slo.measures.get(m.objective(stat)) if cfg.slo is not None else None
    a, b = canary.serving.measure(m.name), stable.serving.measure(m.name)
    return _ratio(f"{m.stem}_{stat}", OBJECTIVE_STATS[stat], a, b, slo, cfg, m.higher_is_better,
                  m.name)  # fmt: skip


def _ratio(name: str, q: float, a: LatencySketch, b: LatencySketch, slo: float | None,
           cfg: ModelConfig, higher_is_better: bool, what: str) -> CanaryCriterion:  # fmt: skip
    """Canary quantile `q` of `a` within `latency_ratio` of the stable's `b` and the SLO."""
    value, base = a.quantile(q), b.quantile(q)
    if value is None or base is None or min(a.n, b.n) < cfg.canary.min_events:
        return CanaryCriterion(name, "insufficient_data", value, base, slo, a.n, b.n,
                               f"too few {what} samples")  # fmt: skip
    ratio = cfg.canary.latency_ratio
    if higher_is_better:
        threshold = base / ratio if slo is None else max(base / ratio, slo)
        failed = value < threshold
    else:
        threshold = base * ratio if slo is None else min(base * ratio, slo)
        failed = value > threshold
    detail = f"ratio {value / base:.3g}" if base else ""
    return CanaryCriterion(name, "fail" if failed else "ok", value, base, threshold, a.n, b.n,
                           detail)  # fmt: skip


def error_rate(stable: Evidence, canary: Evidence, cfg: ModelConfig) -> CanaryCriterion:
    """One-sided two-proportion z-test: is the canary's error rate higher than the stable's?"""
    slo = cfg.slo.error_rate if cfg.slo is not None else None
    x1, n1 = canary.serving.errors, canary.serving.requests
    x0, n0 = stable.serving.errors, stable.serving.requests
    if min(n0, n1) < cfg.canary.min_events:
        rate = (x1 / n1) if n1 else None
        return CanaryCriterion("error_rate", "insufficient_data", rate, (x0 / n0) if n0 else None,
                               slo, n1, n0, "too few requests")  # fmt: skip
    p1, p0 = x1 / n1, x0 / n0
    p_value = _two_proportion_p(x1, n1, x0, n0)
    failed = p_value < cfg.canary.alpha or (slo is not None and p1 > slo)
    status: CriterionStatus = "fail" if failed else "ok"
    return CanaryCriterion("error_rate", status, p1, p0, slo, n1, n0, f"p {p_value:.3g}",
                           p_value)  # fmt: skip


def _two_proportion_p(x1: int, n1: int, x0: int, n0: int) -> float:
    """P-value that p1 > p0 (one-sided, pooled z); 1.0 when neither version errs."""
    from scipy.special import ndtr  # = scipy.stats.norm.cdf, without scipy.stats' ~0.8 s import

    pooled = (x1 + x0) / (n1 + n0)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n0))
    if se == 0:
        return 1.0
    return float(ndtr(-(x1 / n1 - x0 / n0) / se))


def outcomes(stable: Evidence, canary: Evidence, cfg: ModelConfig) -> list[CanaryCriterion]:
    """Each outcome metric of the canary against the stable's: fails when the canary is worse
    by more than `metric_tolerance` at one-sided confidence 1 - `canary.alpha` (`_metric`)."""
    by_name = {r.metric: r for r in canary.outcomes}
    out = []
    for base in stable.outcomes:
        mine = by_name.get(base.metric)
        n = mine.n if mine is not None else 0
        value = mine.value if mine is not None else None
        name = f"outcome:{base.metric}"
        if (mine is None or value is None or base.value is None
                or min(n, base.n) < cfg.canary.min_labels):  # fmt: skip
            out.append(CanaryCriterion(name, "insufficient_data", value, base.value, None, n,
                                       base.n, "too few labels"))  # fmt: skip
            continue
        out.append(_metric(name, mine, base, cfg))
    return out


def _metric(name: str, mine: OutcomeResult, base: OutcomeResult, cfg: ModelConfig
            ) -> CanaryCriterion:  # fmt: skip
    """The canary's shortfall (stable - canary, or canary - stable where lower is better) is
    more than the tolerance at one-sided confidence 1 - alpha: the lower end of its interval
    (each version's interval at that level — Wilson for proportions, the stored interval's ends
    rescaled otherwise — combined by `difference`) is above `metric_tolerance`."""
    metric = get_metric(mine.metric)
    tol, alpha = cfg.canary.metric_tolerance, cfg.canary.alpha
    value, b = float(mine.value or 0.0), float(base.value or 0.0)
    better = metric.higher_is_better
    threshold = b - tol if better else b + tol
    if not metric.proportion and None in (mine.ci_low, mine.ci_high, base.ci_low, base.ci_high):
        return CanaryCriterion(name, "insufficient_data", value, b, threshold, mine.n, base.n,
                               "no interval")  # fmt: skip

    def shortfall(z: float) -> float:
        """Lower end of the one-sided interval of the shortfall at normal quantile z."""
        a, s = _interval(metric, mine, z), _interval(metric, base, z)
        return difference(b, s, value, a)[0] if better else difference(value, a, b, s)[0]

    z = NormalDist().inv_cdf(1 - alpha)
    low = shortfall(z)
    p_value = _shortfall_p(shortfall, tol)
    detail = f"worse by {shortfall(0.0):.3g}, at least {low:.3g} ({1 - alpha:.4g}); p {p_value:.3g}"
    return CanaryCriterion(name, "fail" if low > tol else "ok", value, b, threshold, mine.n,
                           base.n, detail, p_value)  # fmt: skip


def _interval(metric: Metric, r: OutcomeResult, z: float) -> tuple[float, float]:
    """`r`'s interval at normal quantile z: Wilson for proportions (from value and support),
    else its stored 95% interval `rescale`d."""
    value = float(r.value or 0.0)
    if metric.proportion:
        return wilson(value * r.n, r.n, z)
    return rescale(value, float(r.ci_low or 0.0), float(r.ci_high or 0.0), z)


def _shortfall_p(shortfall: Callable[[float], float], tol: float) -> float:
    """One-sided p-value that the shortfall exceeds `tol`: the alpha at which the interval's
    lower end is `tol` (bisection on z; the lower end falls as z grows); 1.0 when the point
    shortfall is not above `tol`."""
    lo, hi = 0.0, 40.0
    if shortfall(lo) <= tol:
        return 1.0
    if shortfall(hi) > tol:
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if shortfall(mid) > tol else (lo, mid)
    return 0.5 * math.erfc((lo + hi) / 2 / math.sqrt(2))  # the normal upper tail, exact far out
