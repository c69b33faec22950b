"""Views of the Releases dashboard: guard verdict history and canary verdicts per slice.

Revision ID: 0030_releases_views
Revises: 0029_canary_skew_runs
Create Date: 2026-12-05

`mw_guard_history` is one row per stored gate run (`gate_runs`) with what started it: `schedule`
for the daemon's scheduled golden replay (`run.trigger` of the verdict document), `manual`
otherwise (`guards gate`, the API). `mw_canary_slices` is one row per scheduled canary
evaluation (`canary_runs`) and judged slice (`region=eu`, or `all` for the whole traffic), with
the slice's verdict, how many of its criteria failed after the correction and which, beside the
pair's overall verdict. Both join the dashboards' contract (`dashboards.views.VIEW_COLUMNS`).
"""

from __future__ import annotations

from alembic import op

revision = "0030_releases_views"
down_revision = "0029_canary_skew_runs"
branch_labels = None
depends_on = None


def _guard_history(pg: bool) -> str:
    trigger = (
        "(g.verdict_json -> 'run' ->> 'trigger')"
        if pg
        else "json_extract(g.verdict_json, '$.run.trigger')"
    )
    return f"""SELECT g.created_at AS time, g.model, g.version, g.preset, g.verdict,
  CASE WHEN g.verdict = 'pass' THEN 1 ELSE 0 END AS passed,
  CASE WHEN {trigger} = 'schedule' THEN 'schedule' ELSE 'manual' END AS trigger
FROM gate_runs g"""


def _canary_slices(pg: bool) -> str:
    if pg:
        each = "jsonb_array_elements(CAST(r.report AS jsonb) -> 'slices') AS s"
        label, verdict = "(s.value ->> 'slice')", "(s.value ->> 'verdict')"
        crit = "jsonb_array_elements(s.value -> 'criteria') AS c"
        name, status = "(c.value ->> 'name')", "(c.value ->> 'status')"
        agg = "string_agg"
    else:
        each = "json_each(r.report, '$.slices') AS s"
        label = "json_extract(s.value, '$.slice')"
        verdict = "json_extract(s.value, '$.verdict')"
        crit = "json_each(s.value, '$.criteria') AS c"
        name = "json_extract(c.value, '$.name')"
        status = "json_extract(c.value, '$.status')"
        agg = "group_concat"
    return f"""SELECT r.evaluated_at AS time, r.model, r.canary AS version, r.stable,
  {label} AS slice, {verdict} AS verdict,
  CASE WHEN {verdict} = 'fail' THEN 1 ELSE 0 END AS failed,
  (SELECT count(*) FROM {crit} WHERE {status} = 'fail') AS failed_criteria,
  (SELECT {agg}({name}, ', ') FROM {crit} WHERE {status} = 'fail') AS decided_by,
  r.verdict AS pair_verdict, r.correction
FROM canary_runs r, {each}"""


def upgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    op.execute(f"CREATE VIEW mw_guard_history AS\n{_guard_history(pg)}")
    op.execute(f"CREATE VIEW mw_canary_slices AS\n{_canary_slices(pg)}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS mw_canary_slices")
    op.execute("DROP VIEW IF EXISTS mw_guard_history")
