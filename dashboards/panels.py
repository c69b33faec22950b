"""Typed panel and variable helpers shared by every modelwatch dashboard.

Panels query only the `mw_*` SQL views (see `dashboards.views`) through Grafana's PostgreSQL
datasource, with Grafana's macros for the time range and template variables for the selection.
"""

from __future__ import annotations

from collections.abc import Sequence

from grafana_foundation_sdk.builders import common as cb
from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.builders import stat, statetimeline, table, timeseries
from grafana_foundation_sdk.models import common as cm
from grafana_foundation_sdk.models import dashboard as dm

from dashboards._sql import SQL

# The selection every panel filters on; `:sqlstring` makes Grafana quote and escape values.
MODEL_VERSION = (
    "$__timeFilter(time) AND model = ${model:sqlstring} AND version = ${version:sqlstring}"
)
MODEL_VERSION_SLICE = MODEL_VERSION + " AND slice = ${slice:sqlstring}"
# The same without the time filter: for `by_granularity` sources, which filter time themselves.
ANY_TIME = MODEL_VERSION.removeprefix("$__timeFilter(time) AND ")
ANY_TIME_SLICE = ANY_TIME + " AND slice = ${slice:sqlstring}"


def query_variable(
    name: str, label: str, sql: str, datasource: dm.DataSourceRef
) -> db.QueryVariable:
    """A single-select variable whose options are the first column of `sql`."""
    return (
        db.QueryVariable(name)
        .id(name)  # the SDK's default is one all-zero UUID shared by every variable
        .label(label)
        .datasource(datasource)
        .query(sql)
        .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dm.VariableSort.ALPHABETICAL_ASC)
    )


def _legend() -> cb.VizLegendOptions:
    return (
        cb.VizLegendOptions()
        .show_legend(True)
        .display_mode(cm.LegendDisplayMode.LIST)
        .placement(cm.LegendPlacement.BOTTOM)
        .calcs([])
    )


def time_series(
    title: str,
    description: str,
    queries: Sequence[str],
    datasource: dm.DataSourceRef,
    unit: str = "short",
) -> timeseries.Panel:
    """A time-series panel; each query returns `time`, optional `metric`, numeric values."""
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(datasource)
        .unit(unit)
        .legend(_legend())
        .tooltip(cb.VizTooltipOptions().mode(cm.TooltipDisplayMode.MULTI).sort(cm.SortOrder.NONE))
        .line_width(1)
        .fill_opacity(10)
        .show_points(cm.VisibilityMode.AUTO)
        .span_nulls(False)
        .height(8)
        .span(12)
    )
    for ref_id, sql in zip("ABCDEFGH", queries, strict=False):
        panel = panel.with_target(SQL(sql, datasource, ref_id))
    return panel


def stat_panel(
    title: str, description: str, sql: str, datasource: dm.DataSourceRef, unit: str = "short"
) -> stat.Panel:
    """A stat panel showing every row's numeric value (table-format query)."""
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(datasource)
        .unit(unit)
        .with_target(SQL(sql, datasource).table())
        .reduce_options(cb.ReduceDataOptions().values(True).calcs(["lastNotNull"]).fields(""))
        .graph_mode(cm.BigValueGraphMode.NONE)
        .color_mode(cm.BigValueColorMode.VALUE)
        .height(4)
        .span(6)
    )


def table_panel(
    title: str, description: str, sql: str, datasource: dm.DataSourceRef, span: int = 24
) -> table.Panel:
    """A table panel over a table-format query."""
    return (
        table.Panel()
        .title(title)
        .description(description)
        .datasource(datasource)
        .with_target(SQL(sql, datasource).table())
        .show_header(True)
        .height(8)
        .span(span)
    )


def state_timeline(
    title: str,
    description: str,
    sql: str,
    datasource: dm.DataSourceRef,
    states: dict[int, tuple[str, str]],
) -> statetimeline.Panel:
    """A state timeline; `sql` returns `time`, `metric` and a numeric state code."""
    mapping = dm.ValueMap(
        {
            str(code): dm.ValueMappingResult(text=text, color=color)
            for code, (text, color) in states.items()
        }
    )
    return (
        statetimeline.Panel()
        .title(title)
        .description(description)
        .datasource(datasource)
        .with_target(SQL(sql, datasource))
        .mappings([mapping])
        .show_value(cm.VisibilityMode.AUTO)
        .legend(_legend())
        .merge_values(True)
        .line_width(0)
        .fill_opacity(70)
        .height(8)
        .span(24)
    )


def dashed(field: str) -> tuple[dm.MatcherConfig, list[dm.DynamicConfigValue]]:
    """An override drawing fields matching the regexp `field` as dashed lines."""
    matcher = dm.MatcherConfig(id_val="byRegexp", options=field)
    style = {"fill": "dash", "dash": [10, 10]}
    return matcher, [dm.DynamicConfigValue(id_val="custom.lineStyle", value=style)]


# Grafana's time grouping of the SQL time series; 1d and 7d plot per day or week (issue 14).
GRANULARITIES = ("1h", "1d", "7d")


def by_granularity(windows: str, periods: str, columns: str) -> str:
    """A FROM source for a time series with `$granularity`: the window view's rows in the time
    range at `1h`; at `1d` or `7d` the stored day or week results (`periods`, one merged
    comparison per period, plotted at its start) of the periods overlapping the range. Filter
    it with `ANY_TIME` / `ANY_TIME_SLICE`."""
    return (
        f"(SELECT {columns} FROM {windows}\n"
        f"  WHERE ${{granularity:sqlstring}} = '1h' AND $__timeFilter(time)\n"
        f"  UNION ALL SELECT {columns} FROM {periods}\n"
        f"  WHERE granularity = ${{granularity:sqlstring}} AND period_end > $__timeFrom()\n"
        f"    AND time <= $__timeTo()) AS r"
    )


def granularity_variable() -> db.IntervalVariable:
    """`$granularity`: the period each SQL time-series point covers (default the first)."""
    options = [
        dm.VariableOption(text=g, value=g, selected=(i == 0)) for i, g in enumerate(GRANULARITIES)
    ]
    return (
        db.IntervalVariable("granularity")
        .id("granularity")
        .label("Granularity")
        .values(",".join(GRANULARITIES))
        .options(options)
        .current(dm.VariableOption(text=GRANULARITIES[0], value=GRANULARITIES[0], selected=True))
    )


def model_version_variables(datasource: dm.DataSourceRef) -> list[db.QueryVariable]:
    """The `model` and `version` variables every dashboard starts with."""
    return [
        query_variable(
            "model", "Model", "SELECT DISTINCT model FROM mw_versions ORDER BY 1", datasource
        ),
        query_variable(
            "version",
            "Version",
            "SELECT version FROM mw_versions WHERE model = ${model:sqlstring} ORDER BY time DESC",
            datasource,
        ),
    ]


def dashboard(uid: str, title: str, description: str) -> db.Dashboard:
    """A modelwatch dashboard shell: tags, UTC, last 7 days, refresh every minute."""
    return (
        db.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["modelwatch"])
        .timezone("utc")
        .time("now-7d", "now")
        .refresh("1m")
        .editable()
    )
