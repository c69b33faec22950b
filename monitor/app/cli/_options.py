"""The flags several commands share, declared without loading what the commands run.

Every command module imports its options from here and the rest of what it uses inside the
command function, so `modelwatch COMMAND --help` loads click and nothing heavy
(tests/monitor/app/cli/test_cli_imports.py checks `sys.modules` after each help page).

`output_options` adds `--json/--html/--markdown PATH`: each takes a file path or `-` for stdout
and arrives as `json_path`, `html_path` or `markdown_path` (a Path, or None when not given).
When a report goes to stdout, a command's own summary goes to stderr (`_output.on_stdout`), so
the report can be piped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import click

from monitor.common.defaults import DEFAULT_DATABASE_URL

F = TypeVar("F", bound=Callable[..., Any])
Format = Literal["json", "html", "markdown"]

_AS = {"json": "JSON", "html": "offline HTML", "markdown": "Markdown"}


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


def baseline_options(func: F) -> F:
    """Add --baseline, --model, --version and the database options to a command."""
    func = database_options(func)
    func = click.option(
        "--version", "model_version", metavar="V", help="Baseline's model version (default: "
        "the newest version with a baseline of that name).",
    )(func)  # fmt: skip
    func = click.option("--model", metavar="M", help="Model the --baseline belongs to.")(func)
    return click.option(
        "--baseline",
        "baseline_name",
        metavar="NAME",
        help="Compare CURRENT with this stored baseline (needs --model) instead of a REFERENCE.",
    )(func)


def role_options(func: F) -> F:
    """Add --exclude, --id-column, --target, --prediction and --timestamp to a command."""
    options = [
        click.option("--timestamp", "timestamp_column", metavar="COL", help="Timestamp column "
                     "(not compared)."),
        click.option("--prediction", "prediction_column", metavar="COL",
                     help="Model prediction column (compared: prediction drift)."),
        click.option("--target", "target_column", metavar="COL",
                     help="Label column (compared: target drift)."),
        click.option("--id-column", "id_column", metavar="COL", help="Row id column (not "
                     "compared)."),
        click.option("--exclude", multiple=True, metavar="C,...", help="Columns not to compare "
                     "(repeatable)."),
    ]  # fmt: skip
    for option in options:
        func = option(func)
    return func


def output_options(*formats: Format, what: str = "the report") -> Callable[[F], F]:
    """Add `--<format> PATH` for each of `formats` (in that order in --help), writing `what`."""

    def decorate(func: F) -> F:
        for fmt in reversed(formats):
            func = click.option(
                f"--{fmt}",
                f"{fmt}_path",
                type=click.Path(dir_okay=False, path_type=Path),
                metavar="PATH",
                help=f"Write {what} as {_AS[fmt]} here (- for stdout).",
            )(func)
        return func

    return decorate
