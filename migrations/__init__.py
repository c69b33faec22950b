"""Alembic environment and revisions; the only way modelwatch's schema changes.

Callers (the CLI, the daemon, the demo, tests) migrate and check the schema through the functions
exported here; `monitor.storage` holds the ORM models and never imports this package.

The revisions in `versions/` form one chain, and the first seven files' numbers are not their
order (ids stay as they are: existing databases record them). From base to head:

    0001_foundation -> 0007_daemon -> 0005_alerts -> 0003_guards -> 0002_monitor
    -> 0004_collectors -> 0006_dashboard_views -> 0008_thresholds -> 0009_slice_keys

and from 0008 on, each revision follows the one numbered just below it, up to the head. Each
revision's docstring says `Revises: <parent>`, matching its `down_revision`;
tests/migrations/test_chain.py walks the chain and fails on a mismatch, a branch or a second head.
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
