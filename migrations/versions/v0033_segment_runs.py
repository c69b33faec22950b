"""History of scheduled weak-segment searches.

Revision ID: 0033_segment_runs
Revises: 0032_fairness
Create Date: 2026-12-05

`segment_runs` holds one row per scheduled run of a segment check (`segments` in the config):
its mode, status, row count, how many segments it reported and how many of them are new (not
in the check's previous run), and the whole report `GET /v1/models/{model}/segments` serves.
Read newest first per check and per model; deleted by retention after
`scheduler.retention_days`. Two views join the dashboards' contract
(`dashboards.views.VIEW_COLUMNS`): `mw_segment_runs`, one row per run, and `mw_segments`, one
row per segment a run reported (its description, persistence, effect, q-value and support).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0033_segment_runs"
down_revision = "0032_fairness"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "segment_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("check_name", sa.String(100), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("mode", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("n_rows", sa.Integer(), nullable=False),
        sa.Column("n_segments", sa.Integer(), nullable=False),
        sa.Column("n_new", sa.Integer(), nullable=False),
        sa.Column("report", JSON_DOC, nullable=False),
        sa.Column("evaluated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_segment_runs")),
    )
    op.create_index("ix_segment_runs_check", "segment_runs", ["check_name", "evaluated_at"])
    op.create_index("ix_segment_runs_model", "segment_runs", ["model", "evaluated_at"])
    op.create_index("ix_segment_runs_evaluated_at", "segment_runs", ["evaluated_at"])
    pg = op.get_bind().dialect.name == "postgresql"
    op.execute(f"CREATE VIEW mw_segment_runs AS\n{RUNS_VIEW}")
    op.execute(f"CREATE VIEW mw_segments AS\n{_segments(pg)}")


def _segments(pg: bool) -> str:
    if pg:
        each = "jsonb_array_elements(CAST(r.report AS jsonb) -> 'segments') AS s"

        def field(name: str) -> str:
            return f"(s.value ->> '{name}')"

        number = "DOUBLE PRECISION"
    else:
        each = "json_each(r.report, '$.segments') AS s"

        def field(name: str) -> str:
            return f"json_extract(s.value, '$.{name}')"

        number = "REAL"
    return f"""SELECT r.evaluated_at AS time, r.model, r.check_name, r.mode,
  {field("description")} AS segment, {field("persistence")} AS persistence,
  CAST({field("effect")} AS {number}) AS effect, CAST({field("q_value")} AS {number}) AS q_value,
  CAST({field("support")} AS INTEGER) AS support
FROM segment_runs r, {each}"""


RUNS_VIEW = """SELECT evaluated_at AS time, model, check_name, mode, status, n_rows,
  n_segments, n_new, n_segments - n_new AS n_persisting
FROM segment_runs"""


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS mw_segments")
    op.execute("DROP VIEW IF EXISTS mw_segment_runs")
    for index in ("ix_segment_runs_evaluated_at", "ix_segment_runs_model", "ix_segment_runs_check"):
        op.drop_index(index, table_name="segment_runs")
    op.drop_table("segment_runs")
