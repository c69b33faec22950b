"""Plain-text tables for list commands: a header, aligned columns, '-' for nothing.

Every list command also has `--json`; the table is for people and reads the same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import click


def cell(value: Any) -> str:
    """None as '-', mappings as k=v,..., sequences comma-joined, datetimes to the second (UTC)."""
    if value is None or value == "" or value == {} or value == []:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, Mapping):
        return ",".join(f"{k}={cell(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ",".join(cell(v) for v in value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def echo_table(header: Sequence[str], rows: Sequence[Sequence[Any]], empty: str) -> None:
    """Print `rows` under `header`, columns padded to their widest cell; `empty` if none."""
    if not rows:
        click.echo(empty)
        return
    text = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in text)) for i, h in enumerate(header)]
    for line in [list(header), *text]:
        click.echo("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
