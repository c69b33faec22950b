"""A spawned worker lowers its priority before its call (and its imports) run."""

from __future__ import annotations

import multiprocessing
import os
from typing import Any

from monitor.common.lowpriority import pack, run_niced


def _report(tag: str, send: Any) -> None:
    policy = os.sched_getscheduler(0) if hasattr(os, "sched_getscheduler") else None
    send.send((tag, os.nice(0), policy))


def test_the_call_runs_at_the_lower_priority_with_the_passed_objects() -> None:
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=run_niced, args=(3, True, pack(_report, "hello"), send))
    process.start()
    assert receive.poll(60)
    tag, nice, policy = receive.recv()
    process.join(10)
    assert (tag, process.exitcode) == ("hello", 0)
    assert nice == min(os.nice(0) + 3, 19)
    if hasattr(os, "SCHED_IDLE"):
        assert policy == os.SCHED_IDLE
