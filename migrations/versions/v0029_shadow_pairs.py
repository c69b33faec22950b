"""Paired shadow mode: sides waiting for their pair, and per-window pair summaries.

Revision ID: 0029_shadow_pairs
Revises: 0026_intake_ids
Create Date: 2026-12-05

`shadow_pending` holds, per (model, request id), the primary and/or shadow side of a request
seen so far (and a label that came first) until the pair completes and is labelled, or its
horizon passes (`ix_shadow_pending_model_ts` finds the expired ones). `shadow_windows` holds the
mergeable summary of the pairs of one (model, primary version, shadow version, window, slice):
flip counts, |score difference| and latency-ratio sums and sketches, unpaired sides, and the
correctness pairs of labelled requests (McNemar's discordant counts).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0029_shadow_pairs"
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


def downgrade() -> None:
    op.drop_index("ix_shadow_windows_updated_at", table_name="shadow_windows")
    op.drop_table("shadow_windows")
    op.drop_index("ix_shadow_pending_model_ts", table_name="shadow_pending")
    op.drop_table("shadow_pending")
