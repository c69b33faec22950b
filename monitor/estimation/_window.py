"""The evaluate job's estimation step: estimated performance and multivariate drift per window.

For each window whose derived-column profiles (`__cbpe_score`, `__pca_error`) or joined labels
changed (change kind "estimate"), and whose baseline stores a calibration or a multivariate model:

- per slice, the CBPE metrics from the window's `__cbpe_score` profile (rows per calibration
  bin: the same counts `modelwatch estimate` makes from raw rows), with the ±3 standard-error
  band and, overall, the baseline's reference-chunk lower threshold; the realized metric from the
  window's outcome summaries where labels were joined (classification models);
- per slice, `reconstruction_error`: the mean of the window's `__pca_error` profile, judged
  overall against the baseline's reference-chunk bounds.

Rows go to `estimated_results` (a re-run replaces them). Each window is an item of the evaluate
job: one that fails is recorded and stays pending, retried after its backoff.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.config import ModelConfig
from monitor.estimation._columns import ERROR_COLUMN, SCORE_COLUMN, score_counts
from monitor.estimation._metrics import METRICS, estimate_metrics
from monitor.estimation._reconstruction import MultivariateResult, judge_mean
from monitor.estimation._results import EstimationResult
from monitor.estimation._run import judge
from monitor.estimation._stored import StoredEstimation, stored_estimation
from monitor.estimation._stored_multivariate import StoredMultivariate, stored_multivariate
from monitor.failures import Isolation
from monitor.outcomes.from_summary import evaluate_summaries
from monitor.profiles import OVERALL, key_of, parse_slice_key, profile_from_bytes
from monitor.results import store_estimated_results
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
# Realized from outcome summaries: the estimated metrics the outcome registry also has.
REALIZED_METRICS = ("roc_auc", "accuracy", "precision", "recall", "f1")


@dataclass(frozen=True)
class StoredModels:
    """What the baseline of a version stores for estimation (both None: nothing)."""

    estimation: StoredEstimation | None
    multivariate: StoredMultivariate | None


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


def estimate_changed(engine: Engine, cfg: ModelConfig, isolation: Isolation) -> None:
    """Estimate the model's windows that changed since the last run (the evaluate job's hook)."""
    models: dict[str, StoredModels | None] = {}
    done: list[Change] = []
    for change in pending_changes(engine, cfg.name, CHANGE_KIND):
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
            f"estimate {cfg.name}/{change.version} {change.start.isoformat()}",
            functools.partial(estimate_window, engine, cfg, change, found),
            cfg.name,
            change.version,
        )
        if stored is not None:  # a failed window stays pending: retried after its backoff
            done.append(change)
    consume_changes(engine, CHANGE_KIND, done)


def load_models(engine: Engine, cfg: ModelConfig, version: str) -> StoredModels:
    """The calibration and multivariate model of the baseline the version is compared with."""
    name = cfg.drift.baseline
    return StoredModels(
        stored_estimation(engine, cfg.name, version, name),
        stored_multivariate(engine, cfg.name, version, name),
    )


def estimate_window(
    engine: Engine, cfg: ModelConfig, change: Change, models: StoredModels
) -> list[WindowEstimate]:
    """Estimate one window from its stored profiles and store the rows; returns them."""
    with transaction(engine) as s:
        profiles = _profiles(s, change)
        realized = _realized(s, cfg, change) if models.estimation is not None else {}
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
        score = profiles.get((key, SCORE_COLUMN))
        if models.estimation is not None and score is not None:
            out += _estimates(models.estimation, score, key, realized, min_n)
        error = profiles.get((key, ERROR_COLUMN))
        if models.multivariate is not None and error is not None:
            out.append(_multivariate(models.multivariate, error, key))
    return out


def _estimates(
    stored: StoredEstimation, profile: Any, key: str,
    realized: Mapping[tuple[str, str], float | None], min_n: int,
) -> list[WindowEstimate]:  # fmt: skip
    counts = score_counts(stored.calibration, profile)
    estimates = estimate_metrics(stored.calibration, counts, METRICS)
    # Thresholds come from the reference as a whole: a slice has none of its own.
    bounds = stored.thresholds if key == OVERALL else {}
    slice_ = parse_slice_key(key)
    results = judge(estimates, lambda m: realized.get((key, m)), slice_, None, bounds, min_n)
    return [_from_estimate(key, r) for r in results]


def _from_estimate(key: str, r: EstimationResult) -> WindowEstimate:
    return WindowEstimate(key, r.metric, r.estimated, r.ci_low, r.ci_high, r.realized,
                          r.threshold_low, None, r.n, r.status)  # fmt: skip


def _multivariate(stored: StoredMultivariate, profile: Any, key: str) -> WindowEstimate:
    bounds = stored.bounds if key == OVERALL else (None, None)
    r: MultivariateResult = judge_mean(None, float(profile.mean), int(profile.n), bounds)
    return WindowEstimate(key, MULTIVARIATE_METRIC, r.value, None, None, None,
                          r.threshold_low, r.threshold_high, r.n, r.status)  # fmt: skip


def _profiles(s: Session, change: Change) -> dict[tuple[str, str], Any]:
    """The window's derived-column profiles per (slice key, column)."""
    t = WindowProfile
    stmt = select(t.slice_key, t.column, t.payload).where(
        t.model == change.model, t.version == change.version, t.window_start == change.start,
        t.column.in_((SCORE_COLUMN, ERROR_COLUMN)),
    )  # fmt: skip
    where = f"model '{change.model}' version '{change.version}' {change.start.isoformat()}"
    return {(k, c): profile_from_bytes(p, f"{where} slice {k or 'overall'}")
            for k, c, p in s.execute(stmt)}  # fmt: skip


def _realized(s: Session, cfg: ModelConfig, change: Change) -> dict[tuple[str, str], float | None]:
    """Realized metrics per (slice key, metric) from the window's joined-label summaries."""
    if cfg.outcomes.task != "classification":
        return {}
    summaries = window_summaries(s, cfg.name, change.version, change.start, change.end)
    if not summaries or summaries[0][1].n == 0:
        return {}
    results = evaluate_summaries(summaries, task="classification", metrics=REALIZED_METRICS,
                                 min_support=1)  # fmt: skip
    return {(key_of(r.slice), r.metric): r.value for r in results}


def _doc(r: WindowEstimate) -> dict[str, Any]:
    return {name: getattr(r, name) for name in _FIELDS}


_FIELDS: Sequence[str] = tuple(WindowEstimate.__dataclass_fields__)
