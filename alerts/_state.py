"""The alert state machine: pending -> firing -> resolved, as a pure function of time.

- An active condition starts an alert `pending`; after `for` it becomes `firing` (at once when
  `for` is 0).
- A pending alert whose condition clears is dropped without a notification (Prometheus's rule).
- A firing alert whose condition clears stays firing for `keep_firing_for`, then is `resolved`.
- A resolved alert whose condition returns starts over as pending, with a new start time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

StateName = Literal["pending", "firing", "resolved"]


@dataclass(frozen=True)
class StoredState:
    """What the table holds for one fingerprint before this evaluation."""

    state: StateName
    active_since: datetime
    last_active_at: datetime


@dataclass(frozen=True)
class Step:
    """The outcome of one evaluation for one fingerprint; state None: no row (dropped)."""

    state: StateName | None
    active_since: datetime | None
    last_active_at: datetime | None
    became_firing: bool = False
    became_resolved: bool = False


def step(
    prev: StoredState | None,
    active: bool,
    now: datetime,
    for_: timedelta,
    keep_firing_for: timedelta = timedelta(0),
) -> Step:
    """Advance one fingerprint's state to `now` given whether its condition holds."""
    if active:
        return _step_active(prev, now, for_)
    if prev is None or prev.state == "pending":
        return Step(None, None, None)
    if prev.state == "firing" and now - prev.last_active_at < keep_firing_for:
        return Step("firing", prev.active_since, prev.last_active_at)
    resolved_now = prev.state == "firing"
    return Step("resolved", prev.active_since, prev.last_active_at, became_resolved=resolved_now)


def _step_active(prev: StoredState | None, now: datetime, for_: timedelta) -> Step:
    if prev is None or prev.state == "resolved":
        since = now
    else:
        since = prev.active_since
    if prev is not None and prev.state == "firing":
        return Step("firing", since, now)
    if now - since >= for_:
        return Step("firing", since, now, became_firing=True)
    return Step("pending", since, now)
