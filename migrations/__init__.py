"""Alembic environment and revisions; the only way modelwatch's schema changes.

Callers (the CLI, the daemon, the demo, tests) migrate and check the schema through the functions
exported here; `monitor.storage` holds the ORM models and never imports this package.
"""

from __future__ import annotations

from migrations._schema import (
    SchemaState,
    downgrade,
    head_revision,
    prepare_for_writes,
    require_head,
    schema_state,
    upgrade,
)

__all__ = [
    "SchemaState",
    "downgrade",
    "head_revision",
    "prepare_for_writes",
    "require_head",
    "schema_state",
    "upgrade",
]
