"""Dashboard views: the stable SQL contract Grafana's panels query (see dashboards/views.py).

Revision ID: 0006_dashboard_views
Revises: 0004_collectors
Create Date: 2026-11-30

Each view is written per dialect where PostgreSQL and SQLite differ (JSON access). The SQL is
frozen here, as migrations must be; `dashboards.views.VIEW_COLUMNS` states the columns and a
test checks both agree on both backends.
"""

from __future__ import annotations

from alembic import op

revision = "0006_dashboard_views"
down_revision = "0004_collectors"
branch_labels = None
depends_on = None

# name -> {dialect or "*": SELECT ...}
VIEWS: dict[str, dict[str, str]] = {
    "mw_versions": {
        "*": """
SELECT v.created_at AS time, m.name AS model, v.version AS version
FROM model_versions v JOIN models m ON m.id = v.model_id
""",
    },
}


def _sql(name: str, dialect: str) -> str:
    by_dialect = VIEWS[name]
    return by_dialect.get(dialect, by_dialect.get("*", ""))


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    for name in VIEWS:
        op.execute(f"CREATE VIEW {name} AS {_sql(name, dialect).strip()}")


def downgrade() -> None:
    for name in reversed(list(VIEWS)):
        op.execute(f"DROP VIEW IF EXISTS {name}")
