"""Where a report goes: a file, or stdout when the path is `-` (for every --json and --html)."""

from __future__ import annotations

import sys
from pathlib import Path

from monitor.errors import InputError

STDOUT = "-"


def is_stdout(path: str | Path | None) -> bool:
    """True when the user asked for stdout (`-`)."""
    return path is not None and str(path) == STDOUT


def write_text(path: str | Path, text: str) -> None:
    """Write `text` to `path` (stdout for `-`); InputError naming the path if it cannot."""
    if is_stdout(path):
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        return
    p = Path(path)
    try:
        p.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{p}: cannot write: {exc.strerror}") from None
