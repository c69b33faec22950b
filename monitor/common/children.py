"""What every spawned worker process of ours does first: end with its parent, and say its name.

The daemon's workers (the intake drain, the pipelined ingest, the evaluation units, a guard
replay) are spawned children. A child whose parent was killed (kill -9, the OOM killer) would
otherwise linger, holding database connections and heartbeats, and go on committing work
nobody is told of; so on Linux the kernel kills it with its parent (`PR_SET_PDEATHSIG`: at
once, even while it waits on a lock or holds the GIL in a long call), and everywhere it polls
its parent's pid and exits once it has been re-parented. Linux names each in `ps` and `top`.

The kernel's signal comes when the *thread* that spawned the child ends, not only the process:
each of our workers is spawned by a thread that outlives it (a supervisor's target waits for
its worker; a pool's submitting loop closes its pool before it ends).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import signal
import threading
import time

# How often a child looks whether its parent is still there.
POLL_S = 0.2
_PR_SET_NAME = 15  # prctl(2)
_PR_SET_PDEATHSIG = 1


def exit_with_parent(parent: int, poll_s: float = POLL_S) -> None:
    """Return never: exit this process (status 1) once `parent` is no longer its parent."""
    while os.getppid() == parent:
        time.sleep(poll_s)
    os._exit(1)


def watch_parent(parent: int, poll_s: float = POLL_S) -> None:
    """Die with `parent`: SIGKILL from the kernel when it ends (Linux), and `exit_with_parent`
    on a daemon thread of its own (everywhere; it also catches a parent gone before this)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    threading.Thread(
        target=exit_with_parent, args=(parent, poll_s), name="parent-watch", daemon=True
    ).start()


def name_process(name: str) -> None:
    """Name this process in `ps`/`top` (Linux's prctl, 15 bytes at most; elsewhere nothing)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def become_worker(parent: int, name: str) -> None:
    """A worker its parent alone stops (through a flag of its own): ignore SIGTERM and SIGINT,
    which a service manager or a terminal sends to the whole process group at once; die with
    `parent` (`watch_parent`); call itself `name`."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    watch_parent(parent)
    name_process(name)


def tune_gc(threshold: int) -> None:
    """Collect less often (CPython's gen-0 default is 700 allocations), and never walk what
    start-up made (modules, config): it lives as long as the worker."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(threshold, *gc.get_threshold()[1:])
