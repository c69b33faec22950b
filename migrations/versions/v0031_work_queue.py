"""The shared evaluation work queue: procrastinate's schema, on PostgreSQL only.

Revision ID: 0031_work_queue
Revises: 0030_releases_views
Create Date: 2026-12-05

On PostgreSQL every replica's evaluation job takes units (one model's changed windows) from a
procrastinate queue (`monitor/app/daemon/_work_queue.py`, docs/architecture.md "Evaluation
shared across replicas"). Its tables, types, functions and triggers (all named
`procrastinate_*`) are procrastinate's own schema, applied here because migrations are the only
way the schema changes; the dependency is pinned to the minor version whose schema this
applies (`procrastinate~=3.10.0`): moving to another minor version is a new revision that
applies the SQL files procrastinate ships for that step (`procrastinate/sql/migrations/`).
SQLite keeps evaluation in one process and gets nothing.
"""

from __future__ import annotations

from alembic import op
from procrastinate.schema import SchemaManager

revision = "0031_work_queue"
down_revision = "0030_releases_views"
branch_labels = None
depends_on = None

TABLES = (
    "procrastinate_events",
    "procrastinate_periodic_defers",
    "procrastinate_jobs",
    "procrastinate_workers",
)
TYPES = (
    "procrastinate_job_to_defer_v1",
    "procrastinate_job_event_type",
    "procrastinate_job_status",
)
# Every function procrastinate's schema created (their names and signatures vary by version).
DROP_FUNCTIONS = r"""
DO $$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
             JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE p.proname LIKE 'procrastinate\_%' AND n.nspname = current_schema()
  LOOP
    EXECUTE 'DROP FUNCTION ' || f;
  END LOOP;
END $$;
"""


def _execute(sql: str) -> None:
    # The driver's own execute: the schema's `%` and `:` are SQL, not bind parameters.
    op.get_bind().connection.driver_connection.execute(sql)  # type: ignore[union-attr]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _execute(SchemaManager.get_schema())


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _execute(f"DROP TABLE IF EXISTS {', '.join(TABLES)} CASCADE")
    _execute(DROP_FUNCTIONS)
    _execute(f"DROP TYPE IF EXISTS {', '.join(TYPES)}")
