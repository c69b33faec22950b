"""Per-event measures: one sketch per generative or resource measure per window and slice.

Revision ID: 0034_measures
Revises: 0033_segment_runs
Create Date: 2026-12-05

Events may carry measures (`monitor.common.measures`: time to first token, time per output
token, tokens per second, token counts, CPU, memory, GPU utilisation and memory, batch size,
queue depth). They are kept as one JSON document `{measure: sketch}` in
`window_serving.measures`, NULL for the rows written before (read as no measures).

The view `mw_measures` joins the dashboards' contract (`dashboards.views.VIEW_COLUMNS`): per
window, version, slice and measure the samples counted and p50/p95/p99/max, computed from the
stored sketch buckets exactly as `LatencySketch.quantile` does (as 0028's `mw_latency`).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0034_measures"
down_revision = "0033_segment_runs"
branch_labels = None
depends_on = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
GAMMA = (1 + 0.01) / (1 - 0.01)  # monitor.profiles._latency at RELATIVE_ERROR 1 %
ZERO = -1_000_000  # the zero bucket's key: before every bucket, reported as 0
KEYS = "model, version, window_start, window_end, slice_key, measure"


def _slice(col: str, pg: bool) -> str:
    """The slice key as `region=eu` ("all" for the whole window), as in 0006's views."""
    if pg:
        pairs = (
            f"(SELECT string_agg(e.key || '=' || e.value, ',' ORDER BY e.key) "
            f"FROM jsonb_each_text(CAST({col} AS jsonb)) AS e)"
        )
    else:
        pairs = f"(SELECT group_concat(e.key || '=' || e.value, ',') FROM json_each({col}) AS e)"
    return f"CASE WHEN {col} = '' THEN 'all' ELSE {pairs} END"


def _measures(pg: bool) -> str:
    head = "w.model, w.version, w.window_start, w.window_end, w.slice_key"
    if pg:
        docs = (
            "jsonb_each(CASE WHEN jsonb_typeof(CAST(w.measures AS jsonb)) = 'object' "
            "THEN CAST(w.measures AS jsonb) ELSE CAST('{}' AS jsonb) END)"
        )
        zero, bins = "CAST(s.doc ->> 'zero' AS bigint)", "jsonb_each_text(s.doc -> 'bins')"
    else:
        docs = "json_each(CASE WHEN json_type(w.measures) = 'object' THEN w.measures END)"
        zero, bins = "CAST(json_extract(s.doc, '$.zero') AS integer)", "json_each(s.doc, '$.bins')"
    gamma = f"CAST({GAMMA!r} AS double precision)"
    value = f"CASE WHEN k = {ZERO} THEN 0 ELSE 2 * power({gamma}, k) / ({gamma} + 1) END"

    def q(quantile: float) -> str:
        return f"min(CASE WHEN cum > {quantile} * (n - 1) THEN {value} END)"

    return f"""WITH s AS (
  SELECT {head}, e.key AS measure, e.value AS doc FROM window_serving w, {docs} AS e
), b AS (
  SELECT {KEYS}, {ZERO} AS k, {zero} AS c FROM s
  UNION ALL
  SELECT {KEYS}, CAST(e.key AS integer) AS k, CAST(e.value AS bigint) AS c FROM s, {bins} AS e
), c AS (
  SELECT b.*, sum(c) OVER (PARTITION BY {KEYS} ORDER BY k ROWS UNBOUNDED PRECEDING) AS cum,
    sum(c) OVER (PARTITION BY {KEYS}) AS n
  FROM b
)
SELECT window_end AS time, window_start, model, version, {_slice("slice_key", pg)} AS slice,
  measure, CAST(n AS bigint) AS n, {q(0.5)} AS p50, {q(0.95)} AS p95, {q(0.99)} AS p99,
  max(CASE WHEN c > 0 THEN {value} END) AS max
FROM c
WHERE n > 0
GROUP BY {KEYS}, n"""


def upgrade() -> None:
    op.add_column("window_serving", sa.Column("measures", JSON_DOC, nullable=True))
    pg = op.get_bind().dialect.name == "postgresql"
    op.execute(f"CREATE VIEW mw_measures AS\n{_measures(pg)}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS mw_measures")
    # ALTER TABLE ... DROP COLUMN on both backends (SQLite >= 3.35): a batch copy of the table
    # would break 0028's view `mw_latency`, which reads it.
    op.drop_column("window_serving", "measures")
