"""`modelwatch config`: validation of config files."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from monitor.errors import ConfigError


@click.group()
def config() -> None:
    """Validate configuration files."""


@config.command("check")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def check(file: Path) -> None:
    """Validate FILE; exit 2 listing every problem, one per line, with a did-you-mean."""
    from monitor.app.cli._common import load_checked_config

    try:
        cfg = load_checked_config(file)
    except ConfigError as exc:
        for line in exc.problems:
            click.echo(f"modelwatch: error: {line}", err=True)
        sys.exit(exc.exit_code)
    click.echo(
        f"{file}: ok ({len(cfg.models)} model(s), {len(cfg.sources)} source(s), "
        f"database {cfg.database_url.split('://')[0]})"
    )
