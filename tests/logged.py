"""The one log-capturing helper for records that cross processes: a plain handler (no
redacting filter, so what it shows is what arrived) on the root logger, at a chosen level."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class Lines(logging.Handler):
    """Every record handed to it, and its line (`FORMAT`: process, level, logger, message)."""

    FORMAT = "%(processName)s %(levelname)s %(name)s: %(message)s"

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter(self.FORMAT))
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.lines.append(self.format(record))

    def text(self) -> str:
        return "\n".join(self.lines)


@contextmanager
def root_lines(level: int = logging.INFO) -> Iterator[Lines]:
    """A `Lines` on the root logger, the root at `level`; both undone at the end."""
    root = logging.getLogger()
    handler, before = Lines(), root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(before)
