"""The evaluation after a window ends waits for the HTTP intake to be aggregated past its end.

Events acknowledged by `POST /v1/events` wait in the intake log until the drain aggregates them
(up to `collect.drain_max_delay` at thin traffic, longer under load). A tick that evaluated a
window just after it ended would miss its last events: they re-mark it, and its final result
comes a whole interval later (in bench/fleet.py most windows were evaluated twice and the lag
doubled). So when a window ended since the previous tick, the tick first waits, at most half
its interval, until no request received before the tick began is pending (not just before the
window's end: clients queue and batch, so a window's last events arrive a little after it);
past the bound it goes on (the late events re-mark their windows as before). One indexed
lookup per poll.

With the shared queue the tick does not block on the intake: it defers the units due at once
and follows the intake while it waits for them (`IntakeFollow`, asked at each of the queue's
polls), deferring the models whose windows the drain has just written as soon as it has. A drain
batch that outlasts the blocking bound (a whole window of a 1,000-model fleet, on two cores
shared with the database and the evaluation) no longer pushes its windows to the next tick.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from sqlalchemy.engine import Engine

from monitor.storage import oldest_pending

log = logging.getLogger(__name__)
POLL_S = 0.1


def await_intake(engine: Engine, boundary: datetime, timeout_s: float) -> bool:
    """Wait until no request received before `boundary` is pending, at most `timeout_s`;
    whether it got there."""
    deadline = time.monotonic() + timeout_s
    while True:
        oldest = oldest_pending(engine)
        if oldest is None or oldest >= boundary:
            return True
        if time.monotonic() >= deadline:
            log.info("intake not aggregated up to %s after %.1f s", boundary.isoformat(), timeout_s)
            return False
        time.sleep(POLL_S)


class IntakeFollow:
    """A tick's wait for the intake to pass `boundary`, asked at each poll (`passed`) instead
    of waited for in one call; at most `timeout_s`."""

    def __init__(
        self,
        engine: Engine,
        boundary: datetime,
        timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = engine
        self.boundary = boundary
        self.timeout_s = timeout_s
        self.clock = clock
        self.deadline = clock() + timeout_s

    def passed(self) -> bool | None:
        """True once nothing received before the boundary is pending, False while it is and
        the bound has not passed, None past the bound (logged)."""
        oldest = oldest_pending(self.engine)
        if oldest is None or oldest >= self.boundary:
            return True
        if self.clock() < self.deadline:
            return False
        log.info(
            "intake not aggregated up to %s after %.1f s", self.boundary.isoformat(), self.timeout_s
        )
        return None
