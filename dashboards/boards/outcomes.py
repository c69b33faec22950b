"""Outcome dashboard: per-slice outcome metrics against their baseline, with confidence bands,
the metric estimated without labels (CBPE, `mw_estimated`) next to the realized one, and the
fairness of protected attributes (`mw_fairness`) in the latest labelled window."""

from __future__ import annotations

from grafana_foundation_sdk.models import dashboard as dm

from dashboards.panels import (
    ANY_TIME,
    ANY_TIME_SLICE,
    MODEL_VERSION,
    MODEL_VERSION_SLICE,
    by_granularity,
    dashboard,
    dashed,
    granularity_variable,
    model_version_variables,
    query_variable,
    stat_panel,
    table_panel,
    time_series,
)

UID = "modelwatch-outcomes"

# At 1d / 7d a point is the metric of the day's or week's merged outcome summaries
# (mw_outcome_periods), not the mean of its windows.
SERIES = by_granularity(
    "mw_outcomes", "mw_outcome_periods",
    "time, model, version, slice, metric, value, ci_low, ci_high, baseline_value",
)  # fmt: skip

BAND = f"""SELECT $__timeGroupAlias(time, $granularity), avg(value) AS value,
  min(ci_low) AS ci_low, max(ci_high) AS ci_high, avg(baseline_value) AS baseline
FROM {SERIES}
WHERE {ANY_TIME_SLICE} AND metric = ${{metric:sqlstring}}
GROUP BY 1
ORDER BY 1"""

BY_SLICE = f"""SELECT $__timeGroupAlias(time, $granularity), slice AS metric, avg(value) AS value
FROM {SERIES}
WHERE {ANY_TIME} AND metric = ${{metric:sqlstring}}
GROUP BY 1, 2
ORDER BY 1"""

ESTIMATED = f"""SELECT $__timeGroupAlias(time, $granularity), avg(estimated) AS estimated,
  min(ci_low) AS ci_low, max(ci_high) AS ci_high, avg(realized) AS realized,
  avg(threshold_low) AS threshold
FROM mw_estimated
WHERE {MODEL_VERSION_SLICE} AND metric = ${{metric:sqlstring}}
GROUP BY 1
ORDER BY 1"""

LATEST = f"""(SELECT max(time) FROM mw_outcomes WHERE {MODEL_VERSION})"""

DEGRADED_NOW = f"""SELECT count(*) AS degraded_slice_metrics
FROM mw_outcomes
WHERE {MODEL_VERSION} AND degraded = 1 AND time = {LATEST}"""

LATEST_TABLE = f"""SELECT slice, metric, value, ci_low, ci_high, baseline_value, tolerance, n,
  status, level
FROM mw_outcomes
WHERE {MODEL_VERSION} AND time = {LATEST}
ORDER BY degraded DESC, slice, metric"""

FAIRNESS_LATEST = f"""(SELECT max(time) FROM mw_fairness WHERE {MODEL_VERSION})"""

FAIRNESS_NOW = f"""SELECT count(*) AS fairness_violations
FROM mw_fairness
WHERE {MODEL_VERSION} AND violated = 1 AND time = {FAIRNESS_LATEST}"""

FAIRNESS_TABLE = f"""SELECT attribute, slice AS grp, metric, value, ci_low, ci_high, threshold, n,
  status, reason
FROM mw_fairness
WHERE {MODEL_VERSION} AND time = {FAIRNESS_LATEST}
ORDER BY violated DESC, attribute, slice, metric"""

SLICES = """SELECT DISTINCT slice FROM mw_outcomes
WHERE model = ${model:sqlstring} AND version = ${version:sqlstring} AND $__timeFilter(time)
ORDER BY 1"""

# Outcome metrics and the metrics estimated without labels (a multiclass model's estimated
# precision is `precision`, its realized outcome metric `macro_precision`): both are choices.
_OF_VERSION = (
    "model = ${model:sqlstring} AND version = ${version:sqlstring} AND $__timeFilter(time)"
)
METRICS = f"""SELECT metric FROM mw_outcomes WHERE {_OF_VERSION}
UNION SELECT metric FROM mw_estimated WHERE {_OF_VERSION}
ORDER BY 1"""


def _band_overrides() -> list[tuple[dm.MatcherConfig, list[dm.DynamicConfigValue]]]:
    # The upper bound fills down to the lower one: Grafana draws the confidence band.
    fill = dm.DynamicConfigValue(id_val="custom.fillBelowTo", value="ci_low")
    hidden_line = dm.DynamicConfigValue(id_val="custom.lineWidth", value=0)
    return [
        (dm.MatcherConfig(id_val="byName", options="ci_high"), [fill, hidden_line]),
        (dm.MatcherConfig(id_val="byName", options="ci_low"), [hidden_line]),
        dashed("baseline"),
    ]


def _estimated_overrides() -> list[tuple[dm.MatcherConfig, list[dm.DynamicConfigValue]]]:
    # The estimate's sampling band is filled like the outcome band; the threshold is dashed.
    return [*_band_overrides()[:2], dashed("threshold")]


def build(datasource: dm.DataSourceRef) -> dm.Dashboard:
    """The outcome dashboard, reading `mw_outcomes`."""
    board = dashboard(UID, "modelwatch / Outcomes", "Per-slice outcome metrics against baseline.")
    for variable in model_version_variables(datasource):
        board = board.with_variable(variable)
    board = board.with_variable(query_variable("slice", "Slice", SLICES, datasource))
    board = board.with_variable(query_variable("metric", "Metric", METRICS, datasource))
    board = board.with_variable(granularity_variable())
    band = time_series(
        "$metric in $slice vs baseline",
        "The metric with its confidence interval (band) and the baseline value (dashed).",
        [BAND],
        datasource,
    )
    for matcher, properties in _band_overrides():
        band = band.with_override(matcher, properties)
    estimated = time_series(
        "Estimated vs realized $metric in $slice",
        "The metric estimated without labels (CBPE) with its ±3 SE band, the realized value "
        "once labels are joined, and the reference-chunk threshold (dashed).",
        [ESTIMATED],
        datasource,
    )
    for matcher, properties in _estimated_overrides():
        estimated = estimated.with_override(matcher, properties)
    by_slice = time_series("$metric by slice", "The metric in every slice.", [BY_SLICE], datasource)
    degraded = stat_panel(
        "Degraded now",
        "Slice and metric pairs outside tolerance in the latest window.",
        DEGRADED_NOW,
        datasource,
    )
    latest = table_panel(
        "Latest window",
        "Every slice and metric in the latest window. `level`: the one-sided significance level "
        "its status was decided at (0.025 per result; stricter, 0.025 / m up to 0.025, where "
        "Holm's correction decides the window's m results together, `outcomes.correction: "
        "family`); empty without a verdict. ci_low/ci_high stay the 95% interval.",
        LATEST_TABLE,
        datasource,
        18,
    )
    unfair = stat_panel(
        "Fairness violations now",
        "Fairness metrics whose whole simultaneous interval is past their bound in the latest "
        "labelled window (each promises at most `fairness.alpha` false alarms).",
        FAIRNESS_NOW,
        datasource,
    )
    fairness = table_panel(
        "Fairness, latest labelled window",
        "Per protected attribute: the comparisons of its groups (grp `all`: demographic parity "
        "difference and ratio, equal opportunity and equalized odds differences) and each "
        "group's rates and calibration error; `insufficient_data` says why.",
        FAIRNESS_TABLE,
        datasource,
        18,
    )
    return (
        board.with_panel(band)
        .with_panel(estimated)
        .with_panel(by_slice)
        .with_panel(degraded)
        .with_panel(latest)
        .with_panel(unfair)
        .with_panel(fairness)
        .build()
    )
