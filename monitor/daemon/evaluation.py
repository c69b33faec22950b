"""Window evaluation: compare each changed window with its baseline and score its outcomes.

A window is (re)evaluated when its profiles or its joined labels changed after its last
evaluation, so a tick does only new work and repeating a tick changes nothing (results are
upserted per (model, version, window, slice, column, method)).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from monitor.baselines import StoredBaseline, baseline_for
from monitor.config import ModelConfig
from monitor.daemon.scheduler import window_start
from monitor.detectors import DriftResult, ThresholdStrategy, evaluate, threshold_strategy
from monitor.failures import Isolation
from monitor.outcomes import OutcomeResult, evaluate_outcomes
from monitor.profiles import OVERALL, ProfileSet, profile_from_bytes, value_text
from monitor.results import store_drift_results, store_outcome_results
from monitor.storage import (
    DriftResultRow,
    LabeledPrediction,
    OutcomeResultRow,
    WindowCount,
    WindowProfile,
    session_factory,
)

log = logging.getLogger(__name__)

EVALUATE_JOB = "evaluate"


@dataclass(frozen=True)
class Window:
    """One model version's window of traffic, `[start, end)` in UTC."""

    model: str
    version: str
    start: datetime
    end: datetime


@dataclass
class WindowEvaluation:
    """What one evaluation of one window produced."""

    window: Window
    drift: list[DriftResult] = field(default_factory=list)
    outcomes: list[OutcomeResult] = field(default_factory=list)
    seconds: float = 0.0


def changed_windows(engine: Engine, model: str) -> list[Window]:
    """Windows whose profiles changed after their last drift evaluation, oldest first."""
    prof = (
        select(
            WindowProfile.version,
            WindowProfile.window_start,
            WindowProfile.window_end,
            func.max(WindowProfile.updated_at).label("updated"),
        )
        .where(WindowProfile.model == model)
        .group_by(WindowProfile.version, WindowProfile.window_start, WindowProfile.window_end)
    )
    done = _last_computed(engine, DriftResultRow, model)
    with session_factory(engine)() as s:
        rows = s.execute(prof).all()
    return sorted(
        (
            Window(model, v, start, end)
            for v, start, end, updated in rows
            if (v, start) not in done or done[(v, start)] < updated
        ),
        key=lambda w: (w.start, w.version),
    )


def labeled_windows(engine: Engine, model: str, window_s: float) -> list[Window]:
    """Windows with labels joined after their last outcome evaluation."""
    done = _last_computed(engine, OutcomeResultRow, model)
    with session_factory(engine)() as s:
        rows = s.execute(
            select(
                LabeledPrediction.version, LabeledPrediction.ts, LabeledPrediction.joined_at
            ).where(LabeledPrediction.model == model)
        ).all()
    latest: dict[tuple[str, datetime], datetime] = {}
    for version, ts, joined in rows:
        start = window_start(ts, window_s)
        key = (version, start)
        latest[key] = max(latest.get(key, joined), joined)
    step = timedelta(seconds=window_s)
    return sorted(
        (
            Window(model, v, start, start + step)
            for (v, start), joined in latest.items()
            if (v, start) not in done or done[(v, start)] < joined
        ),
        key=lambda w: (w.start, w.version),
    )


def _last_computed(engine: Engine, table: Any, model: str) -> dict[tuple[str, datetime], datetime]:
    stmt = (
        select(table.version, table.window_start, func.max(table.computed_at))
        .where(table.model == model)
        .group_by(table.version, table.window_start)
    )
    with session_factory(engine)() as s:
        return {(v, start): at for v, start, at in s.execute(stmt)}


def window_profiles(engine: Engine, window: Window, slice_by: Sequence[str]) -> ProfileSet:
    """The window's stored profiles as a ProfileSet (overall and per slice)."""
    with session_factory(engine)() as s:
        prof_rows = s.execute(
            select(WindowProfile.slice_key, WindowProfile.column, WindowProfile.payload).where(
                WindowProfile.model == window.model,
                WindowProfile.version == window.version,
                WindowProfile.window_start == window.start,
            )
        ).all()
        counts = s.execute(
            select(WindowCount.slice_key, WindowCount.events).where(
                WindowCount.model == window.model,
                WindowCount.version == window.version,
                WindowCount.window_start == window.start,
            )
        ).all()
    where = f"model '{window.model}' version '{window.version}' window {window.start.isoformat()}"
    profiles = {
        (key, col): profile_from_bytes(payload, f"{where} slice {key or 'overall'}")
        for key, col, payload in prof_rows
    }
    rows = {key: int(n) for key, n in counts}
    specs = {col: p.spec for (key, col), p in profiles.items() if key == OVERALL}
    return ProfileSet(profiles, rows, tuple(slice_by), specs)


def reference_for(engine: Engine, model: str, version: str, name: str) -> ProfileSet | None:
    """The profiles of the baseline `choose_baseline` picks; None when there is none."""
    found = baseline_for(engine, model, version, name)
    return None if found is None else found.profiles


def thresholds_for(cfg: ModelConfig, baseline: StoredBaseline) -> ThresholdStrategy:
    """The model's configured threshold strategy over its baseline's variability."""
    t = cfg.drift.thresholds
    return threshold_strategy(t.strategy, baseline.variability, t.k, t.floor_fraction)


def score_of(prediction: Any, output: str | None) -> float | None:
    """The number outcome metrics score: a plain number, a named output, or the positive class."""
    if isinstance(prediction, dict):
        key = output if output is not None else (next(iter(prediction)) if prediction else None)
        prediction = prediction.get(key) if key is not None else None
    if isinstance(prediction, list):
        prediction = prediction[-1] if prediction else None
    if isinstance(prediction, bool):
        return float(prediction)
    if isinstance(prediction, int | float):
        return float(prediction)
    if isinstance(prediction, str):
        try:
            return float(prediction)
        except ValueError:
            return None
    return None


class WindowEvaluator:
    """Evaluates changed windows of every configured model and stores the results.

    Each model's listing, each version's baseline and each window is an item of the
    `evaluate` job (see `monitor.failures`): one that fails is recorded and retried with
    backoff while the other windows and models go on.
    """

    def __init__(
        self,
        engine: Engine,
        models: Sequence[ModelConfig],
        window_s: float,
        isolation: Isolation | None = None,
    ) -> None:
        self.engine = engine
        self.models = list(models)
        self.window_s = window_s
        self.isolation = isolation or Isolation(engine, EVALUATE_JOB)

    def run(self, now: datetime | None = None) -> list[WindowEvaluation]:
        """Evaluate what changed since the last run; returns what was evaluated."""
        self.isolation.begin(now)
        out: list[WindowEvaluation] = []
        for cfg in self.models:
            attempt = functools.partial(self.isolation.attempt, model=cfg.name)
            out += attempt(f"drift {cfg.name}", functools.partial(self._drift, cfg)) or []
            out += attempt(f"outcomes {cfg.name}", functools.partial(self._outcomes, cfg)) or []
        return out

    def _drift(self, cfg: ModelConfig) -> list[WindowEvaluation]:
        out = []
        refs: dict[str, tuple[ProfileSet, ThresholdStrategy] | None] = {}
        for window in changed_windows(self.engine, cfg.name):
            if window.version not in refs:
                refs[window.version] = self.isolation.attempt(
                    f"baseline {cfg.name}/{window.version}",
                    functools.partial(self._reference, cfg, window.version),
                    cfg.name,
                    window.version,
                )
            found = refs[window.version]
            if found is None:
                continue
            done = self.isolation.attempt(
                f"drift {cfg.name}/{window.version} {window.start.isoformat()}",
                functools.partial(self._drift_window, cfg, window, *found),
                cfg.name,
                window.version,
            )
            if done is not None:
                out.append(done)
        return out

    def _drift_window(
        self, cfg: ModelConfig, window: Window, reference: ProfileSet, thresholds: ThresholdStrategy
    ) -> WindowEvaluation:
        started = time.perf_counter()
        current = window_profiles(self.engine, window, reference.slice_by or cfg.slices)
        results = evaluate(
            reference,
            current,
            methods=cfg.drift.methods or None,
            thresholds=thresholds,
            alpha=cfg.drift.alpha,
            min_n=cfg.drift.min_n,
        )
        store_drift_results(
            self.engine, cfg.name, window.version, (window.start, window.end), results
        )
        return WindowEvaluation(window, drift=results, seconds=time.perf_counter() - started)

    def _reference(
        self, cfg: ModelConfig, version: str
    ) -> tuple[ProfileSet, ThresholdStrategy] | None:
        baseline = baseline_for(self.engine, cfg.name, version, cfg.drift.baseline)
        if baseline is None:
            log.warning(
                "model %s version %s has no baseline; drift not evaluated", cfg.name, version
            )
            return None
        if cfg.drift.thresholds.strategy == "reference" and baseline.variability is None:
            log.warning(
                "model %s baseline '%s' stores no reference variability (made before it was "
                "stored, or with --chunks 0); constant thresholds used",
                cfg.name,
                cfg.drift.baseline,
            )
        return baseline.profiles, thresholds_for(cfg, baseline)

    def _outcomes(self, cfg: ModelConfig) -> list[WindowEvaluation]:
        out = []
        for window in labeled_windows(self.engine, cfg.name, self.window_s):
            done = self.isolation.attempt(
                f"outcomes {cfg.name}/{window.version} {window.start.isoformat()}",
                functools.partial(self._outcome_window, cfg, window),
                cfg.name,
                window.version,
            )
            if done is not None:
                out.append(done)
        return out

    def _outcome_window(self, cfg: ModelConfig, window: Window) -> WindowEvaluation | None:
        results = self.outcomes(window, cfg)
        if not results:
            return None
        store_outcome_results(
            self.engine, cfg.name, window.version, (window.start, window.end), results
        )
        return WindowEvaluation(window, outcomes=results)

    def outcomes(self, window: Window, cfg: ModelConfig) -> list[OutcomeResult]:
        """Per-slice outcome metrics of the window's joined predictions and labels."""
        with session_factory(self.engine)() as s:
            rows = s.execute(
                select(
                    LabeledPrediction.prediction,
                    LabeledPrediction.label,
                    LabeledPrediction.slice_values,
                ).where(
                    LabeledPrediction.model == window.model,
                    LabeledPrediction.version == window.version,
                    LabeledPrediction.ts >= window.start,
                    LabeledPrediction.ts < window.end,
                )
            ).all()
        ys, scores, slices = [], [], {c: [] for c in cfg.slices}  # type: ignore[var-annotated]
        for prediction, label, values in rows:
            score, y = score_of(prediction, cfg.outcomes.output), score_of(label, None)
            if score is None or y is None:
                continue
            ys.append(y)
            scores.append(score)
            for c in cfg.slices:
                v = (values or {}).get(c)
                slices[c].append(value_text(v))
        if not ys:
            return []
        oc = cfg.outcomes
        return evaluate_outcomes(
            ys,
            scores,
            task=oc.task,
            slices=slices,
            metrics=oc.metrics or None,
            baseline=oc.baseline or None,
            tolerance=oc.tolerance,
            threshold=oc.threshold,
            min_support=oc.min_support,
        )
