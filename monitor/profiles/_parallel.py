"""Per-column work on a few threads: numpy's binning kernels and quantiles release the GIL."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
MAX_THREADS = 4


def map_columns(fn: Callable[[str], T], columns: Sequence[str]) -> list[T]:
    """`[fn(c) for c in columns]`, on up to MAX_THREADS threads."""
    if len(columns) < 2:
        return [fn(c) for c in columns]
    with ThreadPoolExecutor(max_workers=min(MAX_THREADS, os.cpu_count() or 1)) as pool:
        return list(pool.map(fn, columns))
