"""Latency per stage: the sketches of queue, preprocess, postprocess and network time.

Revision ID: 0028_latency_stages
Revises: 0027_shadow_pairs
Create Date: 2026-12-05

Events may carry stage timings (`queue_ms`, `preprocess_ms`, `model_ms`, `postprocess_ms`,
`network_ms`). The model stage already has its column (`window_serving.model_latency`); the
others are kept as one JSON document `{stage: sketch}` in `window_serving.stages`, NULL for the
rows written before (read as no stage timings).

The view `mw_latency` joins the dashboards' contract (`dashboards.views.VIEW_COLUMNS`): per
window, version, slice and stage (`total` for end-to-end latency, then each stage some event
reported) the events counted and p50/p95/p99, computed from the stored sketch buckets exactly as
`LatencySketch.quantile` does (the first bucket whose running count passes rank q × (n - 1),
reported at 2γ^k / (γ + 1)).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0028_latency_stages"
down_revision = "0027_shadow_pairs"
branch_labels = None
depends_on = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
GAMMA = (1 + 0.01) / (1 - 0.01)  # monitor.profiles._latency at RELATIVE_ERROR 1 %
ZERO = -1_000_000  # the zero bucket's key: before every bucket, reported as 0
PARTITION = "model, version, window_start, slice_key, stage"


def _slice(col: str, pg: bool) -> str:
    """The slice key as `region=eu` ("all" for the whole window), as in 0006's views."""
    if pg:
        pairs = (
            f"(SELECT string_agg(e.key || '=' || e.value, ',' ORDER BY e.key) "
            f"FROM jsonb_each_text(CAST({col} AS jsonb)) AS e)"
        )
    else:  # canonical keys are stored sorted
        pairs = f"(SELECT group_concat(e.key || '=' || e.value, ',') FROM json_each({col}) AS e)"
    return f"CASE WHEN {col} = '' THEN 'all' ELSE {pairs} END"


def _latency(pg: bool) -> str:
    head = "w.model, w.version, w.window_start, w.window_end, w.slice_key"
    if pg:
        doc = "CAST({} AS jsonb)"
        # jsonb_each refuses a JSON null or scalar: only an object is expanded
        stages = (
            "jsonb_each(CASE WHEN jsonb_typeof(CAST(w.stages AS jsonb)) = 'object' "
            "THEN CAST(w.stages AS jsonb) ELSE CAST('{}' AS jsonb) END)"
        )
        zero, bins = "CAST(s.doc ->> 'zero' AS bigint)", "jsonb_each_text(s.doc -> 'bins')"
    else:
        doc, stages = "{}", "json_each(CASE WHEN json_type(w.stages) = 'object' THEN w.stages END)"
        zero, bins = "CAST(json_extract(s.doc, '$.zero') AS integer)", "json_each(s.doc, '$.bins')"

    def q(quantile: float) -> str:
        gamma = f"CAST({GAMMA!r} AS double precision)"  # not numeric (PostgreSQL)
        value = f"CASE WHEN k = {ZERO} THEN 0 ELSE 2 * power({gamma}, k) / ({gamma} + 1) END"
        return f"min(CASE WHEN cum > {quantile} * (n - 1) THEN {value} END)"

    return f"""WITH s AS (
  SELECT {head}, 'total' AS stage, {doc.format("w.latency")} AS doc FROM window_serving w
  UNION ALL
  SELECT {head}, 'model' AS stage, {doc.format("w.model_latency")} AS doc FROM window_serving w
  UNION ALL
  SELECT {head}, e.key AS stage, {doc.format("e.value")} AS doc
  FROM window_serving w, {stages} AS e
), b AS (
  SELECT s.model, s.version, s.window_start, s.window_end, s.slice_key, s.stage,
    {ZERO} AS k, {zero} AS c FROM s
  UNION ALL
  SELECT s.model, s.version, s.window_start, s.window_end, s.slice_key, s.stage,
    CAST(e.key AS integer) AS k, CAST(e.value AS bigint) AS c FROM s, {bins} AS e
), c AS (
  SELECT b.*, sum(c) OVER (PARTITION BY {PARTITION} ORDER BY k ROWS UNBOUNDED PRECEDING) AS cum,
    sum(c) OVER (PARTITION BY {PARTITION}) AS n
  FROM b
)
SELECT window_end AS time, window_start, model, version, {_slice("slice_key", pg)} AS slice,
  stage, CAST(n AS bigint) AS n, {q(0.5)} AS p50, {q(0.95)} AS p95, {q(0.99)} AS p99
FROM c
WHERE n > 0
GROUP BY model, version, window_start, window_end, slice_key, stage, n"""


def upgrade() -> None:
    # Plain ALTER TABLE ADD COLUMN on both backends (nullable: no table copy on SQLite).
    op.add_column("window_serving", sa.Column("stages", JSON_DOC, nullable=True))
    pg = op.get_bind().dialect.name == "postgresql"
    op.execute(f"CREATE VIEW mw_latency AS\n{_latency(pg)}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS mw_latency")
    with op.batch_alter_table("window_serving") as batch:
        batch.drop_column("stages")
