"""`modelwatch db`: schema migrations."""

from __future__ import annotations

from pathlib import Path

import click

from monitor.app.cli._options import database_options


@click.group()
def db() -> None:
    """Create or inspect the database schema."""


@db.command("upgrade")
@database_options
@click.option("--revision", default="head", show_default=True, help="Target revision.")
def upgrade_cmd(database_url: str | None, config_path: Path | None, revision: str) -> None:
    """Apply migrations (an empty database is created to head)."""
    from migrations import schema_state, upgrade
    from monitor.app.cli._common import engine_from_options

    engine = engine_from_options(database_url, config_path)
    before = schema_state(engine)
    after = upgrade(engine, revision)
    if before.current == after.current:
        click.echo(f"already at {after.current}{' (head)' if after.at_head else ''}")
    else:
        click.echo(
            f"upgraded {before.current or 'empty database'} -> {after.current}"
            f"{' (head)' if after.at_head else ''}"
        )


@db.command("current")
@database_options
def current_cmd(database_url: str | None, config_path: Path | None) -> None:
    """Print the schema revision and whether it is at head."""
    from migrations import schema_state
    from monitor.app.cli._common import engine_from_options

    state = schema_state(engine_from_options(database_url, config_path))
    if state.at_head:
        click.echo(f"{state.current} (head)")
    else:
        click.echo(f"{state.current or 'none'} (not at head; head is {state.head})")
