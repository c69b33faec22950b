"""Alembic environment: runs migrations on the engine handed over by `migrations._schema`."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection, Engine

from monitor.storage import Base, include_name, make_engine

target_metadata = Base.metadata


def _configure_and_run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER constraints; batch mode recreates tables instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        # Time partitions of the large tables (PostgreSQL) are not tables of the models.
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine: Engine | None = context.config.attributes.get("engine")
    if engine is None:
        url = context.config.get_main_option("sqlalchemy.url") or "sqlite:///modelwatch.db"
        engine = make_engine(url)
    with engine.connect() as connection:
        _configure_and_run(connection)
        connection.commit()


if context.is_offline_mode():
    raise SystemExit(
        "offline (SQL script) migrations are not supported; run `modelwatch db upgrade`"
    )
run_migrations_online()
