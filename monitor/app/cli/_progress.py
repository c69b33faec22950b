"""Progress display (rich) for commands that can take a while.

A bar with the rows done, the total where it is known (Parquet metadata, CSV line counts,
golden-set rows), the rate and the time left; a pulsing bar when the total is unknown. Each
pass over an input (a sketch pass, then a profiling pass) gets its own bar. The step text says
what is being done. Shown on stderr only when stdout is a terminal: in CI, in pipes and under
redirection the output stays exactly what the command prints.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from monitor.common import progress as reading

Step = Callable[[str], None]


def enabled() -> bool:
    """True when stdout is an interactive terminal."""
    return sys.stdout.isatty()


class _Bars:
    """A rich Progress whose one task is reset for each pass an input reader reports."""

    def __init__(self, bars: Any, first: str) -> None:
        self._bars = bars
        self._step = first
        self._passes = 0
        self._task = bars.add_task(first, total=None)

    def step(self, text: str) -> None:
        self._step = text
        self._bars.update(self._task, description=text)

    def begin(self, label: str, total_rows: int | None) -> None:
        self._passes += 1
        where = self._step if label in self._step else f"{self._step}: {label}"
        where += f" (pass {self._passes})" if self._passes > 1 else ""
        self._bars.reset(self._task, total=total_rows, description=where)

    def advance(self, rows: int) -> None:
        self._bars.advance(self._task, rows)


@contextmanager
def progress(first: str) -> Iterator[Step]:
    """Show `first` with a progress bar; the yielded function replaces the step's text."""
    if not enabled():
        yield lambda _text: None
        return
    # rich loads only when there is a terminal to draw on (never in CI, pipes or tests).
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = (
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
        TaskProgressColumn(), MofNCompleteColumn(), TextColumn("rows"), TimeRemainingColumn(),
    )  # fmt: skip
    with Progress(*columns, console=Console(stderr=True), transient=True) as bars:
        shown = _Bars(bars, first)
        with reading.observed(shown):
            yield shown.step
