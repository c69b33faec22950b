"""Options and helpers shared by CLI commands."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from sqlalchemy.engine import Engine

from monitor.config import DEFAULT_DATABASE_URL, Config, load_config
from monitor.daemon.names import registry_names
from monitor.storage import make_engine

F = TypeVar("F", bound=Callable[..., Any])


def database_options(func: F) -> F:
    """Add `--database-url` and `--config` to a command."""
    func = click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Config file to read database_url from.",
    )(func)
    return click.option(
        "--database-url",
        default=None,
        metavar="URL",
        help="SQLAlchemy URL (sqlite:///FILE or postgresql://...). "
        "Default: $MODELWATCH_DATABASE_URL, then the config's database_url, "
        f"then {DEFAULT_DATABASE_URL}.",
    )(func)


def resolve_database_url(database_url: str | None, config_path: Path | None) -> str:
    """Flag, then environment, then config file, then the embedded SQLite default."""
    if database_url:
        return database_url
    env = os.environ.get("MODELWATCH_DATABASE_URL")
    if env:
        return env
    if config_path is not None:
        return load_checked_config(config_path).database_url
    return DEFAULT_DATABASE_URL


def load_checked_config(path: Path) -> Config:
    """Load a config file with every registry name checked (what every command reads)."""
    return load_config(path, names=registry_names())


def engine_from_options(database_url: str | None, config_path: Path | None) -> Engine:
    """The engine the user asked for."""
    return make_engine(resolve_database_url(database_url, config_path))
