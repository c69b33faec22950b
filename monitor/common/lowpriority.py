"""The entry point of a spawned worker that lowers its CPU priority before anything heavy runs.

A spawned process unpickles its target and arguments before calling it, importing their
modules; for a worker of a big package that is most of its start-up CPU. This module imports
only the standard library: the worker lowers its priority first, then unpickles its call.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Callable
from typing import Any


def pack(func: Callable[..., object], *args: Any) -> bytes:
    """A call as `run_niced` takes it (the function by reference, its arguments pickled)."""
    return pickle.dumps((func, args))


def run_niced(increment: int, idle: bool, payload: bytes, *passed: Any) -> None:
    """Lower this process's priority by `increment` (Unix nice) and with `idle` to Linux's
    SCHED_IDLE, then make the packed call with `passed` (objects multiprocessing itself must
    carry, such as a Connection) appended.

    Nice alone still lets a CPU-bound worker delay a latency-sensitive process by a few
    milliseconds at each of its wake-ups; a waking normal task always preempts a SCHED_IDLE one.
    """
    with contextlib.suppress(OSError):
        os.nice(increment)
    if idle and hasattr(os, "sched_setscheduler"):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    func, args = pickle.loads(payload)
    func(*args, *passed)
