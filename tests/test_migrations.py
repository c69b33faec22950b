"""Migrations on SQLite and PostgreSQL: base -> head -> base -> head, and ORM parity."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from monitor.storage import Base, downgrade, head_revision, make_engine, schema_state, upgrade


def test_round_trip_base_head_base_head(database_url: str) -> None:
    engine = make_engine(database_url)
    assert schema_state(engine).current is None
    assert upgrade(engine).at_head
    tables = set(inspect(engine).get_table_names())
    assert {"models", "model_versions", "model_aliases", "baselines"} <= tables
    state = downgrade(engine, "base")
    assert state.current is None
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    assert upgrade(engine).current == head_revision(engine)
    engine.dispose()


def test_orm_models_match_migrated_schema(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine)
    with engine.connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata
        )
    assert diff == [], f"ORM models and migrations disagree: {diff}"
    engine.dispose()
