"""Reporting how far a long read has come, without threading a callback through every layer.

Readers of large inputs (dataset batches, golden-set replay) call `begin` when a pass over
their rows starts and `advance` after each batch. Nothing is reported unless a caller installed
an observer with `observed(...)`; the CLI does that only when stdout is a terminal, so library
use, pipes and CI logs see no difference.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

__all__ = ["ReadObserver", "advance", "begin", "observed", "watching"]


class ReadObserver(Protocol):
    """Told when a pass over some rows starts (with their total when known) and how it goes."""

    def begin(self, label: str, total_rows: int | None) -> None: ...

    def advance(self, rows: int) -> None: ...


_current: ContextVar[ReadObserver | None] = ContextVar("modelwatch_read_observer", default=None)


@contextmanager
def observed(observer: ReadObserver) -> Iterator[None]:
    """Report reads made inside the block to `observer`."""
    token = _current.set(observer)
    try:
        yield
    finally:
        _current.reset(token)


def watching() -> bool:
    """True when an observer is installed (so a reader may spend time estimating a total)."""
    return _current.get() is not None


def begin(label: str, total_rows: int | None) -> None:
    """A pass over `total_rows` rows (None: unknown) of `label` starts."""
    observer = _current.get()
    if observer is not None:
        observer.begin(label, total_rows)


def advance(rows: int) -> None:
    """`rows` more rows of the current pass are done."""
    observer = _current.get()
    if observer is not None:
        observer.advance(rows)
