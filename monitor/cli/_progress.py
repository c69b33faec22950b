"""A progress line (rich spinner with the current step) for commands that can take a while.

Shown on stderr only when stdout is a terminal: in CI, in pipes and under redirection the
output stays exactly what the command prints.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console

Step = Callable[[str], None]


def enabled() -> bool:
    """True when stdout is an interactive terminal."""
    return sys.stdout.isatty()


@contextmanager
def progress(first: str) -> Iterator[Step]:
    """Show `first` with a spinner; the yielded function replaces the step's text."""
    if not enabled():
        yield lambda _text: None
        return

    with Console(stderr=True).status(first) as status:
        yield lambda text: status.update(text)
