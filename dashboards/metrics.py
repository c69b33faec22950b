"""Prometheus metric definitions, registered on an injected `CollectorRegistry`.

Labels are bounded: `model` and `version` come from stored model versions, `column` from the
model's schema, `source` and `receiver` from the config file, and `slice` only from configured
slice columns through :class:`~dashboards._labels.SliceLabels` (a cap per column, then "other").
Guard metrics carry the gate's own slices (the golden set's `slice_by`), capped at
`MAX_GATE_SLICES` per model, so segment=high and segment=normal are separate series even when
`segment` is not a monitoring slice. HTTP metrics use the route template, never the raw path.
Per-version gauges are rewritten on every refresh (`begin_refresh`/`end_refresh`); series of
versions that no longer have current results are removed.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from dashboards._labels import ALL_SLICES, LabelLimiter, SliceLabels
from dashboards._refresh import Refresh
from monitor import __version__
from monitor.common.measures import MEASURES
from monitor.config import ModelConfig
from monitor.profiles.serving import STAGES

# Window evaluation runs from milliseconds (small windows) to minutes (big backfills).
EVALUATION_BUCKETS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
GUARD_VERDICTS: tuple[str, ...] = ("pass", "fail", "inconclusive")
# Dead-letter reasons are free text in principle; only this many distinct ones become labels.
MAX_DEAD_LETTER_REASONS = 20
# Distinct gate slices per model that become labels; later newcomers are "other".
MAX_GATE_SLICES = 50
# API requests take milliseconds; gate runs over HTTP take up to minutes.
HTTP_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60, 300)
ALERT_STATES: tuple[str, ...] = ("pending", "firing", "resolved")
OUTBOX_STATES: tuple[str, ...] = ("pending", "sending", "sent", "dead")
# Optimization settings exported as `modelwatch_model_version_info` labels (free `meta` is not:
# its keys are unbounded); values are cut to this many characters.
VERSION_INFO_KEYS: tuple[str, ...] = ("precision", "quantization", "batching", "runtime")
MAX_INFO_VALUE = 64
# The quantiles each measure gauge shows (1: the window's largest value, within 1 %).
MEASURE_QUANTILES: tuple[float, ...] = (0.5, 0.95, 0.99, 1.0)


class EstimatedSeries(Protocol):
    """What `set_estimated` reads of a stored estimated result (monitor.storage's row)."""

    @property
    def metric(self) -> str: ...
    @property
    def value(self) -> float | None: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...
    @property
    def realized(self) -> float | None: ...
    @property
    def threshold_low(self) -> float | None: ...
    @property
    def threshold_high(self) -> float | None: ...


class Quantiles(Protocol):
    """What `set_measure` reads of a window's sketch (monitor.profiles' LatencySketch)."""

    def quantile(self, q: float) -> float | None: ...


class ModelwatchMetrics:
    """Every metric modelwatch exports, with helpers that keep label values bounded."""

    def __init__(
        self,
        registry: CollectorRegistry,
        models: Iterable[ModelConfig] = (),
        guard_verdicts: Sequence[str] = GUARD_VERDICTS,
    ) -> None:
        self.registry = registry
        self.slices = SliceLabels(models)
        self.guard_verdicts = tuple(guard_verdicts)
        self._reasons = LabelLimiter(MAX_DEAD_LETTER_REASONS)
        self._gate_slices = LabelLimiter(MAX_GATE_SLICES)
        self._refresh = Refresh()
        self._define_ingest_metrics(registry)
        self._define_result_metrics(registry)
        self._define_guard_metrics(registry)
        self._define_health_metrics(registry)
        self._define_service_metrics(registry)
        self._define_shadow_metrics(registry)
        self._define_watch_metrics(registry)
        self._define_latency_stage_metrics(registry)
        self._define_queue_metrics(registry)
        self._define_measure_metrics(registry)

    def keep_model_series(self, family: str, model: str) -> None:
        """Keep `model`'s series of a refreshed family (drift, outcome, estimated, guard, slo,
        settings, fairness) through this refresh, as they are: its read failed. An unknown
        family is a ValueError."""
        families = self._families()
        gauges = families.get(family)
        if gauges is None:
            known = ", ".join(families)
            raise ValueError(f"unknown refreshed family {family!r}; expected one of {known}")
        self._refresh.keep(gauges, model)

    def _families(self) -> dict[str, tuple[Gauge, ...]]:
        return {
            "drift": (self.drift_score, self.drift_threshold, self.drifted_columns),
            "outcome": (self.outcome_value, self.outcome_baseline),
            "estimated": (
                self.estimated_value,
                self.estimated_band,
                self.estimated_threshold,
                self.estimated_realized,
            ),
            "guard": (self.guard_verdict, self.guard_flip_rate, self.guard_metric_drop),
            "slo": (self.slo_value, self.slo_threshold),
            "measures": tuple(self.measures.values()),
            "settings": (self.model_version_info,),
            "latency": (self.latency_stage_p95, self.latency_stage_share),
            "fairness": (self.fairness_value, self.fairness_threshold),
        }

    def end_refresh(self) -> int:
        """Remove refreshed series (drift, outcomes, guards, alert and outbox counts) not
        written since the previous `end_refresh`; how many."""
        return self._refresh.sweep()

    def _define_ingest_metrics(self, registry: CollectorRegistry) -> None:
        self.events_ingested = Counter(
            "modelwatch_events_ingested",
            "Events accepted by a collector.",
            ["model", "source"],
            registry=registry,
        )
        self.dead_letters = Counter(
            "modelwatch_dead_letters",
            "Events rejected by a collector and written to the dead-letter table.",
            ["source", "reason"],
            registry=registry,
        )
        self.consumer_lag = Gauge(
            "modelwatch_consumer_lag",
            "Messages between a source's committed position and its end (Kafka: summed over "
            "partitions).",
            ["source"],
            registry=registry,
        )
        self.intake_backlog_requests = Gauge(
            "modelwatch_intake_backlog_requests",
            "HTTP ingest requests acknowledged but not yet aggregated by the intake drain.",
            registry=registry,
        )
        self.intake_backlog_events = Gauge(
            "modelwatch_intake_backlog_events",
            "Events of those requests (what the drain has still to count).",
            registry=registry,
        )
        self.intake_lag_seconds = Gauge(
            "modelwatch_intake_lag_seconds",
            "Age of the oldest HTTP ingest request not yet aggregated (0 when none waits): how "
            "far the intake drain is behind what the API acknowledged.",
            registry=registry,
        )
        self.window_evaluation_seconds = Histogram(
            "modelwatch_window_evaluation_seconds",
            "Wall time to evaluate one window of one model version.",
            ["model"],
            buckets=EVALUATION_BUCKETS,
            registry=registry,
        )
        self.alert_delivery_failures = Counter(
            "modelwatch_alert_delivery_failures",
            "Notification delivery attempts that failed (each retry counts).",
            ["receiver"],
            registry=registry,
        )

    def _define_result_metrics(self, registry: CollectorRegistry) -> None:
        self.drift_score = Gauge(
            "modelwatch_drift_score",
            "Latest drift statistic per column and slice.",
            ["model", "version", "slice", "column", "method"],
            registry=registry,
        )
        self.drift_threshold = Gauge(
            "modelwatch_drift_threshold",
            "Threshold the latest drift statistic was compared with.",
            ["model", "version", "slice", "column", "method"],
            registry=registry,
        )
        self.drifted_columns = Gauge(
            "modelwatch_drifted_columns",
            "Columns whose latest drift status is 'drift'.",
            ["model", "version", "slice"],
            registry=registry,
        )
        self.outcome_value = Gauge(
            "modelwatch_outcome_value",
            "Latest outcome metric (accuracy, auc, mae, ...) per slice.",
            ["model", "version", "metric", "slice"],
            registry=registry,
        )
        self.outcome_baseline = Gauge(
            "modelwatch_outcome_baseline",
            "Baseline the latest outcome metric was compared with.",
            ["model", "version", "metric", "slice"],
            registry=registry,
        )
        # `attribute` is a configured protected attribute (a slice column), `metric` a fixed
        # fairness name (monitor.fairness.METRICS), `slice` "all" for the groups' comparison.
        self.fairness_value = Gauge(
            "modelwatch_fairness_value",
            "Latest labelled window's fairness metric per protected attribute (slice all: the "
            "comparison of its groups) or group.",
            ["model", "version", "attribute", "metric", "slice"],
            registry=registry,
        )
        self.fairness_threshold = Gauge(
            "modelwatch_fairness_threshold",
            "Bound the latest fairness metric was judged against.",
            ["model", "version", "attribute", "metric", "slice"],
            registry=registry,
        )

        # `metric` is a fixed estimation name (monitor.estimation: roc_auc, accuracy, ...,
        # reconstruction_error); `bound` is "low" or "high".
        self.estimated_value = Gauge(
            "modelwatch_estimated_value",
            "Latest window's metric estimated without labels (CBPE), or its mean PCA "
            "reconstruction error (metric reconstruction_error), per slice.",
            ["model", "version", "metric", "slice"],
            registry=registry,
        )
        self.estimated_band = Gauge(
            "modelwatch_estimated_band",
            "Bounds of the estimate's sampling band (estimate ± 3 standard errors).",
            ["model", "version", "metric", "slice", "bound"],
            registry=registry,
        )
        self.estimated_threshold = Gauge(
            "modelwatch_estimated_threshold",
            "Reference-chunk threshold an estimate (low) or mean reconstruction error (low, "
            "high) is judged by.",
            ["model", "version", "metric", "slice", "bound"],
            registry=registry,
        )
        self.estimated_realized = Gauge(
            "modelwatch_estimated_realized",
            "The realized value of an estimated metric in the same window, once labels joined.",
            ["model", "version", "metric", "slice"],
            registry=registry,
        )

    def _define_latency_stage_metrics(self, registry: CollectorRegistry) -> None:
        # `stage` is one of the fixed request stages (monitor.profiles.serving.STAGES).
        self.latency_stage_p95 = Gauge(
            "modelwatch_latency_stage_p95_seconds",
            "Latest window's p95 of one request stage in seconds (queue, preprocess, model, "
            "postprocess, network; the events' `<stage>_ms`), all slices together.",
            ["model", "version", "stage"],
            registry=registry,
        )
        self.latency_stage_share = Gauge(
            "modelwatch_latency_stage_mean_share",
            "A stage's mean latency over the end-to-end mean in the latest window (means add "
            "up: the shares sum to 1 when every event reports every stage).",
            ["model", "version", "stage"],
            registry=registry,
        )

    def set_latency_stage(
        self, model: str, version: str, stage: str, p95_ms: float, mean_share: float | None
    ) -> None:
        """Publish one stage's latest p95 (given in ms, exported in seconds) and share of the
        mean; an unknown stage is a ValueError (the label stays bounded)."""
        if stage not in STAGES:
            raise ValueError(f"unknown latency stage {stage!r}; expected one of {STAGES}")
        self._refresh.set(self.latency_stage_p95, (model, version, stage), p95_ms / 1000.0)
        if mean_share is not None:
            self._refresh.set(self.latency_stage_share, (model, version, stage), mean_share)

    def _define_guard_metrics(self, registry: CollectorRegistry) -> None:
        self.guard_verdict = Gauge(
            "modelwatch_guard_verdict",
            "Latest guard verdict as a state set: 1 for the current verdict, 0 for the others.",
            ["model", "version", "verdict"],
            registry=registry,
        )
        self.guard_flip_rate = Gauge(
            "modelwatch_guard_flip_rate",
            "Fraction of golden-set rows whose predicted class differs between reference and "
            "candidate in the latest guard run, per gate slice (golden set slice_by).",
            ["model", "version", "slice", "output"],
            registry=registry,
        )
        self.guard_metric_drop = Gauge(
            "modelwatch_guard_metric_drop",
            "Task metric drop of the candidate against the reference in the latest guard run, "
            "per gate slice (points for higher-is-better metrics, percent for error metrics).",
            ["model", "version", "slice", "metric", "output"],
            registry=registry,
        )
        # Set by the replica that ran a scheduled replay (`guards.schedule`); providers are
        # ONNX Runtime's own small set of names.
        self.guard_replay_seconds = Gauge(
            "modelwatch_guard_replay_seconds",
            "Wall time of the latest scheduled golden replay run of a model (all its versions).",
            ["model"],
            registry=registry,
        )
        self.guard_replay_provider = Gauge(
            "modelwatch_guard_replay_provider",
            "1 for each ONNX Runtime execution provider the latest scheduled replay of a "
            "version really ran on (reference and candidate together).",
            ["model", "version", "provider"],
            registry=registry,
        )
        self.guard_replay_divergent = Gauge(
            "modelwatch_guard_replay_divergent",
            "1 when the latest scheduled replay of a version did not pass on content (reference, "
            "candidate, golden set) that passed before: hardware or runtime drift.",
            ["model", "version"],
            registry=registry,
        )
        # `objective` is one of the fixed SLO keys (monitor.slo.evaluate.OBJECTIVES) or a
        # configured measure objective (`slo.measures`: ttft_p95_ms, ...), bounded by config.
        self.slo_value = Gauge(
            "modelwatch_slo_value",
            "Latest window's value of a serving objective (latency percentile in ms, error "
            "rate, requests per second, dollars per 1,000 predictions or tokens, a measure's "
            "statistic in its unit) per slice.",
            ["model", "version", "slice", "objective"],
            registry=registry,
        )
        self.slo_threshold = Gauge(
            "modelwatch_slo_threshold",
            "The configured bound of a serving objective.",
            ["model", "version", "slice", "objective"],
            registry=registry,
        )

        self.model_version_info = Gauge(
            "modelwatch_model_version_info",
            "A registered version's optimization settings as labels (always 1); the newest "
            "versions of each configured model only.",
            ["model", "version", *VERSION_INFO_KEYS],
            registry=registry,
        )

    def _define_health_metrics(self, registry: CollectorRegistry) -> None:
        # `job` and `component` are names fixed in code (evaluate, alerts, retention, ...).
        self.job_failures = Counter(
            "modelwatch_job_failures",
            "Failures of scheduled jobs or of one of their items (a window, a model).",
            ["job"],
            registry=registry,
        )
        self.job_last_success = Gauge(
            "modelwatch_job_last_success_timestamp_seconds",
            "Unix time a scheduled job last finished without an error.",
            ["job"],
            registry=registry,
        )
        self.component_restarts = Counter(
            "modelwatch_component_restarts",
            "Restarts of a supervised component (collectors, delivery) after it died.",
            ["component"],
            registry=registry,
        )

    def _define_service_metrics(self, registry: CollectorRegistry) -> None:
        self.build_info = Gauge(
            "modelwatch_build_info",
            "Always 1; the labels say which modelwatch and Python this process runs.",
            ["version", "python"],
            registry=registry,
        )
        self.build_info.labels(version=__version__, python=platform.python_version()).set(1)
        self.alert_states = Gauge(
            "modelwatch_alerts",
            "Alerts per rule and state (pending, firing, resolved).",
            ["rule", "state"],
            registry=registry,
        )
        self.outbox = Gauge(
            "modelwatch_outbox_notifications",
            "Notifications in the outbox per receiver and status; `dead` ones were given up on.",
            ["receiver", "status"],
            registry=registry,
        )

    def _define_watch_metrics(self, registry: CollectorRegistry) -> None:
        # Pairs and checks come from the config file; slices through `SliceLabels`.
        self.canary_verdict = Gauge(
            "modelwatch_canary_verdict",
            "Newest scheduled verdict of a declared canary pair as a state set: 1 for the "
            "current verdict, 0 for the others.",
            ["model", "version", "stable", "verdict"],
            registry=registry,
        )
        self.canary_failed_criteria = Gauge(
            "modelwatch_canary_failed_criteria",
            "Criteria of a declared canary pair failing in its newest scheduled evaluation, "
            "per slice (`all`: the whole traffic), after the multiple-testing correction.",
            ["model", "version", "stable", "slice"],
            registry=registry,
        )
        self.skew_mismatch_rate = Gauge(
            "modelwatch_skew_mismatch_rate",
            "Share of joined entities whose serving and offline values of a feature differ, "
            "in the newest run of a scheduled skew check.",
            ["check", "model", "column"],
            registry=registry,
        )
        self.segments_found = Gauge(
            "modelwatch_segments_found",
            "Segments reported by the newest run of a scheduled segment check, by persistence "
            "(`new`, or `persisting`: also in the run before).",
            ["check", "model", "mode", "persistence"],
            registry=registry,
        )

    def _define_queue_metrics(self, registry: CollectorRegistry) -> None:
        # The evaluation work queue shared by replicas on PostgreSQL: each replica counts what
        # it did, so the split between replicas is read across their /metrics.
        self.evaluation_units = Counter(
            "modelwatch_evaluation_units",
            "Evaluation units (one model's changed windows) this replica ran from the shared "
            "queue (PostgreSQL), by outcome: done, failed.",
            ["model", "outcome"],
            registry=registry,
        )
        self.evaluation_units_deferred = Counter(
            "modelwatch_evaluation_units_deferred",
            "Evaluation units this replica put on the shared queue as an evaluate tick's producer.",
            registry=registry,
        )
        self.evaluation_units_retried = Counter(
            "modelwatch_evaluation_units_retried",
            "Units of a replica that stopped beating (it died) this replica put back on the queue.",
            registry=registry,
        )
        self.evaluation_queue_depth = Gauge(
            "modelwatch_evaluation_queue_depth",
            "Evaluation units waiting (todo) or running (doing), as last seen by this replica.",
            ["status"],
            registry=registry,
        )

    def record_unit(self, model: str, outcome: str) -> None:
        """Count one evaluation unit this replica ran (`done` or `failed`)."""
        self.evaluation_units.labels(model=model, outcome=outcome).inc()

    def record_units_deferred(self, count: int) -> None:
        self.evaluation_units_deferred.inc(count)

    def record_units_retried(self, count: int) -> None:
        self.evaluation_units_retried.inc(count)

    def set_queue_depth(self, todo: int, doing: int) -> None:
        self.evaluation_queue_depth.labels(status="todo").set(todo)
        self.evaluation_queue_depth.labels(status="doing").set(doing)

    def set_canary(self, model: str, version: str, stable: str, verdict: str,
                   failed: Mapping[str, int]) -> None:  # fmt: skip
        """Publish a pair's newest verdict and its failing criteria per slice key."""
        for state in GUARD_VERDICTS:
            value = 1.0 if state == verdict else 0.0
            self._refresh.set(self.canary_verdict, (model, version, stable, state), value)
        for key, count in failed.items():
            labels = (model, version, stable, self.slices.label(model, key or None))
            self._refresh.set(self.canary_failed_criteria, labels, count)

    def set_skew(self, check: str, model: str, rates: Mapping[str, float]) -> None:
        """Publish the mismatch rate of each compared feature of a skew check's newest run."""
        for column, rate in rates.items():
            self._refresh.set(self.skew_mismatch_rate, (check, model, column), rate)

    def set_segments(self, check: str, model: str, mode: str, new: int, persisting: int) -> None:
        """Publish how many segments a segment check's newest run reported, new and persisting."""
        for persistence, count in (("new", new), ("persisting", persisting)):
            self._refresh.set(self.segments_found, (check, model, mode, persistence), count)

    def set_alert_states(self, counts: dict[tuple[str, str], int]) -> None:
        """Publish alert counts per (rule, state); each state of a rule is written."""
        for rule in {r for r, _ in counts}:
            for state in ALERT_STATES:
                self._refresh.set(self.alert_states, (rule, state), counts.get((rule, state), 0))

    def set_outbox(self, counts: dict[tuple[str, str], int]) -> None:
        """Publish outbox sizes per (receiver, status); each status of a receiver is written."""
        for receiver in {r for r, _ in counts}:
            for status in OUTBOX_STATES:
                value = counts.get((receiver, status), 0)
                self._refresh.set(self.outbox, (receiver, status), value)

    def set_outcome(
        self,
        model: str,
        version: str,
        metric: str,
        slice_key: str | None,
        value: float,
        baseline: float | None,
    ) -> None:
        """Publish the latest value (and baseline) of one outcome metric in one slice."""
        labels = (model, version, metric, self.slices.label(model, slice_key))
        self._refresh.set(self.outcome_value, labels, value)
        if baseline is not None:
            self._refresh.set(self.outcome_baseline, labels, baseline)

    def set_fairness(
        self,
        model: str,
        version: str,
        attribute: str,
        metric: str,
        slice_key: str | None,
        value: float,
        threshold: float | None,
    ) -> None:
        """Publish one fairness metric of one attribute (or group) and its bound, if any."""
        labels = (model, version, attribute, metric, self.slices.label(model, slice_key))
        self._refresh.set(self.fairness_value, labels, value)
        if threshold is not None:
            self._refresh.set(self.fairness_threshold, labels, threshold)

    def set_estimated(self, model: str, version: str, slice_key: str | None,
                      row: EstimatedSeries) -> None:  # fmt: skip
        """Publish one estimated metric of one slice: value, band, thresholds, realized."""
        labels = (model, version, row.metric, self.slices.label(model, slice_key))
        refresh = self._refresh
        for gauge, value, bound in (
            (self.estimated_value, row.value, None), (self.estimated_realized, row.realized, None),
            (self.estimated_band, row.ci_low, "low"), (self.estimated_band, row.ci_high, "high"),
            (self.estimated_threshold, row.threshold_low, "low"),
            (self.estimated_threshold, row.threshold_high, "high"),
        ):  # fmt: skip
            if value is not None:
                refresh.set(gauge, labels if bound is None else (*labels, bound), value)

    def gate_slice(self, model: str, slice_key: str | None) -> str:
        """The bounded label of a gate slice (`segment=high`; `all` for the whole golden set)."""
        if not slice_key or slice_key == ALL_SLICES:
            return ALL_SLICES
        return self._gate_slices.limit(model, slice_key)

    def record_job_failure(self, job: str) -> None:
        self.job_failures.labels(job=job).inc()

    def set_job_success(self, job: str, timestamp: float) -> None:
        self.job_last_success.labels(job=job).set(timestamp)

    def set_guard_replay(
        self, model: str, seconds: float, providers: dict[str, list[str]] | None = None
    ) -> None:
        """Publish a scheduled replay run: its wall time, and per replayed version the
        providers it ran on (a version's earlier providers are cleared)."""
        self.guard_replay_seconds.labels(model=model).set(seconds)
        for version, names in (providers or {}).items():
            for labels in list(self.guard_replay_provider._metrics):
                if labels[:2] == (model, version):
                    self.guard_replay_provider.remove(*labels)
            for name in names:
                self.guard_replay_provider.labels(model, version, name).set(1)

    def set_guard_divergent(self, model: str, version: str, divergent: bool) -> None:
        self.guard_replay_divergent.labels(model=model, version=version).set(float(divergent))

    def record_component_restart(self, component: str) -> None:
        self.component_restarts.labels(component=component).inc()

    def record_ingested(self, model: str, source: str, count: int = 1) -> None:
        """Count accepted events."""
        self.events_ingested.labels(model=model, source=source).inc(count)

    def record_dead_letter(self, source: str, reason: str, count: int = 1) -> None:
        """Count rejected events; reasons past the cap are counted as "other"."""
        label = self._reasons.limit(source, reason)
        self.dead_letters.labels(source=source, reason=label).inc(count)

    def set_consumer_lag(self, source: str, lag: int) -> None:
        """Set a source's lag in messages."""
        self.consumer_lag.labels(source=source).set(lag)

    def set_intake_backlog(self, requests: int, events: int, lag_s: float) -> None:
        self.intake_backlog_requests.set(requests)
        self.intake_backlog_events.set(events)
        self.intake_lag_seconds.set(lag_s)

    def observe_window_evaluation(self, model: str, seconds: float) -> None:
        """Record how long one window evaluation took."""
        self.window_evaluation_seconds.labels(model=model).observe(seconds)

    def record_delivery_failure(self, receiver: str) -> None:
        """Count one failed notification delivery attempt."""
        self.alert_delivery_failures.labels(receiver=receiver).inc()

    def set_drift(
        self,
        model: str,
        version: str,
        slice_key: str | None,
        column: str,
        method: str,
        value: float,
        threshold: float,
    ) -> None:
        """Publish the latest drift statistic and its threshold for one column and slice."""
        labels = (model, version, self.slices.label(model, slice_key), column, method)
        self._refresh.set(self.drift_score, labels, value)
        self._refresh.set(self.drift_threshold, labels, threshold)

    def set_drifted_columns(
        self, model: str, version: str, slice_key: str | None, count: int
    ) -> None:
        """Publish how many columns drifted in the latest window of one slice."""
        label = self.slices.label(model, slice_key)
        self._refresh.set(self.drifted_columns, (model, version, label), count)

    def set_slo(
        self,
        model: str,
        version: str,
        slice_key: str | None,
        objective: str,
        value: float,
        threshold: float | None,
    ) -> None:
        """Publish a serving objective's latest value (and its bound, when it has one)."""
        labels = (model, version, self.slices.label(model, slice_key), objective)
        self._refresh.set(self.slo_value, labels, value)
        if threshold is not None:
            self._refresh.set(self.slo_threshold, labels, threshold)

    def set_version_info(self, model: str, version: str, settings: Mapping[str, Any]) -> None:
        """Publish a version's optimization settings (`VERSION_INFO_KEYS`, "" when unset)."""
        values = tuple(str(settings.get(k) or "")[:MAX_INFO_VALUE] for k in VERSION_INFO_KEYS)
        self._refresh.set(self.model_version_info, (model, version, *values), 1.0)

    def set_guard_verdict(self, model: str, version: str, verdict: str) -> None:
        """Publish the latest guard verdict; an unknown verdict name is a ValueError."""
        if verdict not in self.guard_verdicts:
            known = ", ".join(self.guard_verdicts)
            raise ValueError(f"unknown guard verdict {verdict!r}; expected one of {known}")
        for state in self.guard_verdicts:
            value = 1.0 if state == verdict else 0.0
            self._refresh.set(self.guard_verdict, (model, version, state), value)

    def set_guard_flip_rate(
        self, model: str, version: str, slice_key: str | None, rate: float, output: str = ""
    ) -> None:
        """Publish the latest reference-vs-candidate flip rate for one gate slice."""
        labels = (model, version, self.gate_slice(model, slice_key), output)
        self._refresh.set(self.guard_flip_rate, labels, rate)

    def _define_measure_metrics(self, registry: CollectorRegistry) -> None:
        # One gauge per registered measure, named after the OpenTelemetry GenAI metric where
        # there is one (`gen_ai_server_time_to_first_token_seconds`), in that metric's unit;
        # `quantile` is one of MEASURE_QUANTILES (a bounded label).
        self.measures: dict[str, Gauge] = {
            m.name: Gauge(
                m.prometheus,
                f"Newest window: {m.description[:-1].lower()} per version and slice, at the "
                "quantiles 0.5, 0.95, 0.99 and 1 (the largest), from the window's sketch.",
                ["model", "version", "slice", "quantile"],
                registry=registry,
            )
            for m in MEASURES.values()
        }

    def set_measure(
        self, model: str, version: str, slice_key: str | None, measure: str, sketch: Quantiles
    ) -> None:
        """Publish a measure's quantiles of one window and slice, in the metric's unit."""
        scale = MEASURES[measure].prometheus_scale
        where = (model, version, self.slices.label(model, slice_key))
        for q in MEASURE_QUANTILES:
            value = sketch.quantile(q)
            if value is not None:
                self._refresh.set(self.measures[measure], (*where, str(q)), value * scale)

    def _define_shadow_metrics(self, registry: CollectorRegistry) -> None:
        # `statistic` is one of SHADOW_STATISTICS: a bounded label.
        self.shadow_statistic = Gauge(
            "modelwatch_shadow_statistic",
            "Paired shadow mode, newest window with pairs: a statistic of a shadow version "
            "against its primary per slice (pairs, flip_rate and its Wilson bounds, "
            "abs_diff_mean/p99 of scores, latency_ratio_mean/p99, mcnemar_p, metric_diff).",
            ["model", "primary_version", "version", "slice", "statistic"],
            registry=registry,
        )

    def set_shadow(
        self,
        model: str,
        primary: str,
        version: str,
        slice_key: str | None,
        stats: Mapping[str, float],
    ) -> list[tuple[str, ...]]:
        """Publish a shadow result's statistics (`SHADOW_STATISTICS`); the label sets set."""
        where = (model, primary, version, self.slices.label(model, slice_key))
        out: list[tuple[str, ...]] = []
        for name in SHADOW_STATISTICS:
            if stats.get(name) is not None:
                self.shadow_statistic.labels(*where, name).set(stats[name])
                out.append((*where, name))
        return out

    def set_guard_metric_drop(
        self,
        model: str,
        version: str,
        slice_key: str | None,
        metric: str,
        drop: float,
        output: str = "",
    ) -> None:
        """Publish the latest task metric drop for one gate slice."""
        labels = (model, version, self.gate_slice(model, slice_key), metric, output)
        self._refresh.set(self.guard_metric_drop, labels, drop)


SHADOW_STATISTICS = (
    "pairs", "flip_rate", "flip_rate_low", "flip_rate_high", "abs_diff_mean", "abs_diff_p99",
    "latency_ratio_mean", "latency_ratio_p99", "mcnemar_p", "metric_diff",
)  # fmt: skip


def http_request_histogram(registry: CollectorRegistry) -> Histogram:
    """API request durations by route template (never the raw path), method and status."""
    return Histogram(
        "modelwatch_http_request_duration_seconds",
        "API request duration by route template, method and status code.",
        ["route", "method", "status"],
        buckets=HTTP_BUCKETS,
        registry=registry,
    )
