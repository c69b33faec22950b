"""`modelwatch config`: validation of config files."""

from __future__ import annotations

from pathlib import Path

import click

from monitor.cli.common import load_checked_config


@click.group()
def config() -> None:
    """Validate configuration files."""


@config.command("check")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def check(file: Path) -> None:
    """Validate FILE; exit 2 naming the first bad key."""
    cfg = load_checked_config(file)
    click.echo(
        f"{file}: ok ({len(cfg.models)} model(s), {len(cfg.sources)} source(s), "
        f"database {cfg.database_url.split('://')[0]})"
    )
