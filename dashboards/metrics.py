"""Prometheus metric definitions, registered on an injected `CollectorRegistry`.

Labels are bounded: `model` and `version` come from stored model versions, `column` from the
model's schema, `source` and `receiver` from the config file, and `slice` only from configured
slice columns through :class:`~dashboards.labels.SliceLabels` (a cap per column, then "other").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from dashboards.labels import LabelLimiter, SliceLabels
from monitor.config import ModelConfig

# Window evaluation runs from milliseconds (small windows) to minutes (big backfills).
EVALUATION_BUCKETS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
GUARD_VERDICTS: tuple[str, ...] = ("pass", "fail", "inconclusive")
# Dead-letter reasons are free text in principle; only this many distinct ones become labels.
MAX_DEAD_LETTER_REASONS = 20


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
        self._define_ingest_metrics(registry)
        self._define_result_metrics(registry)
        self._define_health_metrics(registry)

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
        self.guard_verdict = Gauge(
            "modelwatch_guard_verdict",
            "Latest guard verdict as a state set: 1 for the current verdict, 0 for the others.",
            ["model", "version", "verdict"],
            registry=registry,
        )
        self.guard_flip_rate = Gauge(
            "modelwatch_guard_flip_rate",
            "Fraction of golden-set rows whose predicted class differs between reference and "
            "candidate in the latest guard run.",
            ["model", "version", "slice"],
            registry=registry,
        )
        # `objective` is one of the fixed SLO keys (monitor.slo.OBJECTIVES).
        self.slo_value = Gauge(
            "modelwatch_slo_value",
            "Latest window's value of a serving objective (latency percentile in ms, error "
            "rate, requests per second, dollars per 1,000 predictions) per slice.",
            ["model", "version", "slice", "objective"],
            registry=registry,
        )
        self.slo_threshold = Gauge(
            "modelwatch_slo_threshold",
            "The configured bound of a serving objective.",
            ["model", "version", "slice", "objective"],
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

    def record_job_failure(self, job: str) -> None:
        self.job_failures.labels(job=job).inc()

    def set_job_success(self, job: str, timestamp: float) -> None:
        self.job_last_success.labels(job=job).set(timestamp)

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
        self.drift_score.labels(*labels).set(value)
        self.drift_threshold.labels(*labels).set(threshold)

    def set_drifted_columns(
        self, model: str, version: str, slice_key: str | None, count: int
    ) -> None:
        """Publish how many columns drifted in the latest window of one slice."""
        label = self.slices.label(model, slice_key)
        self.drifted_columns.labels(model=model, version=version, slice=label).set(count)

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
        self.slo_value.labels(*labels).set(value)
        if threshold is not None:
            self.slo_threshold.labels(*labels).set(threshold)

    def set_guard_verdict(self, model: str, version: str, verdict: str) -> None:
        """Publish the latest guard verdict; an unknown verdict name is a ValueError."""
        if verdict not in self.guard_verdicts:
            known = ", ".join(self.guard_verdicts)
            raise ValueError(f"unknown guard verdict {verdict!r}; expected one of {known}")
        for state in self.guard_verdicts:
            value = 1.0 if state == verdict else 0.0
            self.guard_verdict.labels(model=model, version=version, verdict=state).set(value)

    def set_guard_flip_rate(
        self, model: str, version: str, slice_key: str | None, rate: float
    ) -> None:
        """Publish the latest reference-vs-candidate flip rate for one slice."""
        label = self.slices.label(model, slice_key)
        self.guard_flip_rate.labels(model=model, version=version, slice=label).set(rate)
