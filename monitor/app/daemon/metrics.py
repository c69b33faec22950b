"""Publishes what the database holds as Prometheus metrics, on every evaluation tick.

Reading the shared tables (rather than counting in-process) makes every replica export the same
numbers, whichever of them ingested or evaluated. Counters advance by the growth of the stored
totals since the previous tick. `events_ingested` counts per source; its `model` label is `*`
because a source's counter spans every model it carries. Drift, outcome, estimated and SLO
gauges (and the measure gauges, `gen_ai_server_time_to_first_token_seconds`, ...) show the
versions with results (SLO, measures: serving statistics) in the model's newest window or
the one before it (at a window boundary, a version whose new window has no results yet keeps its
series; one that stopped serving drops out a window later); guard gauges the
versions gated within `scheduler.retention_days`; `model_version_info` the newest registered
versions' settings; the latency stage gauges each current version's stage p95 and share of the
mean in its newest window, all slices together (`monitor.slo.breakdown`).
A series not written in a tick is removed, except where its family's read failed for the model
(each model's drift, outcome, estimated, guard, SLO and settings read is an item of the job):
those keep their last values until the read succeeds, and the failure is recorded.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import read_backlog
from dashboards.metrics import ModelwatchMetrics
from monitor.app.daemon.signals import LatestRows, RowsOf, latest_fairness_rows, latest_rows
from monitor.common.measures import MEASURES
from monitor.config.serving import SloConfig
from monitor.failures import Isolation, redact
from monitor.fairness import PARITY
from monitor.profiles import OVERALL, key_of, slice_label
from monitor.profiles.serving import LatencySketch, ServingSummary
from monitor.slo.breakdown import latency_breakdown
from monitor.slo.evaluate import ServingWindow, evaluate_windows, version_prices
from monitor.storage import (
    AlertNotification,
    AlertState,
    DeadLetter,
    DriftResultRow,
    EstimatedResultRow,
    GateRun,
    IngestCounter,
    Model,
    ModelVersion,
    OutcomeResultRow,
    SourcePosition,
    WindowServing,
    session_factory,
    utcnow,
)

log = logging.getLogger(__name__)
ALL_MODELS = "*"
# Families read from a model's stored window results only: they change when it is evaluated.
WINDOW_FAMILIES = frozenset({"drift", "outcome", "estimated", "fairness", "latency", "measures"})
# Versions per model whose settings are exported as `modelwatch_model_version_info`.
MAX_INFO_VERSIONS = 20


class MetricsPublisher:
    """Turns stored totals and the newest results into gauge values and counter increments."""

    def __init__(
        self,
        engine: Engine,
        metrics: ModelwatchMetrics,
        keep: timedelta | None = None,
        slo: Mapping[str, SloConfig] | None = None,
        isolation: Isolation | None = None,
    ) -> None:
        """`keep`: guard gauges show gate runs this recent (default: every version's newest);
        `slo`: each model's serving objectives; `isolation`: the job whose items each model's
        family reads are (without one, a failing read raises)."""
        self.engine = engine
        self.isolation = isolation
        self.metrics = metrics
        self.keep = keep
        self.slo = dict(slo or {})
        self._seen: dict[tuple[str, ...], float] = {}
        self._dead_after = 0  # the newest dead letter id counted
        self._lagging: set[str] = set()
        self._published: set[str] = set()  # models whose families were read at least once
        # This refresh's gate runs and version settings of every model (`_prefetch`).
        self._runs: dict[str, list[GateRun]] | None = None
        self._settings_of: dict[str, list[tuple[str, Any]]] | None = None
        # This refresh's newest result rows (`publish`'s `rows_of`).
        self._rows_of: RowsOf = functools.partial(latest_rows, engine)

    def _advance(self, key: tuple[str, ...], total: float) -> float:
        delta = total - self._seen.get(key, 0.0)
        self._seen[key] = total
        return max(delta, 0.0)

    def publish(
        self,
        models: Sequence[str],
        fresh: Collection[str] | None = None,
        rows_of: RowsOf | None = None,
    ) -> None:
        """Refresh every metric from the database; of a model not in `fresh` (None: every
        model; `monitor.app.daemon._refresh`), the families of its window results keep their
        series as they are instead of being read again. `rows_of`: the newest result rows
        the tick read for its signals (`LatestRows`); None: read here, fleet-wide."""
        with session_factory(self.engine)() as s:
            ingest = s.execute(select(IngestCounter.source, IngestCounter.events)).all()
            # Dead letters newer than the last publish only (a range of the primary key): the
            # first publish of a process counts the retained ones once.
            dead = s.execute(
                select(DeadLetter.source, DeadLetter.reason, func.count(), func.max(DeadLetter.id))
                .where(DeadLetter.id > self._dead_after)
                .group_by(DeadLetter.source, DeadLetter.reason)
            ).all()
            # Only rows that are behind, by the partial lag index (0013): never a row per HTTP
            # idempotency key.
            lag = s.execute(
                select(
                    SourcePosition.source,
                    func.sum(SourcePosition.end_offset - SourcePosition.offset),
                )
                .where(SourcePosition.end_offset > SourcePosition.offset)
                .group_by(SourcePosition.source)
            ).all()
            # Every attempt failed except the last one of each sent row.
            sent = case((AlertNotification.status == "sent", 1), else_=0)
            failures = s.execute(
                select(
                    AlertNotification.receiver,
                    func.sum(AlertNotification.attempts) - func.sum(sent),
                ).group_by(AlertNotification.receiver)
            ).all()
            self._alerts(s)
        self._ingest(ingest, dead, lag)
        backlog = read_backlog(self.engine, 0)  # the counts and the lag; no bound applies here
        self.metrics.set_intake_backlog(backlog.requests, backlog.events, backlog.lag_s)
        self._failures(failures)
        self._prefetch(models)
        wanted = [m for m in models if fresh is None or m in fresh]  # in the order asked below
        self._rows_of = rows_of or LatestRows(self.engine, wanted)
        for model in models:
            stale = fresh is not None and model not in fresh
            for family, read in self._families(model):
                if stale and family in WINDOW_FAMILIES and model in self._published:
                    self.metrics.keep_model_series(family, model)
                else:
                    self._refresh_family(family, model, read)
            self._published.add(model)
        self.metrics.end_refresh()

    def _families(self, model: str) -> list[tuple[str, Callable[[], None]]]:
        """Each family's read of `model`'s series (`ModelwatchMetrics.keep_model_series`)."""
        out: list[tuple[str, Callable[[], None]]] = [
            ("drift", functools.partial(self._drift, model)),
            ("outcome", functools.partial(self._outcomes, model)),
            ("estimated", functools.partial(self._estimated, model)),
            ("guard", functools.partial(self._guards, model)),
            ("fairness", functools.partial(self._fairness, model)),
        ]
        if model in self.slo:
            out.append(("slo", functools.partial(self._slo, model, self.slo[model])))
        out.append(("latency", functools.partial(self._latency_stages, model)))
        out.append(("measures", functools.partial(self._measures, model)))
        return [*out, ("settings", functools.partial(self._settings, model))]

    def _refresh_family(self, family: str, model: str, read: Callable[[], None]) -> None:
        """One family's read as an item: when it fails (or waits for its retry), the model's
        series of the family keep their last values instead of vanishing."""
        if self.isolation is None:
            read()
            return
        done = self.isolation.attempt(f"metrics {family} {model}", _returns_true(read), model)
        if done is None:
            self.metrics.keep_model_series(family, model)

    def _alerts(self, s: Session) -> None:
        states = s.execute(
            select(AlertState.rule, AlertState.state, func.count()).group_by(
                AlertState.rule, AlertState.state
            )
        ).all()
        self.metrics.set_alert_states({(r, st): int(n) for r, st, n in states})
        outbox = s.execute(
            select(AlertNotification.receiver, AlertNotification.status, func.count()).group_by(
                AlertNotification.receiver, AlertNotification.status
            )
        ).all()
        self.metrics.set_outbox({(r, st): int(n) for r, st, n in outbox})

    def _ingest(self, ingest: Iterable[Any], dead: Iterable[Any], lag: Iterable[Any]) -> None:
        for source, events in ingest:
            inc = self._advance(("events", source), float(events))
            self.metrics.record_ingested(ALL_MODELS, source, int(inc))
        for source, reason, count, newest in dead:
            self.metrics.record_dead_letter(source, reason, int(count))
            self._dead_after = max(self._dead_after, int(newest))
        behind_now = {source: max(int(behind or 0), 0) for source, behind in lag}
        for source in self._lagging - behind_now.keys():
            self.metrics.set_consumer_lag(source, 0)  # caught up: no row is behind any more
        for source, behind in behind_now.items():
            self.metrics.set_consumer_lag(source, behind)
        self._lagging = set(behind_now)

    def _failures(self, rows: Iterable[Any]) -> None:
        for receiver, failed in rows:
            for _ in range(int(self._advance(("fail", receiver), float(failed or 0)))):
                self.metrics.record_delivery_failure(receiver)

    def _drift(self, model: str) -> None:
        drifted: dict[tuple[str, str], int] = {}
        for r in _current(self._rows_of(DriftResultRow, model)):
            key = (r.version, r.slice_key)
            drifted[key] = drifted.get(key, 0) + (r.status == "drift")
            if r.value is not None:
                self.metrics.set_drift(
                    model, r.version, r.slice_key or None, r.column, r.method, r.value, r.threshold
                )
        for (version, slice_key), count in drifted.items():
            self.metrics.set_drifted_columns(model, version, slice_key or None, count)

    def _slo(self, model: str, cfg: SloConfig) -> None:
        windows = [
            ServingWindow(r.model, r.version, r.window_start, r.window_end, r.slice_key,
                          ServingSummary.from_row(r))
            for r in _current(latest_rows(self.engine, WindowServing, model))
        ]  # fmt: skip
        own = version_prices(self.engine, model) if cfg.cost_per_1k is not None else {}
        for r in evaluate_windows(windows, cfg, datetime.now(UTC), own):
            if r.value is not None:
                self.metrics.set_slo(
                    model, r.version, r.slice_key or None, r.objective, r.value, r.threshold
                )

    def _latency_stages(self, model: str) -> None:
        """Each current version's stage p95 and mean share, over all slices (bounded labels)."""
        for r in _current(latest_rows(self.engine, WindowServing, model)):
            if r.slice_key != OVERALL:
                continue
            for stage in latency_breakdown(ServingSummary.from_row(r)).stages:
                if stage.p95 is not None:
                    self.metrics.set_latency_stage(
                        model, r.version, stage.stage, stage.p95, stage.mean_share
                    )

    def _measures(self, model: str) -> None:
        """Each measure's quantiles of the newest windows, per version and slice."""
        for r in _current(latest_rows(self.engine, WindowServing, model)):
            for name, doc in (r.measures or {}).items():
                if name in MEASURES:  # a measure since unregistered stays stored, unexported
                    sketch = LatencySketch.from_json(doc)
                    self.metrics.set_measure(model, r.version, r.slice_key or None, name, sketch)

    def _prefetch(self, models: Sequence[str]) -> None:
        """Every model's newest gate runs and version settings, two queries for the fleet
        instead of two per model and refresh (they change without any evaluation, so every
        refresh reads them). A failure leaves them unread: each model's family then reads its
        own, and fails or succeeds as its item."""
        self._runs = self._settings_of = None
        try:
            self._runs = self._newest_runs(models)
            self._settings_of = self._version_settings(models)
        except Exception as exc:  # per-model reads below then record the failure as items
            log.info("metrics prefetch failed (%s); reading per model", redact(exc))

    def _newest_runs(self, models: Sequence[str]) -> dict[str, list[GateRun]]:
        newest = (
            select(GateRun.model, GateRun.version, func.max(GateRun.id).label("id"))
            .where(GateRun.model.in_(list(models)), *self._recent())
            .group_by(GateRun.model, GateRun.version)
            .subquery()
        )
        out: dict[str, list[GateRun]] = {}
        with session_factory(self.engine)() as s:
            for run in s.scalars(select(GateRun).join(newest, GateRun.id == newest.c.id)):
                out.setdefault(run.model, []).append(run)
        return out

    def _version_settings(self, models: Sequence[str]) -> dict[str, list[tuple[str, Any]]]:
        """The newest `MAX_INFO_VERSIONS` versions' settings of each model."""
        order = (ModelVersion.created_at.desc(), ModelVersion.id.desc())
        rank = func.row_number().over(partition_by=Model.name, order_by=order).label("rank")
        ranked = (
            select(Model.name, ModelVersion.version, ModelVersion.settings, rank)
            .join(Model, ModelVersion.model_id == Model.id)
            .where(Model.name.in_(list(models)))
            .subquery()
        )
        stmt = select(ranked.c.name, ranked.c.version, ranked.c.settings).where(
            ranked.c.rank <= MAX_INFO_VERSIONS
        )
        out: dict[str, list[tuple[str, Any]]] = {}
        with session_factory(self.engine)() as s:
            for name, version, settings in s.execute(stmt):
                out.setdefault(name, []).append((version, settings))
        return out

    def _settings(self, model: str) -> None:
        """The newest `MAX_INFO_VERSIONS` versions' optimization settings (bounded labels)."""
        found = self._settings_of
        if found is None:  # the prefetch failed: this model's own read, as its item
            found = self._version_settings([model])
        for version, settings in found.get(model, []):
            self.metrics.set_version_info(model, version, settings or {})

    def _outcomes(self, model: str) -> None:
        for r in _current(self._rows_of(OutcomeResultRow, model)):
            if r.value is not None:
                key = r.slice_key or None
                self.metrics.set_outcome(model, r.version, r.metric, key, r.value, r.baseline_value)

    def _estimated(self, model: str) -> None:
        for r in _current(self._rows_of(EstimatedResultRow, model)):
            self.metrics.set_estimated(model, r.version, r.slice_key or None, r)

    def _fairness(self, model: str) -> None:
        rows = latest_fairness_rows(self.engine, model)
        parity = [r for r in rows if r.metric in PARITY]  # the newest window's, and the
        labelled = [r for r in rows if r.metric not in PARITY]  # newest labelled window's
        for r in _current(parity) + _current(labelled):
            if r.value is not None:
                self.metrics.set_fairness(model, r.version, r.attribute, r.metric,
                                          r.slice_key or None, r.value, r.threshold)  # fmt: skip

    def _guards(self, model: str) -> None:
        found = self._runs
        if found is None:  # the prefetch failed: this model's own read, as its item
            found = self._newest_runs([model])
        for run in found.get(model, []):
            self.metrics.set_guard_verdict(model, run.version, run.verdict)
            for c in run.criteria:
                self._criterion(model, run.version, c)

    def _recent(self) -> list[Any]:
        return [] if self.keep is None else [GateRun.created_at >= utcnow() - self.keep]

    def _criterion(self, model: str, version: str, c: dict[str, Any]) -> None:
        """Flip rate and metric drop criteria, named `flip_rate[out]`, `metric_drop:m[out]`."""
        found = _CRITERION.fullmatch(str(c.get("name", "")))
        value = c.get("value")
        if found is None or not isinstance(value, int | float) or not math.isfinite(value):
            return
        kind, metric, output = found.group("kind", "metric", "output")
        key = _slice_key(c.get("slice"))
        if kind == "flip_rate":
            self.metrics.set_guard_flip_rate(model, version, key, value, output or "")
        elif metric:
            self.metrics.set_guard_metric_drop(model, version, key, metric, value, output or "")


_CRITERION = re.compile(
    r"(?P<kind>flip_rate|metric_drop)(?::(?P<metric>\w+))?(?:\[(?P<output>[^\]]*)\])?"
)


def _returns_true(read: Callable[[], None]) -> Callable[[], bool]:
    def run() -> bool:
        read()
        return True

    return run


def _current(rows: list[Any]) -> list[Any]:
    """Of each version's newest window (`latest_rows`), those of versions still serving: whose
    newest window is the model's newest or the one it follows.

    At a window boundary the versions' first results of the new window come in one at a time
    (each version's traffic and evaluation); a version not there yet keeps its series instead
    of leaving a gap. A version that stopped serving drops out one window later.
    """
    newest = max((r.window_start for r in rows), default=None)
    return [r for r in rows if newest is not None and r.window_end >= newest]


def _slice_key(slice_: dict[str, Any] | None) -> str | None:
    """A gate slice as its label reads (`segment=high`); None for the whole golden set."""
    return slice_label(key_of(slice_)) or None
