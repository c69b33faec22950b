"""Where a command's summary goes when its report goes to stdout (the flags: `_options`)."""

from __future__ import annotations

from pathlib import Path

from monitor.reports import is_stdout


def on_stdout(*paths: Path | None) -> bool:
    """True when any report goes to stdout (the command's summary then goes to stderr)."""
    return any(is_stdout(p) for p in paths)
