"""The SQL views dashboards read: names and columns are the contract with the migrations.

Panels query these views only, never the tables behind them, so storage can change without
touching a dashboard as long as the views keep these columns. The views are created by the
migration `0006_dashboard_views` (and later ones, noted below) on PostgreSQL and SQLite.
`time` is always the timestamp a row is plotted at (a window's end, a run's start, a state
change, a version's registration), timezone-aware UTC on PostgreSQL; `slice` is the slice
key, with "all" for the whole window.
"""

from __future__ import annotations

from collections.abc import Mapping

VIEW_COLUMNS: Mapping[str, tuple[str, ...]] = {
    "mw_versions": ("time", "model", "version"),
    "mw_drift": (
        "time",
        "window_start",
        "model",
        "version",
        "slice",
        "column",
        "method",
        "value",
        "threshold",
        "p_value",
        "n_reference",
        "n_current",
        "status",
        "drifted",
    ),
    "mw_outcomes": (
        "time",
        "window_start",
        "model",
        "version",
        "slice",
        "metric",
        "value",
        "ci_low",
        "ci_high",
        "baseline_value",
        "tolerance",
        "n",
        "status",
        "degraded",
    ),
    # Day and week results, merged comparisons stored by the evaluate job (0017_scale): the
    # columns of mw_drift / mw_outcomes for a period, with `granularity` '1d' or '7d'; `time`
    # is the period's start (the current day or week is plotted before it ends).
    "mw_drift_periods": (
        "time",
        "period_end",
        "granularity",
        "model",
        "version",
        "slice",
        "column",
        "method",
        "value",
        "threshold",
        "p_value",
        "n_reference",
        "n_current",
        "status",
        "drifted",
    ),
    "mw_outcome_periods": (
        "time",
        "period_end",
        "granularity",
        "model",
        "version",
        "slice",
        "metric",
        "value",
        "ci_low",
        "ci_high",
        "baseline_value",
        "tolerance",
        "n",
        "status",
        "degraded",
    ),
    "mw_gate_runs": (
        "time",
        "model",
        "version",
        "preset",
        "verdict",
        "passed",
        "decided_by",
        "flip_rate",
        "reference_latency_ms",
        "candidate_latency_ms",
        "duration_s",
        "providers",
    ),
    "mw_alerts": ("time", "model", "alert", "state", "state_code", "severity", "summary"),
    "mw_notifications": (
        "time",
        "receiver",
        "kind",
        "status",
        "attempts",
        "failed",
        "last_error",
        "sent_at",
    ),
    "mw_ingest": ("time", "window_end", "model", "version", "events"),
    "mw_dead_letters": ("time", "source", "reason", "payload_size"),
    "mw_source_lag": ("time", "source", "partition", "lag", "watermark"),
    # Migration 0016_slo_results.
    "mw_slo": (
        "time",
        "window_start",
        "model",
        "version",
        "slice",
        "objective",
        "value",
        "threshold",
        "n",
        "status",
        "breached",
    ),
    # Migration 0028_latency_stages: latency percentiles per window, version, slice and stage
    # (`total` end to end, then each stage events reported: queue, preprocess, model, ...).
    "mw_latency": (
        "time",
        "window_start",
        "model",
        "version",
        "slice",
        "stage",
        "n",
        "p50",
        "p95",
        "p99",
    ),
    "mw_model_settings": (
        "time",
        "model",
        "version",
        "precision",
        "quantization",
        "batching",
        "runtime",
        "meta",
        "registered_at",
        "verdict",
        "gated_at",
    ),
    # Migration 0018_estimated_results.
    "mw_estimated": (
        "time",
        "window_start",
        "model",
        "version",
        "slice",
        "metric",
        "estimated",
        "ci_low",
        "ci_high",
        "realized",
        "threshold_low",
        "threshold_high",
        "n",
        "status",
        "alerting",
    ),
    # Migration 0027_shadow_pairs: paired shadow mode per window, version pair and slice.
    "mw_shadow": (
        "time",
        "window_start",
        "model",
        "primary_version",
        "version",
        "slice",
        "pairs",
        "decided",
        "flips",
        "flip_rate",
        "abs_diff_mean",
        "latency_ratio_mean",
        "unpaired_primary",
        "unpaired_shadow",
        "labelled",
        "primary_only",
        "shadow_only",
    ),
    # The Releases dashboard (0030_releases_views): every gate run with what started it
    # (`schedule` for the daemon's scheduled replay, `manual` otherwise), and each scheduled canary
    # evaluation per judged slice ("all" is the whole traffic) beside the pair's verdict.
    "mw_guard_history": ("time", "model", "version", "preset", "verdict", "passed", "trigger"),
    "mw_canary_slices": (
        "time",
        "model",
        "version",
        "stable",
        "slice",
        "verdict",
        "failed",
        "failed_criteria",
        "decided_by",
        "pair_verdict",
        "correction",
    ),
}

# state_code in mw_alerts, drawn by the alert timeline.
ALERT_STATE_CODES: Mapping[int, tuple[str, str]] = {
    0: ("resolved", "green"),
    1: ("pending", "yellow"),
    2: ("firing", "red"),
}
