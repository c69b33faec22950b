"""Migrations on SQLite and PostgreSQL: base -> head -> base -> head, and ORM parity."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from migrations import downgrade, head_revision, schema_state, upgrade
from monitor.storage import Base, include_name, make_engine


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
            MigrationContext.configure(
                conn, opts={"compare_type": True, "include_name": include_name}
            ),
            Base.metadata,
        )
    assert diff == [], f"ORM models and migrations disagree: {diff}"
    engine.dispose()


def test_slice_keys_are_rewritten_to_the_one_format(database_url: str) -> None:
    from datetime import UTC, datetime

    from sqlalchemy import text

    engine = make_engine(database_url)
    upgrade(engine, "0008_thresholds")
    start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 1, tzinfo=UTC)
    old = ['{"tier":"3.0"}', '{"is_new":"True"}', '{"region":"__other__"}', '{"region":"eu"}']
    with engine.begin() as conn:
        for key in [*old, '{"tier":"3"}']:  # "3" exists already: "3.0" must not collide with it
            conn.execute(
                text(
                    "INSERT INTO window_counts (model, version, window_start, slice_key, "
                    "window_end, events, updated_at) VALUES ('m', '1', :s, :k, :e, 1, :s)"
                ),
                {"s": start, "e": end, "k": key},
            )
        conn.execute(
            text(
                "INSERT INTO drift_results (model, version, window_start, window_end, slice_key,"
                ' "column", method, threshold, n_reference, n_current, status, computed_at) VALUES '
                "('m', '1', :s, :e, :k, 'x', 'psi', 0.1, 1, 1, 'ok', :s)"
            ),
            {"s": start, "e": end, "k": '{"is_new":"False"}'},
        )
    upgrade(engine)
    with engine.connect() as conn:
        counts = sorted(conn.execute(text("SELECT slice_key FROM window_counts")).scalars())
        drift = conn.execute(text("SELECT slice_key FROM drift_results")).scalar_one()
    assert counts == sorted(
        ['{"tier":"3.0"}', '{"is_new":"true"}', '{"region":"(other)"}', '{"region":"eu"}']
        + ['{"tier":"3"}']
    )
    assert drift == '{"is_new":"false"}'
    engine.dispose()
