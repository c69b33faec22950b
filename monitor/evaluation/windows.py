"""Window evaluation: compare each changed window with its baseline and score its outcomes.

A window is (re)evaluated when its profiles or its joined labels changed after its last
evaluation (its fairness on either: demographic parity counts every prediction), so a tick
does only new work and repeating a tick changes nothing (results are upserted per (model,
version, window, slice, column, method)).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from monitor.attributions import AttributionReference
from monitor.baselines.store import ChosenBaseline, StoredBaseline, baseline_keys, chosen_baseline
from monitor.common.collection import collector_paused
from monitor.config import ModelConfig
from monitor.detectors import DriftResult
from monitor.estimation import estimate_changed
from monitor.evaluation._drift_batch import (
    Reference,
    batches,
    drift_of,
    evaluate_batch,
    thresholds_for,
)
from monitor.evaluation._fairness import fairness_windows, store_window_fairness
from monitor.evaluation._outcome_batch import outcome_batch
from monitor.evaluation._references import References
from monitor.evaluation._window_data import (
    Consumed,
    Window,
    WindowEvaluation,
    _change,
    _item,
    _window,
    changed_windows,
    consume,
    labeled_windows,
    reference_for,
    window_profiles,
)
from monitor.evaluation.period_jobs import (
    Compute,
    PeriodWork,
    evaluate_periods,
    mark_periods,
    merge_marked,
    period_kinds,
)
from monitor.evaluation.periods import PERIODS, DayMerges, Period, stored_drift, stored_outcomes
from monitor.failures import Isolation, redact
from monitor.outcomes import OutcomeResult
from monitor.results.store import store_drift_results, store_outcome_results
from monitor.slo.evaluate import record_window_slo, retry_failed_slo, window_serving
from monitor.storage import (
    Change,
    consume_changes,
    pending_changes,
    pending_kinds,
    session_factory,
    transaction,
    utcnow,
)
from monitor.summaries import outcome_results, rebuild_pending, window_summaries

# What callers import from here (the window types and readers live in `_window_data`).
__all__ = [
    "CHANGES",
    "EVALUATE_JOB",
    "OPEN_PACED",
    "Window",
    "WindowEvaluation",
    "WindowEvaluator",
    "changed_windows",
    "consume",
    "labeled_windows",
    "reference_for",
    "window_profiles",
]

log = logging.getLogger(__name__)

EVALUATE_JOB = "evaluate"

CHANGES = ("drift", "outcome", "backfill", "estimate", *period_kinds("drift"),
           *period_kinds("outcome"))  # fmt: skip
"""The change kinds a model's evaluation reads, all in one query per model and tick."""

Pending = dict[str, list[Change]]
# The window kinds an open window's re-evaluation is paced for (`open_window_interval_s`).
OPEN_PACED = ("drift", "estimate")


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
        period_interval_s: float = 0.0,
        reference_cache: int = 1000,
        clock: Callable[[], datetime] = utcnow,
        open_window_interval_s: float = 0.0,
        settled: Callable[[], datetime | None] | None = None,
    ) -> None:
        self.engine = engine
        self.models = list(models)
        self.window_s = window_s
        self.isolation = isolation or Isolation(engine, EVALUATE_JOB)
        # An open day or week is re-evaluated at most this often (period_jobs.period_interval).
        self.period_interval = timedelta(seconds=period_interval_s)
        self.references = References(reference_cache)  # `scheduler.reference_cache`
        self.clock = clock  # when period markers are set and checked (their changed_at)
        # An open window's changed profiles are re-evaluated at most this often (an ended one
        # at once): `scheduler.open_window_interval_s`.
        self.open_interval = timedelta(seconds=open_window_interval_s)
        # The latest window end whose events are all aggregated (`intake_settled`; None or
        # returning None: any ended window): an ended window evaluated before its last events
        # were would be evaluated on part of them, then again once they re-mark it.
        self.settled = settled

    def sibling(self, models: Sequence[ModelConfig], isolation: Isolation) -> WindowEvaluator:
        """An evaluator of `models` sharing this one's settings and decoded baselines (a unit
        of the shared queue is one model's evaluation)."""
        interval = self.period_interval.total_seconds()
        out = WindowEvaluator(self.engine, models, self.window_s, isolation, interval, 1)
        out.clock = self.clock
        out.open_interval = self.open_interval
        out.settled = self.settled
        out.references = self.references
        return out

    def run(self, now: datetime | None = None) -> list[WindowEvaluation]:
        """Evaluate what changed since the last run; returns what was evaluated."""
        self.isolation.begin(now)
        out: list[WindowEvaluation] = []
        for cfg in self.models:
            # A burst decodes and builds ~10^6 acyclic objects per model
            # (monitor.common.collection).
            with collector_paused():
                out += self._model(cfg)
        return out

    def _model(self, cfg: ModelConfig) -> list[WindowEvaluation]:
        attempt = functools.partial(self.isolation.attempt, model=cfg.name)
        read = attempt(f"changes {cfg.name}", functools.partial(self._read, cfg))
        if read is None:  # recorded; every kind stays pending for the next tick
            return []
        pending, rows = read
        out = attempt(f"drift {cfg.name}", functools.partial(self._drift, cfg, pending, rows)) or []
        out += (
            attempt(f"outcomes {cfg.name}", functools.partial(self._outcomes, cfg, pending)) or []
        )
        estimate = (self.engine, cfg, self.isolation, pending["estimate"])
        attempt(f"estimate {cfg.name}", functools.partial(estimate_changed, *estimate))
        return out

    def _read(self, cfg: ModelConfig) -> tuple[Pending, dict[str, ChosenBaseline | None]]:
        """The model's pending changes of every kind and, on the same connection, the stored
        baseline row of each version with changed windows (its cached decode is checked by it)."""
        with session_factory(self.engine)() as s:
            pending = pending_kinds(s, cfg.name, CHANGES)
            now = self.clock()
            settled = self.settled() if self.settled is not None else None
            # an open window not due yet, or an ended one whose last events are still in the
            # intake, stays pending for a later tick
            for kind in OPEN_PACED:
                pending[kind] = [
                    c for c in pending[kind] if c.due(now, self.open_interval, settled)
                ]
            versions = sorted({c.version for c in pending["drift"]})
            return pending, {
                v: chosen_baseline(s, cfg.name, v, cfg.drift.baseline) for v in versions
            }

    def _periods(
        self, kind: str, pending: Pending, windows: Sequence[Window]
    ) -> dict[str, list[Change]]:
        """Mark the windows' days and weeks not pending yet (before: a crash leaves them
        pending); the model's pending periods of `kind` by name, those marked with their `seq`."""
        periods = {name: pending[f"{kind}_{name}"] for name in PERIODS}
        marked = mark_periods(self.engine, kind, windows, self.clock(), periods)
        return {name: merge_marked(periods[name], marked.get(name, [])) for name in PERIODS}

    def _period_work(
        self, kind: str, compute: Compute, periods: dict[str, list[Change]]
    ) -> PeriodWork:
        return PeriodWork(kind, compute, periods, self.period_interval, self.clock())

    def _drift(
        self, cfg: ModelConfig, pending: Pending, rows: dict[str, ChosenBaseline | None]
    ) -> list[WindowEvaluation]:
        out = []
        refs: dict[str, Reference | None] = {}
        consumed = Consumed(self.engine, "drift")
        merges = DayMerges()  # the windows' decoded profiles, merged per day for their days
        windows = [_window(c) for c in pending["drift"]]
        periods = self._periods("drift", pending, windows)
        for batch in batches(windows):
            version = batch[0].version
            if cfg.slo is not None:  # serving SLOs need no baseline
                for window in batch:
                    record_window_slo(self.isolation, self.engine, cfg.name, cfg.slo, version,
                                      window.start)  # fmt: skip
            if cfg.fairness is not None:  # demographic parity needs no baseline, nor labels
                self._fairness(cfg, version, batch)
            found = self._found(cfg, refs, version, rows)
            if found is None:
                # Without a baseline there is nothing to compare; the window is evaluated when
                # it next changes, not rescanned every tick.
                for window in batch:
                    consumed.add(window)
                continue
            out += self._batched(
                [_item("drift", cfg, w) for w in batch],
                batch,
                functools.partial(self._drift_together, cfg, found, merges),
                functools.partial(self._drift_window, cfg, found),
            )
        consumed.flush()
        if cfg.slo is not None:
            retry_failed_slo(self.isolation, self.engine, cfg.name, cfg.slo)
        drift = functools.partial(self._period_drift, cfg, refs, merges)
        evaluate_periods(
            self.isolation, self.engine, cfg, self._period_work("drift", drift, periods)
        )
        return out

    def _fairness(self, cfg: ModelConfig, version: str, batch: list[Window]) -> None:
        """The fairness of windows whose predictions changed (a failure is the job's item)."""
        spans = [(w.start, w.end) for w in batch]
        work = functools.partial(fairness_windows, self.engine, cfg, version, spans)
        self.isolation.attempt(f"fairness {cfg.name}/{version}", work, cfg.name, version)

    def _found(
        self,
        cfg: ModelConfig,
        refs: dict[str, Reference | None],
        version: str,
        rows: dict[str, ChosenBaseline | None] | None = None,
    ) -> Reference | None:
        """The version's baseline, looked up once per tick (a failure is the job's item)."""
        if version not in refs:
            refs[version] = self.isolation.attempt(
                f"baseline {cfg.name}/{version}",
                functools.partial(self._reference, cfg, version, rows),
                cfg.name,
                version,
            )
        return refs[version]

    def _period_drift(
        self,
        cfg: ModelConfig,
        refs: dict[str, Reference | None],
        merges: DayMerges,
        session: Session,
        version: str,
        name: str,
        period: Period,
    ) -> list[DriftResult]:
        found = self._found(cfg, refs, version)
        if found is None:
            return []
        return stored_drift(session, cfg, version, name, period, found, merges)

    def _batched(
        self,
        items: list[str],
        batch: list[Window],
        together: Callable[[list[Window]], list[WindowEvaluation]],
        alone: Callable[[Window], WindowEvaluation],
    ) -> list[WindowEvaluation]:
        """One version's changed windows evaluated `together` (results stored and markers
        consumed in one transaction); when that fails, each `alone` (storing and consuming it in
        one transaction), so a bad window is its own failure and the others are stored. Windows
        failing until a later retry stay pending."""
        due = [(item, w) for item, w in zip(items, batch, strict=True) if self.isolation.due(item)]
        if len(due) > 1:
            try:
                done = together([w for _, w in due])
            except Exception as exc:  # redone window by window: each failure is its own item
                log.info("batch of %d windows failed (%s); one by one", len(due), redact(exc))
            else:
                for item, _ in due:
                    self.isolation.succeeded(item)
                return done
        out = []
        for item, window in due:
            work = functools.partial(alone, window)
            done_one = self.isolation.attempt(
                item, work, window.model, window.version, window.start
            )
            if done_one is not None:  # a failed window stays pending: retried after its backoff
                out.append(done_one)
        return out

    def _drift_together(
        self, cfg: ModelConfig, found: Reference, merges: DayMerges, windows: list[Window]
    ) -> list[WindowEvaluation]:
        started = time.perf_counter()
        done = evaluate_batch(self.engine, cfg, [_change(w) for w in windows], found, merges.add)
        seconds = (time.perf_counter() - started) / len(windows)
        return [
            WindowEvaluation(w, drift=r, seconds=seconds)
            for w, r in zip(windows, done, strict=True)
        ]

    def _drift_window(self, cfg: ModelConfig, found: Reference, window: Window) -> WindowEvaluation:
        started = time.perf_counter()
        reference, _thresholds, attributions = found
        served = (
            window_serving(self.engine, cfg.name, window.version, window.start)
            if attributions.overall
            else None
        )
        with transaction(self.engine) as s:  # one connection: one pool checkout (and ping)
            current = window_profiles(s, window, reference.slice_by or cfg.slices)
            results = drift_of(cfg, found, current, served)
            store_drift_results(s, cfg.name, window.version, (window.start, window.end), results)
            consume_changes(s, "drift", [_change(window)])  # with its results
        return WindowEvaluation(window, drift=results, seconds=time.perf_counter() - started)

    def warm(self) -> int:
        """Decode now the baselines the configured models' windows will be compared with (each
        model version's own, newest first, up to the cache's size), so that the first windows
        after a start do not decode them all at once; how many were decoded. A baseline that
        cannot be decoded is logged and skipped (its windows meet it again, isolated); the
        database going away ends the warm-up (DBAPIError)."""
        wanted = {(m.name, m.drift.baseline): m for m in self.models}
        loaded = 0
        for model, version, name in baseline_keys(self.engine):
            cfg = wanted.get((model, name))
            if cfg is None:
                continue
            if loaded >= self.references.cache.maxsize:
                break
            try:
                self._reference(cfg, version, None)
            except DBAPIError:
                raise
            except Exception as exc:  # one bad baseline must not leave the others cold
                log.warning("baseline of %s version %s not decoded: %s", model, version, exc)
                continue
            loaded += 1
        return loaded

    def _reference(
        self, cfg: ModelConfig, version: str, rows: dict[str, ChosenBaseline | None] | None
    ) -> Reference | None:
        build = functools.partial(self._built, cfg)
        key = (cfg.name, version, cfg.drift.baseline)
        found = self.references.get(self.engine, key, build, rows)
        if found is None:
            log.warning(
                "model %s version %s has no baseline; drift not evaluated", cfg.name, version
            )
            return None
        return found[1]

    def _built(self, cfg: ModelConfig, baseline: StoredBaseline) -> Reference:
        """The loaded baseline as a reference (once per stored baseline: `References`)."""
        if cfg.drift.thresholds.strategy == "reference" and baseline.variability is None:
            log.warning(
                "model %s baseline '%s' stores no reference variability (made before it was "
                "stored, or with --chunks 0); constant thresholds used",
                cfg.name,
                cfg.drift.baseline,
            )
        attributions = AttributionReference(
            dict(baseline.attributions), baseline.attributions_by_slice
        )
        return baseline.profiles, thresholds_for(cfg, baseline), attributions

    def _outcomes(self, cfg: ModelConfig, pending: Pending) -> list[WindowEvaluation]:
        out = []
        changes = pending["outcome"]
        if pending["backfill"]:  # the rebuild marks its windows: read them again
            rebuild_pending(self.engine, cfg, self.window_s, pending["backfill"])
            changes = pending_changes(self.engine, cfg.name, "outcome")
        windows = [_window(c) for c in changes]
        periods = self._periods("outcome", pending, windows)
        for batch in batches(windows):
            done = self._batched(
                [_item("outcome", cfg, w) for w in batch],
                batch,
                functools.partial(self._outcomes_together, cfg),
                functools.partial(self._outcome_window, cfg),
            )
            out += [e for e in done if e.outcomes]
        outcomes = functools.partial(stored_outcomes, cfg)
        work = self._period_work("outcome", outcomes, periods)
        evaluate_periods(self.isolation, self.engine, cfg, work)
        return out

    def _outcomes_together(self, cfg: ModelConfig, windows: list[Window]) -> list[WindowEvaluation]:
        done = outcome_batch(self.engine, cfg, [_change(w) for w in windows])
        return [WindowEvaluation(w, outcomes=r) for w, r in zip(windows, done, strict=True)]

    def _outcome_window(self, cfg: ModelConfig, window: Window) -> WindowEvaluation:
        with transaction(self.engine) as s:  # one connection: one pool checkout (and ping)
            consume_changes(s, "outcome", [_change(window)])  # with its results
            results = self.outcomes(window, cfg, s)
            if not results:
                return WindowEvaluation(window)
            store_outcome_results(s, cfg.name, window.version, (window.start, window.end), results)
            if cfg.fairness is not None:
                span = (window.start, window.end)
                summaries = window_summaries(s, cfg.name, window.version, *span)
                store_window_fairness(s, cfg, window.version, [(span, summaries)])
        return WindowEvaluation(window, outcomes=results)

    def outcomes(
        self, window: Window, cfg: ModelConfig, session: Session | None = None
    ) -> list[OutcomeResult]:
        """Per-slice outcome metrics of the window, from its merged outcome summaries."""
        bind = self.engine if session is None else session
        return outcome_results(bind, cfg, window.version, window.start, window.end)
