"""Items of a job that each run on their own interval, once per interval across replicas.

A job that holds several items with their own schedules (canary pairs, skew checks) ticks at
the shortest interval; each item is claimed per (item, its own interval window) in `job_runs`
under the job's claims name, so two replicas never run the same item at once and a replica
that died mid-run is taken over after the lease.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from sqlalchemy.engine import Engine

from monitor.app.daemon._leases import Claim, claim
from monitor.summaries import window_of


def claim_due(
    engine: Engine,
    claims: str,
    item: str,
    interval_s: float,
    holder: str,
    lease_s: float,
    now: datetime,
) -> Claim | None:
    """This replica's claim of `item` for the interval window `now` falls in; None when it
    ran (or runs) elsewhere in that window."""
    start = window_of(now, interval_s)
    digest = hashlib.sha256(item.encode()).hexdigest()[:16]  # bounded, whatever the item
    return claim(engine, claims, f"{digest} {start.isoformat()}", holder, lease_s, now)
