"""Paired shadow mode: sides waiting for their pair, and per-window pair summaries.

Revision ID: 0027_shadow_pairs
Revises: 0026_intake_ids
Create Date: 2026-12-05

`shadow_pending` holds, per (model, request id), the primary and/or shadow side of a request
seen so far (and a label that came first) until the pair completes and is labelled, or its
horizon passes (`ix_shadow_pending_model_ts` finds the expired ones). `shadow_windows` holds the
mergeable summary of the pairs of one (model, primary version, shadow version, window, slice):
flip counts, |score difference| and latency-ratio sums and sketches, unpaired sides, and the
correctness pairs of labelled requests (McNemar's discordant counts). The view `mw_shadow`
joins the dashboards' contract (`dashboards.views.VIEW_COLUMNS`): one row per window, version
pair and slice (`region=eu`, or `all`), with its counts and the flip rate, mean |score
difference| and mean latency ratio of the window (panels over longer ranges sum the counts).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0027_shadow_pairs"
down_revision = "0026_intake_ids"
branch_labels = None
depends_on = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)
_COUNTS = (
    "pairs", "decided", "flips", "scored", "timed", "unpaired_primary", "unpaired_shadow",
    "labelled", "both_correct", "primary_only", "shadow_only", "both_wrong",
)  # fmt: skip
_SUMS = ("abs_diff_sum", "ratio_sum", "error_diff_sum", "error_diff_squares")


def _slice(col: str, pg: bool) -> str:
    """The slice key as `region=eu` ("all" for the whole window), as in 0016's views."""
    if pg:
        pairs = (
            f"(SELECT string_agg(e.key || '=' || e.value, ',' ORDER BY e.key) "
            f"FROM jsonb_each_text(CAST({col} AS jsonb)) AS e)"
        )
    else:  # canonical keys are stored sorted
        pairs = f"(SELECT group_concat(e.key || '=' || e.value, ',') FROM json_each({col}) AS e)"
    return f"CASE WHEN {col} = '' THEN 'all' ELSE {pairs} END"


def _view(pg: bool) -> str:
    return f"""SELECT s.window_end AS time, s.window_start, s.model, s.primary_version,
  s.shadow_version AS version, {_slice("s.slice_key", pg)} AS slice, s.pairs, s.decided, s.flips,
  CAST(s.flips AS FLOAT) / NULLIF(s.decided, 0) AS flip_rate,
  s.abs_diff_sum / NULLIF(s.scored, 0) AS abs_diff_mean,
  s.ratio_sum / NULLIF(s.timed, 0) AS latency_ratio_mean,
  s.unpaired_primary, s.unpaired_shadow, s.labelled, s.primary_only, s.shadow_only
FROM shadow_windows s"""


def upgrade() -> None:
    op.create_table(
        "shadow_pending",
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("request_id", sa.String(200), nullable=False),
        sa.Column("ts", TS, nullable=False),
        sa.Column("paired", sa.Boolean(), nullable=False),
        sa.Column("body", JSON_DOC, nullable=False),
        sa.PrimaryKeyConstraint("model", "request_id", name=op.f("pk_shadow_pending")),
    )
    op.create_index("ix_shadow_pending_model_ts", "shadow_pending", ["model", "ts"])
    op.create_table(
        "shadow_windows",
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("primary_version", sa.String(100), nullable=False),
        sa.Column("shadow_version", sa.String(100), nullable=False),
        sa.Column("window_start", TS, nullable=False),
        sa.Column("slice_key", sa.String(500), nullable=False),
        sa.Column("window_end", TS, nullable=False),
        *(sa.Column(name, sa.BigInteger(), nullable=False) for name in _COUNTS),
        *(sa.Column(name, sa.Float(), nullable=False) for name in _SUMS),
        sa.Column("abs_diff", JSON_DOC, nullable=False),
        sa.Column("latency_ratio", JSON_DOC, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint(
            "model",
            "primary_version",
            "shadow_version",
            "window_start",
            "slice_key",
            name=op.f("pk_shadow_windows"),
        ),
    )
    op.create_index("ix_shadow_windows_updated_at", "shadow_windows", ["updated_at"])
    pg = op.get_bind().dialect.name == "postgresql"
    op.execute(f"CREATE VIEW mw_shadow AS\n{_view(pg)}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS mw_shadow")
    op.drop_index("ix_shadow_windows_updated_at", table_name="shadow_windows")
    op.drop_table("shadow_windows")
    op.drop_index("ix_shadow_pending_model_ts", table_name="shadow_pending")
    op.drop_table("shadow_pending")
