"""Helpers shared by CLI commands: the database and config they were told to use."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from monitor.app.daemon.names import registry_names
from monitor.config import DEFAULT_DATABASE_URL, Config, load_config

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


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
    """The engine the user asked for (SQLAlchemy loads here: `config check` reads no database)."""
    from monitor.storage import make_engine

    return make_engine(resolve_database_url(database_url, config_path))
