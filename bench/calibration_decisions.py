"""Calibration of the decisions other than drift: outcome degradation, CBPE estimate bands,
the evidence rule, canary criteria.

`PYTHONPATH=. python bench/calibration_decisions.py [--reps 200] [--decisions outcomes,bands]
[--markdown]`

The same machinery as `bench/calibration.py` (seeded simulations, `seed_of`; rates with their
Wilson 95% interval, `wilson`; a row flagged when its one-sided 99.9% Clopper-Pearson bound
lies above the nominal rate, `exceeds`), applied to each decision under its null:

* **outcomes** (`monitor.outcomes.evaluate_outcomes`): a calibrated binary classifier (scores
  Beta(2, 2), labels Bernoulli(score)) and a regressor (`regressor`); the baseline is each
  metric's population value (1M rows), tolerance 0. A result is `degraded` when its whole
  95% interval lies beyond the baseline: nominal at most 0.025 per result (the one-sided tail
  of a two-sided 95% interval).
  Whole windows and 4 equal random slices, each result at 95% (`per_result`); "any result"
  counts evaluations with any degraded result under both corrections, decided on the same
  windows: `per_result` (nothing promised) and `family` (Holm across the evaluation's results,
  nominal 0.025 per evaluation).
  Power (`outcome_power_rows`, none promised): whole windows of 100 and 1,000 rows of a
  degraded model (`OUTCOME_SHIFTS`) against the healthy one's population values, each metric
  under both corrections (the window's metrics one family).
* **bands** (`monitor.estimation.estimate_binary`): CBPE fitted on a fresh labelled 5,000-row
  reference per rep, chunks of the same distribution with labels; a miss is a realized metric
  outside the band (±3 SE widened by sqrt(1 + chunk / reference), under 1,000 rows the realized
  metric's exact central interval widened alike; nominal 0.0027, the normal two-sided tail at
  3 SE); `degraded` (the estimate under the reference chunks' mean minus
  a prediction interval's `band_k` sd) nominal 0.00135.
  Power (`band_power_rows`, none promised): `degraded` on chunks whose scores moved to
  Beta(4, 4) (100- and 1,000-row chunks).
* **mc_bands** (`monitor.estimation.estimate_multiclass`): the same for multiclass CBPE's
  macro metrics, a 3-class model (`multiclass_classifier`: calibrated, or overconfident scores
  that the per-class maps, conditioned on the predicted class, correct); the widening's
  reference rows are those the maps learnt from (`effective_reference_rows`).
* **dle_bands** (`monitor.estimation.estimate_regression`): the same for DLE's MAE and RMSE
  bands (RMSE's under 1,000 rows: a gamma interval of the MSE, rooted), loss models fitted on a
  fresh labelled 5,000-row reference of `regression_rows`.
* **multivariate** (`monitor.estimation.multivariate_drift`): clean chunks of `factor_frame`
  (false alarms, nominal 0.0027) and chunks with x1 decorrelated in half the rows (power).
* **evidence** (`homogeneity_p`, the evidence rule's test): 2 x k tables of two multinomial
  samples of one distribution; the rate of p < 1e-6 (the rule), and of p < 1e-3 and p < 1e-2
  (the tail levels a simulation can count).
* **canary** (`monitor.canary` criteria, imported, not changed): stable and canary versions
  with the same error rate (the error-rate test at `canary.alpha` 0.01), the same accuracy
  and a canary exactly `metric_tolerance` (0.02) worse (the outcome criterion: the canary worse
  by more than the tolerance at one-sided confidence 1 - `canary.alpha`; nominal 0.01 in
  both), and its power (reported, no rate promised) against canaries 0.05 and 0.10 worse.
* **canary_metrics**: the outcome criterion on metrics that are not proportions, from
  summaries: MAE and RMSE with the canary exactly the tolerance worse, F1 / ROC AUC / log loss
  of two equal classifiers (nominal `canary.alpha`).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd

from bench.calibration import exceeds, seed_of, wilson
from monitor.estimation import EstimateOptions, fit_calibration
from monitor.estimation._binary import BinaryData, estimate_binary
from monitor.outcomes._family import CORRECTIONS

POPULATION = 1_000_000
REFERENCE_ROWS = 5_000
SLICES = 4


@dataclass(frozen=True)
class Row:
    """One decision under its null: events in trials against a nominal rate."""

    decision: str
    case: str
    events: int
    trials: int
    nominal: float | None  # None: no rate is promised (reported only)
    power: bool = False  # the rate is a power (a true difference found), not a false alarm

    @property
    def failure(self) -> str | None:
        """What a test reports when the row exceeds its nominal rate (None: it does not)."""
        if not self.flagged:
            return None
        return f"{self.decision}, {self.case}: {self.events}/{self.trials} > {self.nominal:g}"

    @property
    def flagged(self) -> bool:
        return self.nominal is not None and exceeds(self.events, self.trials, self.nominal)

    def cells(self) -> list[str]:
        lo, hi = wilson(self.events, self.trials)
        rate = f"{self.events / self.trials:.4f} [{lo:.4f}, {hi:.4f}]" if self.trials else "—"
        nominal = "not promised" if self.nominal is None else f"≤ {self.nominal:g}"
        nominal = "power" if self.power else nominal
        verdict = "EXCEEDS" if self.flagged else "ok" if self.nominal is not None else "—"
        return [self.decision, self.case, f"{self.trials:,}", rate, nominal, verdict]


HEADER = ["decision", "case", "trials", "rate [Wilson 95%]", "nominal", "verdict"]


def classifier(
    rng: np.random.Generator, n: int, shift: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """A calibrated binary classifier's (labels, scores): scores Beta(2, 2), labels
    Bernoulli(score). `shift` degrades it: labels Bernoulli(0.5 + (1 - shift)(score - 0.5)),
    the scores' signal shrunk (accuracy 0.6875 - 0.1875 shift)."""
    s = rng.beta(2.0, 2.0, n)
    return (rng.random(n) < 0.5 + (1.0 - shift) * (s - 0.5)).astype(np.float64), s


def regressor(
    rng: np.random.Generator, n: int, shift: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """A regressor's (targets, predictions): predictions N(10, 2), targets = prediction + N(0, 1)
    (targets far from 0, so MAPE is well defined). `shift` degrades it: the error's sd
    1 + shift (MAE and RMSE up by that factor)."""
    pred = rng.normal(10.0, 2.0, n)
    return pred + rng.normal(0.0, 1.0 + shift, n), pred


def model_of(metrics: Sequence[str]) -> tuple[Callable[..., tuple[np.ndarray, np.ndarray]], str]:
    """The simulated model and task for `metrics` (regression metrics: `regressor`)."""
    from monitor.outcomes import get_metric

    if all(get_metric(m).task == "regression" for m in metrics):
        return regressor, "regression"
    return classifier, "classification"


# The calibrated classifier's population values, exact (scores Beta(2, 2), labels
# Bernoulli(score), threshold 0.5): accuracy, precision, recall, F1 11/16; ROC-AUC 53/70; log
# loss 7/12 (the scores' mean entropy). Estimated on 1M rows they are off by up to ~1e-3, enough
# to move the large windows' rates: precision's 0.68788 put the exact Wilson rate of 4 slices of
# 10,000 rows at 0.0274 (0.0256 at 11/16).
EXACT = {"accuracy": 11 / 16, "precision": 11 / 16, "recall": 11 / 16, "f1": 11 / 16,
         "roc_auc": 53 / 70, "log_loss": 7 / 12}  # fmt: skip


@cache
def population_values(metrics: tuple[str, ...]) -> dict[str, float]:
    """Each metric's value in its model's population: the baseline under the null (`EXACT` for
    the classifier's, where known; the others on 1M rows)."""
    from monitor.outcomes import get_metric

    model, task = model_of(metrics)
    y, s = model(np.random.default_rng(seed_of("population")), POPULATION)
    known = EXACT if task == "classification" else {}
    return {m: known[m] if m in known else float(get_metric(m).fn(y, s, 0.5)) for m in metrics}


def outcome_rows(
    size: int, reps: int, metrics: Sequence[str], sliced: bool, label: str = "outcomes"
) -> list[Row]:
    """Degraded rates per metric (overall, or per slice result; each result at 95%) and per
    evaluation ("any result") under both corrections, decided on the same windows (`label`
    seeds them: another label, other windows)."""
    from monitor.outcomes import evaluate_outcomes
    from monitor.outcomes._family import decide

    base = population_values(tuple(metrics))
    model, task = model_of(metrics)
    rng = np.random.default_rng(seed_of(label, size, sliced, task))
    per = dict.fromkeys(metrics, 0)
    trials = dict.fromkeys(metrics, 0)
    anywhere = dict.fromkeys(CORRECTIONS, 0)
    for _ in range(reps):
        y, s = model(rng, size)
        slices = {"g": rng.integers(0, SLICES, size).astype(str)} if sliced else None
        results = evaluate_outcomes(y, s, task, slices, metrics, baseline=base,
                                    correction="per_result")  # fmt: skip
        judged = [r for r in results if (r.slice is not None) == sliced]
        for r in judged:
            if r.status != "insufficient_data":
                trials[r.metric] += 1
                per[r.metric] += r.status == "degraded"
        for c in CORRECTIONS:
            anywhere[c] += any(r.status == "degraded" for r in decide(results, c))
    where = f"{SLICES} slices of " if sliced else ""
    case = f"{task}, {where}{size:,} rows"
    out = [Row(f"outcome degraded: {m}", case, per[m], trials[m], 0.025) for m in metrics]
    out.append(Row("outcome degraded: any result, per_result", case, anywhere["per_result"],
                   reps, None))  # fmt: skip
    out.append(Row("outcome degraded: any result, family", case, anywhere["family"], reps, 0.025))
    return out


# The documented degradations the power rows simulate (`classifier` and `regressor`'s `shift`)
OUTCOME_SHIFTS = {"classification": 0.2, "regression": 0.1}
SHIFT_TEXT = {
    "classification": "labels' signal shrunk 20% (accuracy 0.6875 -> 0.65)",
    "regression": "error sd +10% (MAE 0.798 -> 0.878, RMSE 1.00 -> 1.10)",
}


def outcome_power_rows(size: int, reps: int, metrics: Sequence[str]) -> list[Row]:
    """The share of whole windows of a degraded model (`OUTCOME_SHIFTS`) whose result is
    `degraded` against the healthy model's population values, under each correction (the
    window's metrics one family): the power (none promised)."""
    from monitor.outcomes import evaluate_outcomes
    from monitor.outcomes._family import decide

    base = population_values(tuple(metrics))
    model, task = model_of(metrics)
    shift = OUTCOME_SHIFTS[task]
    rng = np.random.default_rng(seed_of("outcome power", size, task))
    found = {(c, m): 0 for c in CORRECTIONS for m in metrics}
    trials = dict.fromkeys(metrics, 0)
    for _ in range(reps):
        y, s = model(rng, size, shift)
        results = evaluate_outcomes(y, s, task, None, metrics, baseline=base,
                                    correction="per_result")  # fmt: skip
        for r in results:
            trials[r.metric] += r.status != "insufficient_data"
        for c in CORRECTIONS:
            for r in decide(results, c):
                found[c, r.metric] += r.status == "degraded"
    case = f"{task}, {size:,} rows, {SHIFT_TEXT[task]}"
    return [Row(f"outcome degraded (power, {c}): {m}", case, found[c, m], trials[m], None, True)
            for c in CORRECTIONS for m in metrics]  # fmt: skip


BAND_METRICS = ("accuracy", "precision", "recall", "f1", "specificity", "roc_auc")


def band_rows(chunk: int, chunks: int, reps: int) -> list[Row]:
    """Band misses and `degraded` estimates per metric over same-distribution chunks."""
    rng = np.random.default_rng(seed_of("bands", chunk))
    miss = dict.fromkeys(BAND_METRICS, 0)
    low = dict.fromkeys(BAND_METRICS, 0)
    trials = dict.fromkeys(BAND_METRICS, 0)
    how = EstimateOptions(chunk_size=chunk, metrics=BAND_METRICS)
    for _ in range(reps):
        ry, rs = classifier(rng, REFERENCE_ROWS)
        cy, cs = classifier(rng, chunk * chunks)
        ref = BinaryData(rs, (rs >= 0.5).astype(np.float64), ry)
        cur = BinaryData(cs, (cs >= 0.5).astype(np.float64), cy)
        for r in estimate_binary(fit_calibration(rs, ry), ref, cur, how):
            if r.realized is None or r.ci_low is None or r.ci_high is None:
                continue
            trials[r.metric] += 1
            miss[r.metric] += not (r.ci_low <= r.realized <= r.ci_high)
            low[r.metric] += r.status == "degraded"
    case = f"chunks of {chunk:,} rows, reference {REFERENCE_ROWS:,}"
    return [
        *(Row(f"CBPE band misses realized: {m}", case, miss[m], trials[m], 0.0027)
          for m in BAND_METRICS),
        *(Row(f"CBPE estimate degraded: {m}", case, low[m], trials[m], 0.00135)
          for m in BAND_METRICS),
    ]  # fmt: skip


CLASSES = ("a", "b", "c")
SHARPENED = 2.0  # the scores' exponent in the miscalibrated multiclass case


def multiclass_classifier(
    rng: np.random.Generator, n: int, sharpen: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """A 3-class classifier's (labels as class indexes, scores per class): probabilities
    Dirichlet(2, 2, 2), labels Categorical(probabilities); scores the probabilities to the
    power `sharpen`, renormalised (1: calibrated, as `classifier`; 2: overconfident, which the
    per-class maps, conditioned on the predicted class, must correct)."""
    p = rng.dirichlet(np.full(len(CLASSES), 2.0), n)
    labels = (rng.random((n, 1)) > p.cumsum(axis=1)).sum(axis=1)
    scores = p**sharpen
    return labels.astype(np.intp), scores / scores.sum(axis=1, keepdims=True)


def multiclass_band_rows(
    chunk: int, chunks: int, reps: int, sharpen: float = 1.0, reference: int = REFERENCE_ROWS
) -> list[Row]:
    """Multiclass CBPE (one-vs-rest, macro metrics) band misses and `degraded` estimates per
    metric over same-distribution labelled chunks, maps fitted on a fresh labelled reference
    (`reference` rows) per rep."""
    from monitor.estimation import estimate_multiclass, fit_multiclass
    from monitor.estimation._multiclass import MULTICLASS_METRICS, MulticlassData

    rng = np.random.default_rng(seed_of("multiclass bands", chunk, sharpen, reference))
    miss = dict.fromkeys(MULTICLASS_METRICS, 0)
    low = dict.fromkeys(MULTICLASS_METRICS, 0)
    trials = dict.fromkeys(MULTICLASS_METRICS, 0)
    how = EstimateOptions(chunk_size=chunk, metrics=MULTICLASS_METRICS)
    for _ in range(reps):
        ry, rs = multiclass_classifier(rng, reference, sharpen)
        cy, cs = multiclass_classifier(rng, chunk * chunks, sharpen)
        ref = MulticlassData(rs, rs.argmax(axis=1), ry)
        cur = MulticlassData(cs, cs.argmax(axis=1), cy)
        for r in estimate_multiclass(fit_multiclass(CLASSES, rs, ry), ref, cur, how):
            if r.realized is None or r.ci_low is None or r.ci_high is None:
                continue
            trials[r.metric] += 1
            miss[r.metric] += not (r.ci_low <= r.realized <= r.ci_high)
            low[r.metric] += r.status == "degraded"
    model = "calibrated" if sharpen == 1.0 else f"scores sharpened ^{sharpen:g}"
    case = f"3 classes, {model}, chunks of {chunk:,} rows, reference {reference:,}"
    return [
        *(Row(f"multiclass CBPE band misses realized: macro {m}", case, miss[m], trials[m],
              0.0027) for m in MULTICLASS_METRICS),
        *(Row(f"multiclass CBPE estimate degraded: macro {m}", case, low[m], trials[m],
              0.00135) for m in MULTICLASS_METRICS),
    ]  # fmt: skip


BAND_SHIFT = 4.0  # the current scores' Beta(a, a) in the power rows (reference: Beta(2, 2))


def band_power_rows(chunk: int, chunks: int, reps: int) -> list[Row]:
    """CBPE `degraded` under a documented covariate shift: the reference as in `band_rows`,
    current scores Beta(4, 4) (still calibrated, nearer 0.5: accuracy 0.6875 -> 0.637); the
    share of chunks whose estimate is `degraded` (the power, none promised)."""
    rng = np.random.default_rng(seed_of("band power", chunk))
    found = dict.fromkeys(BAND_METRICS, 0)
    trials = dict.fromkeys(BAND_METRICS, 0)
    how = EstimateOptions(chunk_size=chunk, metrics=BAND_METRICS)
    for _ in range(reps):
        ry, rs = classifier(rng, REFERENCE_ROWS)
        cs = rng.beta(BAND_SHIFT, BAND_SHIFT, chunk * chunks)
        ref = BinaryData(rs, (rs >= 0.5).astype(np.float64), ry)
        cur = BinaryData(cs, (cs >= 0.5).astype(np.float64))
        for r in estimate_binary(fit_calibration(rs, ry), ref, cur, how):
            if r.status in ("ok", "degraded"):
                trials[r.metric] += 1
                found[r.metric] += r.status == "degraded"
    case = f"chunks of {chunk:,} rows, scores Beta(2, 2) -> Beta(4, 4)"
    return [Row(f"CBPE estimate degraded (power): {m}", case, found[m], trials[m], None)
            for m in BAND_METRICS]  # fmt: skip


def regression_rows(
    rng: np.random.Generator, n: int
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """A regressor whose error depends on its features, as DLE assumes: (columns, prediction,
    targets); x1, x2 ~ N(0, 1), kind a/b; prediction 10 + 2 x1 + x2; error N(0, 0.5 + 0.5 |x1|
    + 0.5 [kind = b])."""
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    kind = np.where(rng.random(n) < 0.5, "a", "b").astype(object)
    prediction = 10.0 + 2.0 * x1 + x2
    sd = 0.5 + 0.5 * np.abs(x1) + 0.5 * (kind == "b")
    return {"x1": x1, "x2": x2, "kind": kind}, prediction, prediction + rng.normal(size=n) * sd


DLE_METRICS = ("mae", "rmse")


def dle_band_rows(chunk: int, chunks: int, reps: int) -> list[Row]:
    """DLE band misses of the realized MAE and RMSE over same-distribution labelled chunks,
    with the loss models fitted on a fresh 5,000-row labelled reference per rep."""
    from monitor.estimation import RegressionData, estimate_regression, fit_regression

    rng = np.random.default_rng(seed_of("dle bands", chunk))
    miss = dict.fromkeys(DLE_METRICS, 0)
    trials = dict.fromkeys(DLE_METRICS, 0)
    how = EstimateOptions(chunk_size=chunk, metrics=DLE_METRICS)
    for _ in range(reps):
        ref_cols, ref_pred, ref_y = regression_rows(rng, REFERENCE_ROWS)
        cur_cols, cur_pred, cur_y = regression_rows(rng, chunk * chunks)
        model = fit_regression(ref_cols, ["kind"], ref_pred, ref_y)
        reference = RegressionData(ref_cols, ref_pred, ref_y)
        current = RegressionData(cur_cols, cur_pred, cur_y)
        for r in estimate_regression(model, reference, current, how):
            if r.realized is None or r.ci_low is None or r.ci_high is None:
                continue
            trials[r.metric] += 1
            miss[r.metric] += not (r.ci_low <= r.realized <= r.ci_high)
    case = f"chunks of {chunk:,} rows, reference {REFERENCE_ROWS:,}"
    return [
        *(Row(f"DLE band misses realized: {m}", case, miss[m], trials[m], 0.0027)
          for m in DLE_METRICS),
    ]  # fmt: skip


def factor_frame(rng: np.random.Generator, n: int, broken: float = 0.0) -> pd.DataFrame:
    """Six correlated features (two latent factors plus noise) and a categorical one from the
    first factor; `broken`: the share of rows whose x1 is replaced by another row's (each
    column keeps its distribution, the correlation weakens)."""

    factors = rng.normal(size=(n, 2))
    loadings = np.array([[1.0, 0.8, 0.6, 0.0, 0.0, 0.3], [0.0, 0.3, 0.5, 1.0, 0.8, 0.4]])
    x = factors @ loadings + rng.normal(scale=0.6, size=(n, 6))
    swap = rng.random(n) < broken
    x[swap, 1] = rng.permutation(x[:, 1])[swap]
    frame = pd.DataFrame(x, columns=[f"x{i}" for i in range(6)])
    frame["c"] = np.select([factors[:, 0] > 0.5, factors[:, 0] < -0.5], ["a", "b"], "c")
    return frame


MULTIVARIATE_SHIFT = 0.5  # x1 taken from another row in half the rows


def multivariate_rows(chunk: int, chunks: int, reps: int) -> list[Row]:
    """Multivariate drift (PCA reconstruction error) on same-distribution chunks (false
    alarms, nominal: the normal two-sided tail at 3 sd, 0.0027) and on chunks whose x1 is
    decorrelated in half the rows (power); the reference holds `chunks` chunks."""
    from monitor.estimation import fit_reconstruction, multivariate_drift

    rng = np.random.default_rng(seed_of("multivariate", chunk, chunks))
    alarms = found = trials = 0
    for _ in range(reps):
        reference = factor_frame(rng, chunk * chunks)
        model = fit_reconstruction(reference, list(reference.columns))
        null = multivariate_drift(model, reference, factor_frame(rng, chunk * 10), chunk)
        shifted = factor_frame(rng, chunk * 10, MULTIVARIATE_SHIFT)
        moved = multivariate_drift(model, reference, shifted, chunk)
        trials += len(null)
        alarms += sum(r.status == "drift" for r in null)
        found += sum(r.status == "drift" for r in moved)
    case = f"chunks of {chunk:,} rows, {chunks} reference chunks"
    return [
        Row("multivariate drift on clean chunks", case, alarms, trials, 0.0027),
        Row(f"multivariate drift, x1 decorrelated in {MULTIVARIATE_SHIFT:.0%} of rows (power)",
            case, found, trials, None),
    ]  # fmt: skip


def evidence_rows(k: int, n_ref: int, n_cur: int, tests: int) -> list[Row]:
    """Rates of p under 1e-6, 1e-3 and 1e-2 of the evidence rule's test on clean tables."""
    from monitor.detectors._evidence import DEFAULT_EVIDENCE_ALPHA, homogeneity_p

    rng = np.random.default_rng(seed_of("evidence", k, n_ref, n_cur))
    weights = 1.0 / np.arange(1, k + 1)  # Zipf: sparse tail cells, pooled by the rule
    weights /= weights.sum()
    levels = (DEFAULT_EVIDENCE_ALPHA, 1e-3, 1e-2)
    hits = dict.fromkeys(levels, 0)
    done = 0
    for _ in range(tests):
        p = homogeneity_p(rng.multinomial(n_ref, weights), rng.multinomial(n_cur, weights))
        if p is None:
            continue
        done += 1
        for level in levels:
            hits[level] += p < level
    case = f"{k} Zipf values, {n_ref:,}/{n_cur:,} rows"
    return [Row(f"evidence rule: p < {lv:g}", case, hits[lv], done, lv) for lv in levels]


def canary_rows(n: int, reps: int, worse: Sequence[float] = (0.0, 0.02)) -> list[Row]:
    """The canary criteria on stable accuracy 0.8 against a canary `worse` below it (0: two
    versions that do not differ; the error rates are always the same): false failures where
    the shortfall is at most the tolerance (nominal `canary.alpha`), power beyond it."""
    from monitor.canary._criteria import error_rate, outcomes
    from monitor.canary._evidence import Evidence
    from monitor.config import ModelConfig
    from monitor.config.serving import CanaryConfig
    from monitor.outcomes import OutcomeResult
    from monitor.profiles.serving import ServingSummary

    cfg = ModelConfig(name="m", canary=CanaryConfig(min_events=100, min_labels=100))
    alpha, tol = cfg.canary.alpha, cfg.canary.metric_tolerance
    rng = np.random.default_rng(seed_of("canary", n))

    def version(name: str, accuracy: float) -> Evidence:
        served = ServingSummary(n, int(rng.binomial(n, 0.01)))
        acc = OutcomeResult("accuracy", None, accuracy, None, None, None, None, n, "ok")
        return Evidence(name, {}, served, (acc,))

    case = f"{n:,} requests and labels per version"
    rows = []
    for shortfall in worse:
        errors = failed = 0
        for _ in range(reps):
            stable = version("1", rng.binomial(n, 0.8) / n)
            canary = version("2", rng.binomial(n, 0.8 - shortfall) / n)
            errors += error_rate(stable, canary, cfg).status == "fail"
            failed += outcomes(stable, canary, cfg)[0].status == "fail"
        if shortfall == 0:
            rows.append(Row(f"canary error_rate fails (alpha {alpha:g})", f"{case}, same rates",
                            errors, reps, alpha))  # fmt: skip
        within = shortfall <= tol
        what = "fails" if within else "catches"
        rows.append(Row(
            f"canary outcome:accuracy {what} (tolerance {tol:g}, alpha {alpha:g})",
            f"{case}, " + (f"canary accuracy {shortfall:g} below the stable's 0.8" if shortfall
                           else "same accuracy 0.8"),
            failed, reps, alpha if within else None, power=not within,
        ))  # fmt: skip
    return rows


def canary_metric_rows(n: int, reps: int) -> list[Row]:
    """The outcome criterion on metrics other than proportions, from summaries as the canary
    reads them: a regressor's MAE and RMSE with the canary's errors scaled so each is exactly
    `metric_tolerance` worse (normal intervals from moments), and a classifier's F1, ROC AUC
    and log loss on two versions that do not differ (bootstrapped / moment intervals)."""
    from monitor.canary._criteria import outcomes
    from monitor.canary._evidence import Evidence
    from monitor.config import ModelConfig
    from monitor.config.serving import CanaryConfig
    from monitor.outcomes.from_summary import evaluate_summaries
    from monitor.outcomes.summary import Task, add_pairs, new_summary

    cfg = ModelConfig(name="m", canary=CanaryConfig(min_labels=100))
    alpha, tol = cfg.canary.alpha, cfg.canary.metric_tolerance
    rng = np.random.default_rng(seed_of("canary_metrics", n))

    def version(task: Task, y: np.ndarray, s: np.ndarray, metrics: tuple[str, ...]) -> Evidence:
        summary = new_summary(task, 0.5)
        add_pairs(summary, y, s)
        return Evidence("v", outcomes=tuple(evaluate_summaries([(None, summary)], task, metrics)))

    # errors N(0, 1): MAE sqrt(2/pi), RMSE 1; scaled by k each is `tol` higher
    scale = {"mae": 1 + tol / math.sqrt(2 / math.pi), "rmse": 1 + tol}
    cases: list[tuple[Task, tuple[str, ...], str]] = [
        ("regression", tuple(scale), f"canary errors scaled: {tol:g} worse"),
        ("classification", ("f1", "roc_auc", "log_loss"), "same model"),
    ]
    rows = []
    for task, metrics, what in cases:
        failed = dict.fromkeys(metrics, 0)
        for _ in range(reps):
            if task == "regression":
                y, pred = regressor(rng, n)
                stable = version(task, y, pred, metrics)
                y1, pred1 = regressor(rng, n)
                for m in metrics:
                    canary = version(task, pred1 + scale[m] * (y1 - pred1), pred1, (m,))
                    (c,) = outcomes(Evidence("s", outcomes=tuple(
                        r for r in stable.outcomes if r.metric == m)), canary, cfg)  # fmt: skip
                    failed[m] += c.status == "fail"
            else:
                stable = version(task, *classifier(rng, n), metrics)
                canary = version(task, *classifier(rng, n), metrics)
                for c in outcomes(stable, canary, cfg):
                    failed[c.name.removeprefix("outcome:")] += c.status == "fail"
        rows += [
            Row(f"canary outcome:{m} fails (tolerance {tol:g}, alpha {alpha:g})",
                f"{n:,} labels per version, {what}", failed[m], reps, alpha)
            for m in metrics
        ]  # fmt: skip
    return rows


def gate_rows(n: int, limit: float, reps: int) -> list[Row]:
    """The gate's flip-rate criterion on an `n`-row slice (under `min_slice_rows`, 200):
    false fails of a candidate whose true flip rate is the limit (the breach rule, nominal
    (1 - confidence) / 2 = 0.025), and passes of one at 3x the limit (the exact-agreement
    rule: no rate promised)."""
    from guards._criteria import Slice, _flip_rate
    from guards.policy import GatePolicy

    policy = GatePolicy(name="calibration")
    sl = Slice({"s": "x"}, np.arange(n))
    rng = np.random.default_rng(seed_of("gate", n, limit))
    fails = passes = 0
    for _ in range(reps):
        fails += _flip_rate("f", rng.random(n) < limit, limit, policy, sl).status == "fail"
        passes += _flip_rate("f", rng.random(n) < 3 * limit, limit, policy, sl).status == "pass"
    case = f"{n} rows, limit {limit:g}"
    return [
        Row("gate flip rate fails at a true rate = limit", case, fails, reps, 0.025),
        Row("gate flip rate passes at a true rate = 3x limit", case, passes, reps, None),
    ]


CLASSIFICATION = ("accuracy", "precision", "recall", "f1", "roc_auc", "log_loss", "ece")
REGRESSION = ("mae", "rmse", "mape")
# (chunk, reference rows, reps divisor): the last a large reference, where the widening is
# small and the one-vs-rest estimate's own bias (overconfident scores) shows
MC_BAND_CASES = ((100, REFERENCE_ROWS, 4), (1_000, REFERENCE_ROWS, 4),
                 (10_000, REFERENCE_ROWS, 4), (10_000, 100_000, 20))  # fmt: skip
POWER_SIZES = (100, 1_000)  # whole windows of a degraded model: the power rows
OUTCOME_CASES = ((100, False), (1_000, False), (10_000, False), (1_000, True), (10_000, True))
DECISIONS: dict[str, Callable[[int], list[Row]]] = {
    "outcomes": lambda reps: [
        row
        for size, sliced in OUTCOME_CASES
        for metrics in (CLASSIFICATION, REGRESSION)
        for row in (
            outcome_rows(size, reps, metrics, sliced)
            + (
                outcome_power_rows(size, reps, metrics)
                if size in POWER_SIZES and not sliced
                else []
            )
        )
    ],
    "bands": lambda reps: [
        row
        for chunk in (100, 1_000, 10_000)
        for row in (
            band_rows(chunk, 10, max(reps // 4, 1))
            + (band_power_rows(chunk, 10, max(reps // 4, 1)) if chunk in POWER_SIZES else [])
        )
    ],
    "dle_bands": lambda reps: [
        row
        for chunk in (100, 1_000, 10_000)
        for row in dle_band_rows(chunk, 10, max(reps // 10, 1))
    ],
    "mc_bands": lambda reps: [
        row
        for sharpen in (1.0, SHARPENED)
        for chunk, reference, scale in MC_BAND_CASES
        for row in multiclass_band_rows(chunk, 10, max(reps // scale, 1), sharpen, reference)
    ],
    "multivariate": lambda reps: [
        row
        for chunk, chunks in ((100, 10), (1_000, 10), (100, 50))
        for row in multivariate_rows(chunk, chunks, max(reps // 2, 1))
    ],
    "evidence": lambda reps: [
        row
        for k, n_ref, n_cur in ((2, 10_000, 1_000), (10, 10_000, 1_000), (100, 100_000, 10_000))
        for row in evidence_rows(k, n_ref, n_cur, reps * 250)
    ],
    "gate": lambda reps: [
        row
        for limit in (0.005, 0.03)
        for n in (30, 100, 199)
        for row in gate_rows(n, limit, reps * 10)
    ],
    "canary": lambda reps: [
        row
        for n in (100, 1_000, 10_000)
        for row in canary_rows(n, reps * 5, (0.0, 0.02, 0.05, 0.10))
    ],
    "canary_metrics": lambda reps: [
        row for n in (100, 1_000, 10_000) for row in canary_metric_rows(n, int(reps * 10 / n**0.5))
    ],
}


def failures(rows: Sequence[Row]) -> list[str]:
    """The rows exceeding their nominal rate, as a test reports them."""
    return [r.failure for r in rows if r.failure is not None]


def markdown(rows: Sequence[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    return "\n".join(lines + ["| " + " | ".join(r.cells()) + " |" for r in rows])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200, help="simulations per case (scaled)")
    parser.add_argument("--decisions", help=f"comma-separated (default all: {','.join(DECISIONS)})")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    wanted = args.decisions.split(",") if args.decisions else list(DECISIONS)
    unknown = [d for d in wanted if d not in DECISIONS]
    if unknown:
        print(f"unknown decision {unknown[0]!r}; valid: {', '.join(DECISIONS)}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    rows = [row for d in wanted for row in DECISIONS[d](args.reps)]
    if args.markdown:
        print(markdown(rows))
    else:
        for r in rows:
            print("  ".join(r.cells()))
    bad = sum(r.flagged for r in rows)
    print(f"\n{len(rows)} rows, {bad} exceeding nominal; {time.perf_counter() - start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
