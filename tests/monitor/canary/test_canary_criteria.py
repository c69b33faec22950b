"""Canary criteria on hand-made evidence: exact thresholds, minimum evidence, outcome metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from monitor.canary._analysis import criteria_of, verdict_of
from monitor.canary._criteria import error_rate, latency, outcomes
from monitor.canary._evidence import Evidence
from monitor.config import ModelConfig
from monitor.config.serving import CanaryConfig, SloConfig
from monitor.outcomes import OutcomeResult
from monitor.profiles import profile_frame, specs_for
from monitor.profiles._latency import LatencySketch
from monitor.profiles.serving import ServingSummary

CFG = ModelConfig(name="m", canary=CanaryConfig(min_events=100, min_labels=50))


def served(requests: int, errors: int, latency_ms: float) -> ServingSummary:
    return ServingSummary(requests, errors, LatencySketch.of([latency_ms] * requests))


def ev(version: str, serving: ServingSummary, outcomes: tuple[OutcomeResult, ...] = ()) -> Evidence:
    return Evidence(version, {}, serving, outcomes)


def auc(value: float, n: int, half: float | None = 0.01) -> OutcomeResult:
    """A ROC AUC with its 95% interval value ± half (None: no interval)."""
    lo, hi = (None, None) if half is None else (value - half, value + half)
    return OutcomeResult("roc_auc", None, value, lo, hi, None, None, n, "ok")


def test_error_rate_two_proportion_test_and_slo() -> None:
    stable = ev("1", served(10_000, 100, 20))  # 1%
    same = error_rate(stable, ev("2", served(1000, 10, 20)), CFG)
    assert same.status == "ok" and same.canary == 0.01 and same.baseline == 0.01
    worse = error_rate(stable, ev("2", served(1000, 40, 20)), CFG)  # 4%: p << 0.01
    assert worse.status == "fail"
    fewer = error_rate(stable, ev("2", served(1000, 0, 20)), CFG)  # better is never a failure
    assert fewer.status == "ok"
    slo = ModelConfig(name="m", slo=SloConfig(error_rate=0.005), canary=CFG.canary)
    both = error_rate(stable, ev("2", served(1000, 10, 20)), slo)  # same rate, over the SLO
    assert both.status == "fail" and both.threshold == 0.005
    nothing = error_rate(ev("1", served(500, 0, 20)), ev("2", served(500, 0, 20)), CFG)
    assert nothing.status == "ok"  # no errors on either side: nothing to test
    small = error_rate(stable, ev("2", served(99, 0, 20)), CFG)
    assert small.status == "insufficient_data" and small.n_canary == 99


def test_latency_ratio_and_slo_bound_at_the_exact_edge() -> None:
    stable = ev("1", served(1000, 0, 100))
    reported = LatencySketch.of([100.0]).quantile(0.95)
    assert reported is not None
    # the bound is latency_ratio × the stable's reported p95: the same latency passes, +30% fails
    edge = latency(0.95, None, stable, ev("2", served(1000, 0, 100)), CFG)
    assert edge.status == "ok" and edge.threshold == reported * 1.2
    slow = latency(0.95, None, stable, ev("2", served(1000, 0, 130)), CFG)
    assert slow.status == "fail"
    capped = latency(0.99, 90.0, stable, ev("2", served(1000, 0, 100)), CFG)
    assert capped.status == "fail" and capped.threshold == 90.0  # the SLO is tighter
    few = latency(0.95, None, stable, ev("2", served(20, 0, 500)), CFG)
    assert few.status == "insufficient_data" and few.n_canary == 20


def test_outcome_metrics_where_labels_exist() -> None:
    stable = ev("1", ServingSummary(), (auc(0.90, 500),))
    drop = outcomes(stable, ev("2", ServingSummary(), (auc(0.85, 200),)), CFG)
    assert [(c.name, c.status, c.threshold) for c in drop] == [("outcome:roc_auc", "fail", 0.88)]
    assert drop[0].p_value is not None and drop[0].p_value < CFG.canary.alpha
    fine = outcomes(stable, ev("2", ServingSummary(), (auc(0.89, 200),)), CFG)
    assert fine[0].status == "ok" and fine[0].p_value == 1.0
    # the same drop, measured too loosely to be sure it exceeds the tolerance: not a failure
    loose = outcomes(stable, ev("2", ServingSummary(), (auc(0.85, 200, 0.05),)), CFG)
    assert loose[0].status == "ok" and loose[0].threshold == 0.88
    bare = outcomes(stable, ev("2", ServingSummary(), (auc(0.85, 200, None),)), CFG)
    assert bare[0].status == "insufficient_data" and bare[0].detail == "no interval"
    unlabeled = outcomes(stable, ev("2", ServingSummary()), CFG)
    assert unlabeled[0].status == "insufficient_data" and unlabeled[0].n_canary == 0
    assert outcomes(ev("1", ServingSummary()), ev("2", ServingSummary()), CFG) == []


def test_verdict_needs_every_criterion_and_distributions_use_the_stable_specs() -> None:
    rng = np.random.default_rng(0)
    a = pd.DataFrame({"prediction": rng.uniform(0, 1, 2000), "x": rng.normal(0, 1, 2000)})
    b = pd.DataFrame({"prediction": rng.uniform(0, 1, 2000), "x": rng.normal(0, 1, 2000)})
    specs_a = specs_for(["prediction", "x"], a)
    specs_b = specs_for(["prediction", "x"], b)  # the canary learned its own edges
    pa = profile_frame(a, specs_a).profiles
    pb = profile_frame(b, specs_b).profiles
    stable = Evidence("1", {c: pa[("", c)] for c in ("prediction", "x")}, served(2000, 0, 10))
    canary = Evidence("2", {c: pb[("", c)] for c in ("prediction", "x")}, served(2000, 0, 10))
    found = criteria_of(stable, canary, CFG)
    assert [c.name for c in found] == ["prediction", "feature:x", "latency_p95", "latency_p99",
                                       "error_rate"]  # fmt: skip
    assert verdict_of(found) == "pass"
    assert verdict_of(()) == "inconclusive"
