"""Guard dashboard: gate runs with their verdicts, flip rates, reference vs candidate latency,
each version's optimization settings (precision, quantization, batching, runtime, meta)
with its newest gate verdict (`mw_model_settings`). The history of scheduled replays, canary
verdicts per slice and paired shadow traffic are on the Releases dashboard (releases.py)."""

from __future__ import annotations

from grafana_foundation_sdk.models import dashboard as dm

from dashboards.panels import (
    MODEL_VERSION,
    dashboard,
    model_version_variables,
    stat_panel,
    table_panel,
    time_series,
)

UID = "modelwatch-guards"

RUNS = f"""SELECT time, version, preset, verdict, decided_by, flip_rate, reference_latency_ms,
  candidate_latency_ms, providers
FROM mw_gate_runs
WHERE {MODEL_VERSION}
ORDER BY time DESC
LIMIT 200"""

FLIP_RATE = f"""SELECT $__timeGroupAlias(time, $__interval), preset AS metric,
  max(flip_rate) AS flip_rate
FROM mw_gate_runs
WHERE {MODEL_VERSION}
GROUP BY 1, 2
ORDER BY 1"""

LATENCY = f"""SELECT $__timeGroupAlias(time, $__interval),
  avg(reference_latency_ms) AS reference, avg(candidate_latency_ms) AS candidate
FROM mw_gate_runs
WHERE {MODEL_VERSION}
GROUP BY 1
ORDER BY 1"""

VERDICTS = f"""SELECT verdict, count(*) AS runs
FROM mw_gate_runs
WHERE {MODEL_VERSION}
GROUP BY verdict
ORDER BY verdict"""

# Every version of the model, whatever the time range: settings describe the build, not a time.
SETTINGS = """SELECT version, precision, quantization, batching, runtime, meta, registered_at,
  verdict, gated_at
FROM mw_model_settings
WHERE model = ${model:sqlstring}
ORDER BY registered_at DESC, version
LIMIT 200"""


def build(datasource: dm.DataSourceRef) -> dm.Dashboard:
    """The guard dashboard, reading `mw_gate_runs`."""
    board = dashboard(UID, "modelwatch / Guards", "Optimized builds against their reference.")
    for variable in model_version_variables(datasource):
        board = board.with_variable(variable)
    flips = time_series(
        "Flip rate",
        "Share of golden-set rows whose prediction differs between reference and candidate.",
        [FLIP_RATE],
        datasource,
        unit="percentunit",
    )
    latency = time_series(
        "Latency: reference vs candidate",
        "Per-batch latency measured on the serving hardware.",
        [LATENCY],
        datasource,
        unit="ms",
    )
    verdicts = stat_panel("Verdicts", "Gate runs per verdict in range.", VERDICTS, datasource)
    runs = table_panel(
        "Gate runs", "Latest runs; decided_by names the criterion.", RUNS, datasource, 18
    )
    settings = table_panel(
        "Optimization settings",
        "How each version was built (models register --precision/--quantization/--batching/"
        "--runtime/--meta) and its newest gate verdict.",
        SETTINGS,
        datasource,
    )
    board = board.with_panel(flips).with_panel(latency).with_panel(verdicts).with_panel(runs)
    return board.with_panel(settings).build()
