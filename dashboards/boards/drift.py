"""Drift dashboard: per-column drift score against its threshold, drifted-column counts."""

from __future__ import annotations

from grafana_foundation_sdk.models import dashboard as dm

from dashboards.panels import (
    ANY_TIME_SLICE,
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

UID = "modelwatch-drift"

# One series per column *and method*: methods have different scales and thresholds, so a max
# across them would compare PSI with a p-value.
# At 1d / 7d a point is the day's or week's stored merged comparison (mw_drift_periods), not
# the worst window of the period.
SERIES = by_granularity(
    "mw_drift", "mw_drift_periods",
    'time, model, version, slice, "column", method, value, threshold, drifted',
)  # fmt: skip

SCORE = f"""SELECT $__timeGroupAlias(time, $granularity), "column" || ' ' || method AS metric,
  max(value) AS value
FROM {SERIES}
WHERE {ANY_TIME_SLICE}
GROUP BY 1, 2
ORDER BY 1"""

THRESHOLD = f"""SELECT $__timeGroupAlias(time, $granularity),
  "column" || ' ' || method || ' threshold' AS metric, max(threshold) AS value
FROM {SERIES}
WHERE {ANY_TIME_SLICE}
GROUP BY 1, 2
ORDER BY 1"""

DRIFTED_OVER_TIME = f"""SELECT $__timeGroupAlias(time, $granularity),
  count(DISTINCT CASE WHEN drifted = 1 THEN "column" END) AS drifted_columns
FROM {SERIES}
WHERE {ANY_TIME_SLICE}
GROUP BY 1
ORDER BY 1"""

LATEST_WINDOW = f"""(SELECT max(time) FROM mw_drift WHERE {MODEL_VERSION_SLICE})"""

DRIFTED_NOW = f"""SELECT count(DISTINCT "column") AS drifted_columns
FROM mw_drift
WHERE {MODEL_VERSION_SLICE} AND drifted = 1 AND time = {LATEST_WINDOW}"""

LATEST_TABLE = f"""SELECT "column", method, value, threshold, p_value, n_reference, n_current,
  status
FROM mw_drift
WHERE {MODEL_VERSION_SLICE} AND time = {LATEST_WINDOW}
ORDER BY drifted DESC, value DESC"""

SLICES = """SELECT DISTINCT slice FROM mw_drift
WHERE model = ${model:sqlstring} AND version = ${version:sqlstring} AND $__timeFilter(time)
ORDER BY 1"""


def build(datasource: dm.DataSourceRef) -> dm.Dashboard:
    """The drift dashboard, reading `mw_drift`."""
    board = dashboard(UID, "modelwatch / Drift", "Which column drifted, in which slice, when.")
    for variable in model_version_variables(datasource):
        board = board.with_variable(variable)
    board = board.with_variable(query_variable("slice", "Slice", SLICES, datasource))
    board = board.with_variable(granularity_variable())
    score = time_series(
        "Drift score by column",
        "Drift statistic per column: the largest window's at 1h, the whole day's or week's "
        "merged comparison at 1d / 7d; dashed: the column's threshold.",
        [SCORE, THRESHOLD],
        datasource,
    ).with_override(*dashed(".* threshold"))
    return (
        board.with_panel(score)
        .with_panel(
            time_series(
                "Drifted columns",
                "Columns whose drift status was 'drift' in each interval.",
                [DRIFTED_OVER_TIME],
                datasource,
            )
        )
        .with_panel(
            stat_panel(
                "Drifted now", "Drifted columns in the latest window.", DRIFTED_NOW, datasource
            )
        )
        .with_panel(
            table_panel(
                "Latest window",
                "Every column's result in the latest window.",
                LATEST_TABLE,
                datasource,
                18,
            )
        )
        .build()
    )
