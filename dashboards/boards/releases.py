"""Releases dashboard: what the daemon watches without being asked, per model.

Guard verdict history (every gate run, the scheduled golden replays marked `schedule`, from
`mw_guard_history`), the scheduled canary pairs' verdicts per judged slice (`mw_canary_slices`:
a regression confined to `region=eu` shows as that slice's failure under a passing `all`), and
paired shadow mode: `$version` as a shadow against its primary on live traffic (`mw_shadow`),
and the scheduled segment checks: the segments each check's newest run reported, new or
persisting (`mw_segments`), and how many per run (`mw_segment_runs`).
"""

from __future__ import annotations

from grafana_foundation_sdk.models import dashboard as dm

from dashboards.panels import (
    MODEL_VERSION,
    dashboard,
    model_version_variables,
    state_timeline,
    table_panel,
    time_series,
)

UID = "modelwatch-releases"

MODEL = "$__timeFilter(time) AND model = ${model:sqlstring}"

# state codes of the timelines: a verdict's colour
VERDICT_STATES = {0: ("fail", "red"), 1: ("pass", "green"), 2: ("inconclusive", "yellow")}
_CODE = "CASE verdict WHEN 'pass' THEN 1 WHEN 'fail' THEN 0 ELSE 2 END"

GUARD_TIMELINE = f"""SELECT time, version || ' (' || trigger || ')' AS metric, {_CODE} AS verdict
FROM mw_guard_history
WHERE {MODEL}
ORDER BY time"""

GUARD_RUNS = f"""SELECT time, version, trigger, preset, verdict
FROM mw_guard_history
WHERE {MODEL}
ORDER BY time DESC
LIMIT 200"""

CANARY_TIMELINE = f"""SELECT time, version || ' vs ' || stable || ' ' || slice AS metric,
  {_CODE} AS verdict
FROM mw_canary_slices
WHERE {MODEL}
ORDER BY time"""

# Each pair's newest evaluation, slice by slice, failing slices first.
CANARY_NEWEST = f"""SELECT time, version, stable, slice, verdict, failed_criteria, decided_by,
  pair_verdict, correction
FROM mw_canary_slices c
WHERE {MODEL} AND time = (SELECT max(n.time) FROM mw_canary_slices n
  WHERE n.model = c.model AND n.version = c.version AND n.stable = c.stable)
ORDER BY version, stable, failed DESC, slice
LIMIT 200"""

# Paired shadow mode: `$version` is the shadow; counts sum over the range (mergeable).
SHADOW_FLIPS = f"""SELECT $__timeGroupAlias(time, $__interval), primary_version AS metric,
  CAST(sum(flips) AS FLOAT) / NULLIF(sum(decided), 0) AS flip_rate
FROM mw_shadow
WHERE {MODEL_VERSION} AND slice = 'all'
GROUP BY 1, 2
ORDER BY 1"""

SHADOW_PAIRS = f"""SELECT primary_version, slice, sum(pairs) AS pairs,
  CAST(sum(flips) AS FLOAT) / NULLIF(sum(decided), 0) AS flip_rate,
  sum(unpaired_primary) AS unpaired_primary, sum(unpaired_shadow) AS unpaired_shadow,
  sum(labelled) AS labelled, sum(primary_only) AS primary_only_right,
  sum(shadow_only) AS shadow_only_right
FROM mw_shadow
WHERE {MODEL_VERSION}
GROUP BY primary_version, slice
ORDER BY primary_version, slice"""

# Each check's newest run, segment by segment (a newest run that reported none shows none).
SEGMENTS_NEWEST = f"""SELECT time, check_name, mode, segment, persistence, effect, q_value,
  support
FROM mw_segments s
WHERE {MODEL} AND time = (SELECT max(n.time) FROM mw_segment_runs n
  WHERE n.model = s.model AND n.check_name = s.check_name)
ORDER BY check_name, effect DESC
LIMIT 200"""

# A run's counts; zoomed out, the most any run in the interval reported.
SEGMENT_COUNTS = f"""SELECT $__timeGroupAlias(time, $__interval), check_name AS metric,
  max(n_new) AS new, max(n_persisting) AS persisting
FROM mw_segment_runs
WHERE {MODEL}
GROUP BY 1, 2
ORDER BY 1"""


def build(datasource: dm.DataSourceRef) -> dm.Dashboard:
    """The releases dashboard: guard history, canary per slice, shadow pairs."""
    board = dashboard(
        UID,
        "modelwatch / Releases",
        "Scheduled golden replays, canary verdicts per slice and paired shadow traffic.",
    )
    for variable in model_version_variables(datasource):
        board = board.with_variable(variable)
    panels = [
        state_timeline(
            "Guard verdict history",
            "Every gate run of each version: `schedule` is the daemon's scheduled golden "
            "replay (guards.schedule), `manual` a gate run on request.",
            GUARD_TIMELINE,
            datasource,
            VERDICT_STATES,
        ),
        table_panel("Guard runs", "Newest first.", GUARD_RUNS, datasource, 12),
        table_panel(
            "Canary slices, newest evaluation",
            "Each declared canary pair's newest scheduled evaluation per judged slice (all = "
            "the whole traffic), criteria failed after the correction, and the pair's verdict.",
            CANARY_NEWEST,
            datasource,
            12,
        ),
        state_timeline(
            "Canary verdict per slice",
            "Scheduled canary evaluations (canaries:), one row per pair and slice: a failure "
            "confined to one slice fails the pair even when `all` passes.",
            CANARY_TIMELINE,
            datasource,
            VERDICT_STATES,
        ),
        time_series(
            "Shadow flip rate",
            "Paired shadow mode: share of live requests whose predicted class differs between "
            "$version (shadow) and each primary version, all traffic.",
            [SHADOW_FLIPS],
            datasource,
            unit="percentunit",
        ),
        table_panel(
            "Shadow pairs by slice",
            "Pairs, flip rate, sides unpaired after shadow.pair_horizon, and labelled pairs "
            "where only one side was right (McNemar's b and c) in range.",
            SHADOW_PAIRS,
            datasource,
        ),
        table_panel(
            "Weak segments, newest run",
            "Segments each scheduled segment check (segments:) reported in its newest run: "
            "`persisting` when the run before reported it too; label-free modes (estimated, "
            "drift) are estimates.",
            SEGMENTS_NEWEST,
            datasource,
            12,
        ),
        time_series(
            "Segments per run",
            "New and persisting segments reported by each segment check's runs (zoomed out: "
            "the most one run in the interval reported).",
            [SEGMENT_COUNTS],
            datasource,
        ),
    ]
    for panel in panels:
        board = board.with_panel(panel)
    return board.build()
