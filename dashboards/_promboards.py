"""Dashboards over modelwatch's Prometheus metrics: drift, outcomes, guards, operations.

Serving SLO panels (latency p95/p99, error rate, cost per 1k against their bounds) are on the
operations board; the guards board has a table of each version's optimization settings.

They need no SQL database, so SQLite deployments and the demo get dashboards too; they are
exported next to the PostgreSQL set (`dashboards.boards`). Every panel's queries are in
`PANEL_QUERIES` so a test can run each against a real Prometheus. Series that compare drift
methods keep one method per series (PSI and a p-value never share a max).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from grafana_foundation_sdk.builders import common as cb
from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.builders import prometheus, table, timeseries
from grafana_foundation_sdk.models import common as cm
from grafana_foundation_sdk.models import dashboard as dm
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from dashboards.panels import dashboard

DATASOURCE_TYPE = "prometheus"
DEFAULT_DATASOURCE_UID = "modelwatch-prometheus"

SEL = 'model="$model",version=~"$version"'
# Estimated metrics of the whole window; the mean reconstruction error is drawn on its own.
EST = SEL + ',slice="all",metric!="reconstruction_error"'
ERR = SEL + ',metric="reconstruction_error"'

# uid -> (title, description, [(panel title, unit, [(expr, legend)])])
Panel = tuple[str, str, list[tuple[str, str]]]

# Serving SLO panels: (title, unit, objectives); whole-window values against their bounds.
SLO_PANELS: list[tuple[str, str, str]] = [
    ("Latency p95/p99 vs SLO", "ms", "latency_p95_ms|latency_p99_ms"),
    ("Error rate vs SLO", "percentunit", "error_rate"),
    ("Cost per 1k predictions", "currencyUSD", "cost_per_1k"),
]


def _slo_panel(title: str, unit: str, objectives: str) -> Panel:
    sel = f'{SEL},slice="all",objective=~"{objectives}"'
    return (
        title,
        unit,
        [
            (f"modelwatch_slo_value{{{sel}}}", "{{version}} {{objective}}"),
            (f"modelwatch_slo_threshold{{{sel}}}", "SLO {{objective}} ({{version}})"),
        ],
    )


SPECS: dict[str, tuple[str, str, list[Panel]]] = {
    "modelwatch-prom-drift": (
        "modelwatch / Drift (Prometheus)",
        "Latest drift statistic per column, method and slice, against its threshold.",
        [
            (
                "Drift score by column and method",
                "short",
                [(f"modelwatch_drift_score{{{SEL}}}", "{{column}} {{method}} {{slice}}")],
            ),
            (
                "Score relative to threshold (1 = at threshold)",
                "short",
                [
                    (
                        f"modelwatch_drift_score{{{SEL}}} / modelwatch_drift_threshold{{{SEL}}}",
                        "{{column}} {{method}} {{slice}}",
                    )
                ],
            ),
            (
                "Drifted columns",
                "short",
                [(f"modelwatch_drifted_columns{{{SEL}}}", "{{version}} {{slice}}")],
            ),
        ],
    ),
    "modelwatch-prom-outcomes": (
        "modelwatch / Outcomes (Prometheus)",
        "Latest outcome metrics per slice against their baseline.",
        [
            (
                "Outcome metric by slice",
                "short",
                [
                    (f"modelwatch_outcome_value{{{SEL}}}", "{{metric}} {{slice}}"),
                    (f"modelwatch_outcome_baseline{{{SEL}}}", "{{metric}} {{slice}} baseline"),
                ],
            ),
            (
                "Estimated vs realized (whole window)",
                "short",
                [
                    (f"modelwatch_estimated_value{{{EST}}}", "{{metric}} estimated {{version}}"),
                    (
                        f"modelwatch_estimated_realized{{{EST}}}",
                        "{{metric}} realized ({{version}})",
                    ),
                    (
                        f'modelwatch_estimated_threshold{{{EST},bound="low"}}',
                        "{{metric}} threshold {{version}}",
                    ),
                ],
            ),
            (
                "Multivariate drift: mean reconstruction error vs bounds",
                "short",
                [
                    (f"modelwatch_estimated_value{{{ERR}}}", "{{slice}} ({{version}})"),
                    (f"modelwatch_estimated_threshold{{{ERR}}}", "bound {{bound}} ({{version}})"),
                ],
            ),
        ],
    ),
    "modelwatch-prom-guards": (
        "modelwatch / Guards (Prometheus)",
        "Latest gate run per version: verdict, flip rate and metric drop per gate slice.",
        [
            (
                "Flip rate by gate slice",
                "percentunit",
                [(f"modelwatch_guard_flip_rate{{{SEL}}}", "{{version}} {{slice}} {{output}}")],
            ),
            (
                "Metric drop by gate slice",
                "short",
                [(f"modelwatch_guard_metric_drop{{{SEL}}}", "{{version}} {{metric}} {{slice}}")],
            ),
            (
                "Verdict",
                "short",
                [(f"modelwatch_guard_verdict{{{SEL}}} == 1", "{{version}} {{verdict}}")],
            ),
        ],
    ),
    "modelwatch-prom-operations": (
        "modelwatch / Operations (Prometheus)",
        "Ingest, dead letters, alerts, outbox, jobs and API latency of the daemon.",
        [
            (
                "Events ingested per second",
                "short",
                [("sum by (source) (rate(modelwatch_events_ingested_total[5m]))", "{{source}}")],
            ),
            (
                "Dead letters per second",
                "short",
                [("sum by (reason) (rate(modelwatch_dead_letters_total[5m]))", "{{reason}}")],
            ),
            ("Alerts by state", "short", [("sum by (state) (modelwatch_alerts)", "{{state}}")]),
            (
                "Outbox: pending and dead notifications",
                "short",
                [
                    (
                        'sum by (status) (modelwatch_outbox_notifications{status=~"pending|dead"})',
                        "{{status}}",
                    )
                ],
            ),
            (
                "API latency p95 by route",
                "s",
                [
                    (
                        "histogram_quantile(0.95, sum by (le, route) "
                        "(rate(modelwatch_http_request_duration_seconds_bucket[5m])))",
                        "{{route}}",
                    )
                ],
            ),
            ("Running builds", "short", [("modelwatch_build_info", "{{version}}")]),
            *[_slo_panel(*spec) for spec in SLO_PANELS],
            (
                "Latency p95 by stage",
                "s",
                [(f"modelwatch_latency_stage_p95_seconds{{{SEL}}}", "{{version}} {{stage}}")],
            ),
        ],
    ),
}

# uid -> [(table title, description, instant expr)]: one row per series, labels as columns.
TABLES: dict[str, list[tuple[str, str, str]]] = {
    "modelwatch-prom-guards": [
        (
            "Optimization settings",
            "Precision, quantization, batching and runtime of the model's newest versions "
            "(models register), from modelwatch_model_version_info.",
            'modelwatch_model_version_info{model="$model"}',
        )
    ],
}

PANEL_QUERIES: Mapping[str, list[str]] = {
    **{
        f"{uid}/{title}": [expr for expr, _ in queries]
        for uid, (_, _, panels) in SPECS.items()
        for title, _, queries in panels
    },
    **{f"{uid}/{title}": [expr] for uid, tables in TABLES.items() for title, _, expr in tables},
}


def datasource_ref(uid: str = DEFAULT_DATASOURCE_UID) -> dm.DataSourceRef:
    """A reference to the Prometheus datasource the panels read."""
    return dm.DataSourceRef(type_val=DATASOURCE_TYPE, uid=uid)


def _variable(name: str, label: str, query: str, ref: dm.DataSourceRef) -> db.QueryVariable:
    return (
        db.QueryVariable(name)
        .id(name)
        .label(label)
        .datasource(ref)
        .query(query)
        .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dm.VariableSort.ALPHABETICAL_ASC)
    )


def _variables(ref: dm.DataSourceRef) -> list[db.QueryVariable]:
    models = 'label_values({__name__=~"modelwatch_.*",model!="*"}, model)'
    versions = 'label_values({__name__=~"modelwatch_.*",model="$model"}, version)'
    model = _variable("model", "Model", models, ref)
    version = _variable("version", "Version", versions, ref)
    return [model, version.multi(True).include_all(True).all_value(".*")]


def _panel(title: str, unit: str, queries: list[tuple[str, str]], ref: dm.DataSourceRef) -> Any:
    legend = (
        cb.VizLegendOptions()
        .show_legend(True)
        .display_mode(cm.LegendDisplayMode.LIST)
        .placement(cm.LegendPlacement.BOTTOM)
        .calcs([])
    )
    tooltip = cb.VizTooltipOptions().mode(cm.TooltipDisplayMode.MULTI).sort(cm.SortOrder.NONE)
    panel = (
        timeseries.Panel()
        .title(title)
        .datasource(ref)
        .unit(unit)
        .legend(legend)
        .tooltip(tooltip)
        .line_width(1)
        .fill_opacity(10)
        .show_points(cm.VisibilityMode.AUTO)
        .span_nulls(False)
        .height(8)
        .span(12)
    )
    for ref_id, (expr, series) in zip("ABCDEFGH", queries, strict=False):
        target = prometheus.Dataquery().expr(expr).legend_format(series).ref_id(ref_id)
        panel = panel.with_target(target.datasource(ref))
    return panel


def _table(title: str, description: str, expr: str, ref: dm.DataSourceRef) -> Any:
    """An instant query as a table: one row per series, its labels as columns."""
    hidden = {"Time": True, "Value": True, "__name__": True, "instance": True, "job": True}
    organize = dm.DataTransformerConfig(id_val="organize", options={"excludeByName": hidden})
    target = (
        prometheus.Dataquery()
        .expr(expr)
        .instant()
        .format(PromQueryFormat.TABLE)
        .ref_id("A")
        .datasource(ref)
    )
    return (
        table.Panel()
        .title(title)
        .description(description)
        .datasource(ref)
        .with_target(target)
        .with_transformation(organize)
        .show_header(True)
        .height(8)
        .span(12)
    )


def _builder(uid: str) -> Callable[[dm.DataSourceRef], dm.Dashboard]:
    title, description, panels = SPECS[uid]

    def build(ref: dm.DataSourceRef) -> dm.Dashboard:
        board = dashboard(uid, title, description)
        for variable in _variables(ref):
            board = board.with_variable(variable)
        for panel_title, unit, queries in panels:
            board = board.with_panel(_panel(panel_title, unit, queries, ref))
        for table_title, about, expr in TABLES.get(uid, []):
            board = board.with_panel(_table(table_title, about, expr, ref))
        return board.build()

    return build


PROM_BOARDS: Mapping[str, Callable[[dm.DataSourceRef], dm.Dashboard]] = {
    uid: _builder(uid) for uid in SPECS
}
