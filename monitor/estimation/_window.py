"""The evaluate job's estimation step: estimated performance and multivariate drift per window.

For each window whose derived-column profiles (`__cbpe_score`, `__pca_error`) or joined labels
changed (change kind "estimate"), and whose baseline stores a calibration or a multivariate model:

- per slice, the CBPE metrics from the window's `__cbpe_score` profile (rows per calibration
  bin: the same counts `modelwatch estimate` makes from raw rows) or, for a multiclass
  calibration, its `__cbpe_score.<k>` and `__cbpe_predicted` profiles (the same sums), with the
  ±3 standard-error band and the baseline's reference-chunk lower threshold (the slice's own
  where the reference had enough rows of it, else the overall one); the realized metric from
  the window's outcome summaries where labels were joined (classification; multiclass over
  the baseline's classes, as the file-based run, ROC-AUC from the summaries' class score
  histograms within the binning error, None when predictions carried no class scores);
- per slice, `reconstruction_error`: the mean of the window's `__pca_error` profile, judged
  overall against the baseline's reference-chunk bounds.

Rows go to `estimated_results` (a re-run replaces them). Each window is an item of the evaluate
job: one that fails is recorded and stays pending, retried after its backoff.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.config import ModelConfig
from monitor.estimation._columns import (
    ERROR_COLUMN,
    LOSS_COLUMNS,
    SCORE_COLUMN,
    loss_sums_of,
    multiclass_specs,
    multiclass_sums_of,
    score_counts,
)
from monitor.estimation._metrics import METRICS, Estimate, estimate_metrics
from monitor.estimation._multiclass import MULTICLASS_METRICS, estimate_sums
from monitor.estimation._realized import (
    MACRO_METRICS,
    realized_macro,
    summary_macro_auc,
    summary_matrix,
)
from monitor.estimation._reconstruction import MultivariateResult, judge_mean
from monitor.estimation._regression import REGRESSION_METRICS, estimate_losses
from monitor.estimation._results import EstimationResult
from monitor.estimation._run import judge
from monitor.estimation._stored import StoredEstimation, StoredMulticlass
from monitor.estimation._stored_choice import stored_calibration
from monitor.estimation._stored_multivariate import StoredMultivariate, stored_multivariate
from monitor.estimation._stored_regression import StoredRegression
from monitor.failures import Isolation, window_item
from monitor.outcomes import MulticlassSummary
from monitor.outcomes import metrics as m
from monitor.outcomes.from_summary import evaluate_summaries
from monitor.outcomes.summary import RegressionSummary
from monitor.profiles import OVERALL, key_of, parse_slice_key, profile_from_bytes
from monitor.results.store import store_estimated_results
from monitor.storage import (
    Change,
    WindowProfile,
    consume_changes,
    pending_changes,
    transaction,
)
from monitor.summaries import window_summaries

CHANGE_KIND = "estimate"
MULTIVARIATE_METRIC = "reconstruction_error"
# Realized from outcome summaries: estimated metric -> the outcome registry's metric
# (specificity, which the registry lacks, comes from the summaries' confusion counts).
REALIZED_METRICS = {m: m for m in ("roc_auc", "accuracy", "precision", "recall", "f1")}
Calibrated = StoredEstimation | StoredMulticlass | StoredRegression


@dataclass(frozen=True)
class StoredModels:
    """What the baseline of a version stores for estimation (both None: nothing)."""

    estimation: Calibrated | None
    multivariate: StoredMultivariate | None

    def columns(self) -> tuple[str, ...]:
        """The derived columns a window of this version is estimated from."""
        if isinstance(self.estimation, StoredMulticlass):
            return (*multiclass_specs(self.estimation.calibration), ERROR_COLUMN)
        if isinstance(self.estimation, StoredRegression):
            return (*LOSS_COLUMNS, ERROR_COLUMN)
        return (SCORE_COLUMN, ERROR_COLUMN)


@dataclass(frozen=True)
class WindowEstimate:
    """One stored row: a metric (or `reconstruction_error`) of one slice in one window."""

    slice_key: str
    metric: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    realized: float | None
    threshold_low: float | None
    threshold_high: float | None
    n: int
    status: str


def estimate_changed(
    engine: Engine,
    cfg: ModelConfig,
    isolation: Isolation,
    pending: Sequence[Change] | None = None,
) -> None:
    """Estimate the model's windows that changed since the last run (the evaluate job's hook);
    `pending`: its pending changes when the caller read them already."""
    models: dict[str, StoredModels | None] = {}
    done: list[Change] = []
    if pending is None:
        pending = pending_changes(engine, cfg.name, CHANGE_KIND)
    for change in pending:
        if change.version not in models:
            models[change.version] = isolation.attempt(
                f"estimation models {cfg.name}/{change.version}",
                functools.partial(load_models, engine, cfg, change.version),
                cfg.name,
                change.version,
            )
        found = models[change.version]
        if found is None:  # unreadable: the windows stay pending, retried after the backoff
            continue
        if found.estimation is None and found.multivariate is None:
            done.append(change)
            continue
        stored = isolation.attempt(
            window_item("estimate", cfg.name, change.version, change.start),
            functools.partial(estimate_window, engine, cfg, change, found),
            cfg.name,
            change.version,
            change.start,
        )
        if stored is not None:  # a failed window stays pending: retried after its backoff
            done.append(change)
    consume_changes(engine, CHANGE_KIND, done)


def load_models(engine: Engine, cfg: ModelConfig, version: str) -> StoredModels:
    """The calibration and multivariate model of the baseline the version is compared with."""
    name = cfg.drift.baseline
    return StoredModels(
        stored_calibration(engine, cfg.name, version, name),
        stored_multivariate(engine, cfg.name, version, name),
    )


def estimate_window(
    engine: Engine, cfg: ModelConfig, change: Change, models: StoredModels
) -> list[WindowEstimate]:
    """Estimate one window from its stored profiles and store the rows; returns them."""
    with transaction(engine) as s:
        profiles = _profiles(s, change, models.columns())
        found = models.estimation
        realized = _realized(s, cfg, change, found) if found is not None else {}
        rows = window_rows(profiles, realized, models, cfg.drift.min_n)
        store_estimated_results(
            s, cfg.name, change.version, (change.start, change.end), [_doc(r) for r in rows]
        )
    return rows


def window_rows(
    profiles: Mapping[tuple[str, str], Any],
    realized: Mapping[tuple[str, str], float | None],
    models: StoredModels,
    min_n: int,
) -> list[WindowEstimate]:
    """The rows of one window: per slice (overall first) the estimates, then the mean error."""
    keys = sorted({key for key, _ in profiles}, key=lambda k: (k != OVERALL, k))
    out: list[WindowEstimate] = []
    for key in keys:
        mine = {c: p for (k, c), p in profiles.items() if k == key}
        estimates = _estimated(models.estimation, mine)
        if models.estimation is not None and estimates is not None:
            out += _judged(models.estimation, estimates, key, realized, min_n)
        error = profiles.get((key, ERROR_COLUMN))
        if models.multivariate is not None and error is not None:
            out.append(_multivariate(models.multivariate, error, key))
    return out


def _estimated(stored: Calibrated | None, profiles: Mapping[str, Any]) -> list[Estimate] | None:
    """The estimates of one slice's derived-column profiles (None: the slice has none)."""
    if isinstance(stored, StoredRegression):
        if not any(c in profiles for c in LOSS_COLUMNS):
            return None
        return estimate_losses(stored.model, loss_sums_of(profiles), REGRESSION_METRICS)
    if isinstance(stored, StoredMulticlass):
        if not any(c in profiles for c in multiclass_specs(stored.calibration)):
            return None
        sums = multiclass_sums_of(stored.calibration, profiles)
        return estimate_sums(
            sums, MULTICLASS_METRICS, stored.calibration.effective_reference_rows(sums.predicted)
        )
    score = profiles.get(SCORE_COLUMN)
    if stored is None or score is None:
        return None
    return estimate_metrics(stored.calibration, score_counts(stored.calibration, score), METRICS)


def _judged(
    stored: Calibrated, estimates: list[Estimate], key: str,
    realized: Mapping[tuple[str, str], float | None], min_n: int,
) -> list[WindowEstimate]:  # fmt: skip
    bounds = stored.bounds(key)  # the slice's own reference thresholds, else the overall ones
    slice_ = parse_slice_key(key)
    results = judge(estimates, lambda m: realized.get((key, m)), slice_, None, bounds, min_n)
    return [_from_estimate(key, r) for r in results]


def _from_estimate(key: str, r: EstimationResult) -> WindowEstimate:
    return WindowEstimate(key, r.metric, r.estimated, r.ci_low, r.ci_high, r.realized,
                          r.threshold_low, r.threshold_high, r.n, r.status)  # fmt: skip


def _multivariate(stored: StoredMultivariate, profile: Any, key: str) -> WindowEstimate:
    bounds = stored.bounds if key == OVERALL else (None, None)
    r: MultivariateResult = judge_mean(None, float(profile.mean), int(profile.n), bounds)
    return WindowEstimate(key, MULTIVARIATE_METRIC, r.value, None, None, None,
                          r.threshold_low, r.threshold_high, r.n, r.status)  # fmt: skip


def _profiles(s: Session, change: Change, columns: Sequence[str]) -> dict[tuple[str, str], Any]:
    """The window's derived-column profiles per (slice key, column)."""
    t = WindowProfile
    stmt = select(t.slice_key, t.column, t.payload).where(
        t.model == change.model, t.version == change.version, t.window_start == change.start,
        t.column.in_(columns),
    )  # fmt: skip
    where = f"model '{change.model}' version '{change.version}' {change.start.isoformat()}"
    return {(k, c): profile_from_bytes(p, f"{where} slice {k or 'overall'}")
            for k, c, p in s.execute(stmt)}  # fmt: skip


def _realized(
    s: Session, cfg: ModelConfig, change: Change, stored: Calibrated
) -> dict[tuple[str, str], float | None]:
    """Realized metrics per (slice key, metric) from the window's joined-label summaries."""
    task = cfg.outcomes.task
    wanted = (
        "multiclass" if isinstance(stored, StoredMulticlass)
        else "regression" if isinstance(stored, StoredRegression) else "classification"
    )  # fmt: skip
    if task != wanted:  # labels of another kind
        return {}
    summaries = window_summaries(s, cfg.name, change.version, change.start, change.end)
    if not summaries or summaries[0][1].n == 0:
        return {}
    if isinstance(stored, StoredRegression):
        return {(key_of(slice_), metric): _realized_loss(summary, metric)
                for slice_, summary in summaries for metric in REGRESSION_METRICS}  # fmt: skip
    if isinstance(stored, StoredMulticlass):
        return _realized_multiclass(stored, summaries)
    ours = {theirs: mine for mine, theirs in REALIZED_METRICS.items()}
    results = evaluate_summaries(summaries, task=task, metrics=list(ours), min_support=1)
    out = {(key_of(r.slice), ours[r.metric]): r.value for r in results}
    out.update({(key_of(slice_), "specificity"): _specificity(summary)
                for slice_, summary in summaries})  # fmt: skip
    return out


def _realized_multiclass(
    stored: StoredMulticlass, summaries: Sequence[tuple[dict[str, str] | None, Any]]
) -> dict[tuple[str, str], float | None]:
    """Accuracy and macro precision, recall, F1, specificity of each slice's joined matrix over
    the baseline's classes (`realized_macro`, as the file-based run), and the macro
    one-vs-rest ROC-AUC of its class score histograms (None without scores)."""
    classes = stored.calibration.classes
    out: dict[tuple[str, str], float | None] = {}
    for slice_, summary in summaries:
        if not isinstance(summary, MulticlassSummary):
            continue
        matrix = summary_matrix(classes, summary.cells)
        out.update({(key_of(slice_), metric): realized_macro(metric, matrix)
                    for metric in MACRO_METRICS})  # fmt: skip
        out[(key_of(slice_), "roc_auc")] = summary_macro_auc(classes, summary)
    return out


def _realized_loss(summary: Any, metric: str) -> float | None:
    """MAE, MSE or RMSE of a regression summary's joined pairs, from its exact sums (None:
    none, or not a regression summary)."""
    if not isinstance(summary, RegressionSummary) or summary.n == 0:
        return None
    mse = float(summary.sums["sq"]) / summary.n
    values = {"mae": float(summary.sums["abs"]) / summary.n, "mse": mse, "rmse": math.sqrt(mse)}
    return values[metric]


def _specificity(summary: Any) -> float | None:
    """Realized specificity from a classification summary's confusion counts at its threshold
    (true negatives over actual negatives; 0 when it has no negatives, as `realized`)."""
    if summary.n == 0:
        return None
    _, fp, tn, _ = (int(x) for x in summary.confusion)
    return m.specificity_of(tn, fp)


def _doc(r: WindowEstimate) -> dict[str, Any]:
    return {name: getattr(r, name) for name in _FIELDS}


_FIELDS: Sequence[str] = tuple(WindowEstimate.__dataclass_fields__)
