"""`--json/--html/--markdown PATH`: the one definition of the report flags commands share.

Each flag takes a file path or `-` for stdout and arrives as `json_path`, `html_path` or
`markdown_path` (a Path, or None when not given). When a report goes to stdout, a command's own
summary goes to stderr (`on_stdout`), so the report can be piped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import click

from monitor.reports import is_stdout

F = TypeVar("F", bound=Callable[..., Any])
Format = Literal["json", "html", "markdown"]

_AS = {"json": "JSON", "html": "offline HTML", "markdown": "Markdown"}


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


def on_stdout(*paths: Path | None) -> bool:
    """True when any report goes to stdout (the command's summary then goes to stderr)."""
    return any(is_stdout(p) for p in paths)
