"""The large tables become time-partitioned on PostgreSQL; SQLite is left as it is.

Revision ID: 0035_partitions
Revises: 0034_measures
Create Date: 2026-12-05

`window_profiles`, `drift_results` (by `window_start`, daily), `outcome_results` (by
`window_start`, monthly), `dead_letters` (by `created_at`, monthly) and `labeled_predictions`
(by `ts`, daily) are rebuilt as
`PARTITION BY RANGE` tables, each with a DEFAULT partition, the partitions the stored rows need
and those of the coming periods (`monitor.storage.PARTITIONED` and `maintain` own the layout from
here on). PostgreSQL requires the partition key in every unique index: the primary keys `(id)`
of the result tables and of `dead_letters` become `(id, <key>)` (ids stay unique: they come from
the same sequence), that of `labeled_predictions` `(model, request_id, ts)` (the join deletes a
replaced pair first); every other unique key already holds `window_start`, so the result
upserts' ON CONFLICT targets are unchanged.

Each table is renamed aside, its empty partitioned successor is created LIKE it (columns,
defaults, NOT NULL and CHECK constraints), given the same constraint and index names, filled
with one INSERT ... SELECT, and the old table is dropped only when the row counts agree (else
the migration fails and its transaction leaves everything as it was). The views that read a
table (`mw_*`) are dropped before and recreated after from their stored definitions. The
downgrade rebuilds plain tables the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import op
from sqlalchemy import text
from sqlalchemy.engine import Connection

from monitor.storage import PartitionSpec, ensure_partition, next_start, period_start

revision = "0035_partitions"
down_revision = "0034_measures"
branch_labels = None
depends_on = None

# (table, partition key, primary key before, step) as of this revision.
_PROFILE_KEY = ("model", "version", "window_start", "slice_key", "column")
_TABLES = (
    ("window_profiles", "window_start", _PROFILE_KEY, "day"),
    ("drift_results", "window_start", ("id",), "day"),
    ("outcome_results", "window_start", ("id",), "month"),
    ("dead_letters", "created_at", ("id",), "month"),
    ("labeled_predictions", "ts", ("model", "request_id"), "day"),
)  # fmt: skip
_AHEAD = {"day": 7, "month": 2}
_SHAPE = "INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING COMPRESSION INCLUDING STORAGE"

_VIEWS = """WITH RECURSIVE deps(oid) AS (
  SELECT r.ev_class FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
  WHERE d.classid = 'pg_rewrite'::regclass AND d.refobjid = CAST(:t AS regclass)
    AND r.ev_class <> d.refobjid
  UNION
  SELECT r.ev_class FROM deps JOIN pg_depend d ON d.refobjid = deps.oid
  JOIN pg_rewrite r ON r.oid = d.objid
  WHERE d.classid = 'pg_rewrite'::regclass AND r.ev_class <> d.refobjid
)
SELECT c.relname, pg_get_viewdef(c.oid) FROM deps JOIN pg_class c ON c.oid = deps.oid
WHERE c.relkind = 'v' ORDER BY c.oid"""

_CONSTRAINTS = """SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = CAST(:t AS regclass) AND contype IN ('p', 'u')"""

_INDEXES = """SELECT i.indexname, i.indexdef FROM pg_indexes i
WHERE i.schemaname = current_schema() AND i.tablename = :t
AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname
                AND c.conrelid = CAST(:t AS regclass))"""

_SEQUENCES = """SELECT a.attname, pg_get_serial_sequence(:t, a.attname) FROM pg_attribute a
WHERE a.attrelid = CAST(:t AS regclass) AND a.attnum > 0 AND NOT a.attisdropped
AND pg_get_serial_sequence(:t, a.attname) IS NOT NULL"""


def _rebuild(
    conn: Connection, table: str, primary_key: tuple[str, ...], spec: PartitionSpec | None
) -> None:
    """Replace `table` by a partitioned (`spec`) or plain copy with the same rows and names."""
    args = {"t": table}
    views = conn.execute(text(_VIEWS), args).all()
    for name, _ in reversed(views):
        conn.execute(text(f'DROP VIEW "{name}"'))
    constraints = conn.execute(text(_CONSTRAINTS), args).all()
    indexes = conn.execute(text(_INDEXES), args).all()
    sequences = conn.execute(text(_SEQUENCES), args).all()
    old = f"{table}__plain" if spec else f"{table}__parted"
    conn.execute(text(f'ALTER TABLE "{table}" RENAME TO "{old}"'))
    for name, _, _ in constraints:
        conn.execute(text(f'ALTER TABLE "{old}" DROP CONSTRAINT "{name}"'))
    for name, _ in indexes:
        conn.execute(text(f'DROP INDEX "{name}"'))
    by = f' PARTITION BY RANGE ("{spec.key}")' if spec else ""
    conn.execute(text(f'CREATE TABLE "{table}" (LIKE "{old}" {_SHAPE}){by}'))
    for name, kind, definition in constraints:
        if kind == "p":
            definition = "PRIMARY KEY ({})".format(", ".join(f'"{c}"' for c in primary_key))
        conn.execute(text(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}'))
    for _, definition in indexes:
        conn.execute(text(definition))
    for column, sequence in sequences:
        conn.execute(text(f'ALTER SEQUENCE {sequence} OWNED BY "{table}"."{column}"'))
    if spec:
        _create_partitions(conn, spec, old)
    before = conn.scalar(text(f'SELECT count(*) FROM "{old}"'))
    copied = conn.execute(text(f'INSERT INTO "{table}" SELECT * FROM "{old}"')).rowcount
    if copied != before:
        raise RuntimeError(f"{table}: copied {copied} of {before} rows; nothing was changed")
    conn.execute(text(f'DROP TABLE "{old}"'))
    for name, definition in views:
        conn.execute(text(f'CREATE VIEW "{name}" AS {definition}'))


def _create_partitions(conn: Connection, spec: PartitionSpec, source: str) -> None:
    """The DEFAULT partition, one per period the rows of `source` fall in, and those ahead."""
    conn.execute(text(f'CREATE TABLE "{spec.table}_default" PARTITION OF "{spec.table}" DEFAULT'))
    stored = conn.scalars(
        text(
            f"SELECT DISTINCT date_trunc('{spec.step}', \"{spec.key}\" AT TIME ZONE 'UTC') "
            f'FROM "{source}"'
        )
    )
    starts = {t.replace(tzinfo=UTC) for t in stored}
    start = period_start(spec.step, datetime.now(UTC))
    for _ in range(_AHEAD[spec.step] + 1):
        starts.add(start)
        start = next_start(spec.step, start)
    for start in sorted(starts):
        ensure_partition(conn, spec, start)


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    for table, key, primary_key, step in _TABLES:
        spec = PartitionSpec(table, key, key, step)
        keyed = primary_key if key in primary_key else (*primary_key, key)
        _rebuild(conn, table, keyed, spec)


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    for table, _, primary_key, _ in reversed(_TABLES):
        _rebuild(conn, table, primary_key, None)
